"""The built-in ApiVersions answer (api key 18), including KIP-511's v0 fallback.

Owns: `VersionRange`, `Feature`, building the ApiVersions response of every version kio has (v0..v4) from the
advertised ranges and features, the UNSUPPORTED_VERSION v0 fallback body, and the v3+ client-software check.
Must not import: `kcoord.model`, the dispatcher, the connection layer.

The fallback: a client that opens with an ApiVersions version newer than ours gets a *v0* body (non-flexible, with
a v0 response header) carrying UNSUPPORTED_VERSION and our ranges; clients re-parse it as v0 and retry with the
highest ApiVersions version we list. Kafka lists only the ApiVersions range there; we list every advertised range,
a superset that the same clients accept.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from kio.schema.api_versions import v0, v1, v2, v3, v4
from kio.schema.api_versions.v0 import response as v0_response
from kio.schema.api_versions.v1 import response as v1_response
from kio.schema.api_versions.v2 import response as v2_response
from kio.schema.api_versions.v3 import response as v3_response
from kio.schema.api_versions.v4 import response as v4_response
from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i32Timedelta, i64
from kio.static.protocol import RequestPayload

__all__ = (
    "API_VERSIONS_KEY",
    "API_VERSIONS_RANGE",
    "ApiVersionsResponse",
    "Feature",
    "VersionRange",
    "api_versions_response",
    "is_valid_client_software",
    "unsupported_version_fallback",
)

API_VERSIONS_KEY: Final = int(v0.ApiVersionsRequest.__api_key__)
_FIRST_FLEXIBLE: Final = 3
# Kafka's ApiVersionsRequest.isValid: software name and version must match this (KIP-511).
_SOFTWARE_PATTERN: Final = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
_NO_THROTTLE: Final = i32Timedelta.parse(datetime.timedelta(0))

ApiVersionsResponse = (
    v0.ApiVersionsResponse
    | v1.ApiVersionsResponse
    | v2.ApiVersionsResponse
    | v3.ApiVersionsResponse
    | v4.ApiVersionsResponse
)


@dataclass(frozen=True, slots=True, order=True)
class VersionRange:
    """An inclusive range of API versions."""

    min_version: int
    max_version: int

    def __post_init__(self) -> None:
        if not 0 <= self.min_version <= self.max_version:
            raise ValueError(f"bad version range {self.min_version}..{self.max_version}: need 0 <= min <= max")

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.min_version <= version <= self.max_version


API_VERSIONS_RANGE: Final = VersionRange(0, 4)  # every version kio 0.6.5 has


@dataclass(frozen=True, slots=True)
class Feature:
    """A feature flag advertised in ApiVersions v3+ (e.g. `transaction.version`, `group.version`)."""

    name: str
    min_version: int
    max_version: int
    finalized_level: int | None = None  # None or 0: supported but not finalized (Kafka lists no level 0)

    @property
    def finalized(self) -> bool:
        return bool(self.finalized_level)


Advertised = Sequence[tuple[int, VersionRange]]


def _v0_body(error_code: ErrorCode, advertised: Advertised) -> v0.ApiVersionsResponse:
    keys = tuple(v0_response.ApiVersion(api_key=i16(k), min_version=i16(r.min_version), max_version=i16(r.max_version))
                 for k, r in advertised)
    return v0.ApiVersionsResponse(error_code=error_code, api_keys=keys)


def _v1_body(error_code: ErrorCode, advertised: Advertised) -> v1.ApiVersionsResponse:
    keys = tuple(v1_response.ApiVersion(api_key=i16(k), min_version=i16(r.min_version), max_version=i16(r.max_version))
                 for k, r in advertised)
    return v1.ApiVersionsResponse(error_code=error_code, api_keys=keys, throttle_time=_NO_THROTTLE)


def _v2_body(error_code: ErrorCode, advertised: Advertised) -> v2.ApiVersionsResponse:
    keys = tuple(v2_response.ApiVersion(api_key=i16(k), min_version=i16(r.min_version), max_version=i16(r.max_version))
                 for k, r in advertised)
    return v2.ApiVersionsResponse(error_code=error_code, api_keys=keys, throttle_time=_NO_THROTTLE)


def _v3_body(error_code: ErrorCode, advertised: Advertised, features: Sequence[Feature],
             features_epoch: int) -> v3.ApiVersionsResponse:
    m = v3_response
    keys = tuple(m.ApiVersion(api_key=i16(k), min_version=i16(r.min_version), max_version=i16(r.max_version))
                 for k, r in advertised)
    # KAFKA-17492: clients older than ApiVersions v4 cannot read a supported feature whose minimum is 0; Kafka leaves
    # those out of a v3 answer (the finalized ones stay)
    supported = tuple(m.SupportedFeatureKey(name=f.name, min_version=i16(f.min_version),
                                            max_version=i16(f.max_version)) for f in features if f.min_version != 0)
    finalized = tuple(m.FinalizedFeatureKey(name=f.name, min_version_level=i16(f.finalized_level or 0),
                                            max_version_level=i16(f.finalized_level or 0))
                      for f in features if f.finalized)
    return v3.ApiVersionsResponse(
        error_code=error_code, api_keys=keys, throttle_time=_NO_THROTTLE, supported_features=supported,
        finalized_features_epoch=i64(features_epoch if finalized else -1), finalized_features=finalized,
    )


def _v4_body(error_code: ErrorCode, advertised: Advertised, features: Sequence[Feature],
             features_epoch: int) -> v4.ApiVersionsResponse:
    m = v4_response
    keys = tuple(m.ApiVersion(api_key=i16(k), min_version=i16(r.min_version), max_version=i16(r.max_version))
                 for k, r in advertised)
    supported = tuple(m.SupportedFeatureKey(name=f.name, min_version=i16(f.min_version),
                                            max_version=i16(f.max_version)) for f in features)
    finalized = tuple(m.FinalizedFeatureKey(name=f.name, min_version_level=i16(f.finalized_level or 0),
                                            max_version_level=i16(f.finalized_level or 0))
                      for f in features if f.finalized)
    return v4.ApiVersionsResponse(
        error_code=error_code, api_keys=keys, throttle_time=_NO_THROTTLE, supported_features=supported,
        finalized_features_epoch=i64(features_epoch if finalized else -1), finalized_features=finalized,
    )


def api_versions_response(
    api_version: int,
    advertised: Advertised,
    features: Sequence[Feature] = (),
    error_code: ErrorCode = ErrorCode.none,
    features_epoch: int = 0,
) -> ApiVersionsResponse:
    """The ApiVersions response at `api_version` (0..4). On an error, Kafka lists no api keys and no features.
    A finalized feature is listed with its level as both its min and max level, as Kafka's
    `createFinalizedFeatureKeys` does; `features_epoch` only grows (a client re-reads the levels only from a higher
    epoch)."""
    if error_code != ErrorCode.none:
        advertised, features = (), ()
    match api_version:
        case 0:
            return _v0_body(error_code, advertised)
        case 1:
            return _v1_body(error_code, advertised)
        case 2:
            return _v2_body(error_code, advertised)
        case 3:
            return _v3_body(error_code, advertised, features, features_epoch)
        case 4:
            return _v4_body(error_code, advertised, features, features_epoch)
    raise ValueError(f"no ApiVersions response schema for version {api_version}; expected {API_VERSIONS_RANGE}")


def unsupported_version_fallback(advertised: Advertised) -> v0.ApiVersionsResponse:
    """The v0 UNSUPPORTED_VERSION body that answers an ApiVersions request of a version we do not support."""
    return _v0_body(ErrorCode.unsupported_version, advertised)


def is_valid_client_software(request: RequestPayload) -> bool:
    """ApiVersions v3+ requires a well-formed client software name and version (else INVALID_REQUEST)."""
    if not isinstance(request, v3.ApiVersionsRequest | v4.ApiVersionsRequest):
        return True
    name_ok = _SOFTWARE_PATTERN.fullmatch(request.client_software_name) is not None
    return name_ok and _SOFTWARE_PATTERN.fullmatch(request.client_software_version) is not None
