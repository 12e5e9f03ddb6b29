"""Slow: re-run every client flow against the recording fake broker; the versions seen must match versions.py.

Fails when a client upgrade starts sending a version outside `CLIENT_VERSIONS` (widen the range and the handler),
or when a range's ends are no longer used by anyone (narrow it). See impl/server/CLIENT_VERSIONS.md.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from kio.schema.index import api_key_map
from record_client_versions import CLIENTS, run_all

from kcoord.impl.server.codec import kio_version_range
from kcoord.impl.server.versions import CLIENT_VERSIONS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.wire,
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]

# Seen from the clients' source rather than a recorded flow (see CLIENT_VERSIONS.md).
FROM_SOURCE = {(12, 1)}  # aiokafka Heartbeat v1


def test_advertised_ranges_are_inside_kio() -> None:
    for api_key, versions in CLIENT_VERSIONS.items():
        kio_range = kio_version_range(api_key)
        assert kio_range is not None and kio_range[0] <= versions.min_version <= versions.max_version <= kio_range[1]


def test_clients_send_exactly_the_recorded_versions() -> None:
    rows = run_all(list(CLIENTS), corpus=[])
    # A flow that stopped early sent fewer APIs; say so instead of failing below on a narrower version range.
    failed = [f"{row['client']} / {row['flow']}: {row['error']}" for row in rows if row["error"]]
    assert not failed, "client flows failed against the fake broker:\n" + "\n".join(failed)
    seen: dict[int, set[int]] = defaultdict(set)
    name_to_key = {name: key for key, name in api_key_map.items()}
    for row in rows:
        for name, versions in row["apis"].items():  # type: ignore[attr-defined]
            if name != "get_telemetry_subscriptions":  # sent only because the fake advertises it
                seen[name_to_key[name]].update(versions)
    for api_key, version in FROM_SOURCE:
        seen[api_key].add(version)
    seen[18].update({0, 3, 4})  # ApiVersions is built in and not recorded by the fake's handlers
    assert set(seen) == set(CLIENT_VERSIONS)
    for api_key, versions in seen.items():
        assert (min(versions), max(versions)) == (CLIENT_VERSIONS[api_key].min_version,
                                                  CLIENT_VERSIONS[api_key].max_version), api_key_map[api_key]
