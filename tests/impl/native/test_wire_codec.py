"""kcoord-wire (impl/native/wire), the Rust codec generated from Kafka's JSON, held byte for byte to kio.

For every API version `kcoord serve` advertises, request and response, `kio_values` draws kio entities (a fixed
seed: the same ones every run), kio encodes them, and one `wire_roundtrip` process decodes and re-encodes every
body: the bytes must come back equal, and the fields the Rust side decoded (its JSON dump) must equal kio's, so a
field read and written wrongly in the same way is caught too. The headers (request v1/v2, response v0/v1) go the same
way. Also: the generator's table is `kcoord serve`'s advertised ranges, and the committed Rust is what it writes.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import importlib
import io
import json
import os
import random
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_payload_module
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_writer
from kio.static.constants import EntityType

from kcoord.impl.native.wire import gen_codec
from kcoord.impl.server.api_versions import API_VERSIONS_RANGE
from kcoord.impl.server.apis import SERVED

from .conftest import cargo_build
from .kio_values import draw_entity

ROOT = Path(__file__).resolve().parents[3]
CRATE = ROOT / "impl" / "native" / "wire"
EXAMPLES = 20  # per message version: ~7,000 bodies in all
DUMPED = 3  # of which the first few also have their decoded fields compared
#: versions kcoord advertises that kafka-clients-4.0.2.jar's JSON does not declare (kio has them, from a later Kafka)
KAFKA_402_LACKS = frozenset({(2, 11), (66, 2)})  # ListOffsets v11, ListTransactions v2

SEED = 31  # each message version draws from random.Random(f"{SEED}:{kind}:{api_key}:{version}")


@dataclasses.dataclass(frozen=True, slots=True)
class Case:
    kind: str  # req | resp | reqhdr | resphdr
    api_key: int
    version: int
    entity: Any
    body: bytes


def entity_class(kind: str, api_key: int, version: int) -> type[Any]:
    if kind in ("reqhdr", "resphdr"):
        name = "request_header" if kind == "reqhdr" else "response_header"
        module = importlib.import_module(f"kio.schema.{name}.v{version}.header")
        return module.RequestHeader if kind == "reqhdr" else module.ResponseHeader  # type: ignore[no-any-return]
    entity = EntityType.request if kind == "req" else EntityType.response
    module = load_payload_module(api_key, version, EntityType.request if kind == "req" else EntityType.response)
    suffix = "Request" if kind == "req" else "Response"
    (cls,) = (v for k, v in vars(module).items() if k.endswith(suffix) and getattr(v, "__type__", None) == entity)
    return cls  # type: ignore[no-any-return]


def draw(kind: str, api_key: int, version: int) -> list[Any]:
    """`EXAMPLES` kio entities of the message, the same ones every run."""
    rng = random.Random(f"{SEED}:{kind}:{api_key}:{version}")
    cls = entity_class(kind, api_key, version)
    return [draw_entity(rng, cls) for _ in range(EXAMPLES)]


def covered() -> Iterator[tuple[str, int, int]]:
    for api_key, (low, high) in sorted(gen_codec.COVERED.items()):
        for version in range(low, high + 1):
            if (api_key, version) not in KAFKA_402_LACKS:
                yield from (("req", api_key, version), ("resp", api_key, version))
    yield from (("reqhdr", -1, 1), ("reqhdr", -1, 2), ("resphdr", -1, 0), ("resphdr", -1, 1))


def encode(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


@pytest.fixture(scope="session")
def roundtrip_binary() -> Path:
    return cargo_build("wire") / "wire_roundtrip"


def run_binary(binary: Path, lines: list[str]) -> list[str]:
    done = subprocess.run([str(binary)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    answers = done.stdout.split("\n")[:-1]  # not splitlines: a JSON string may hold U+2028
    assert len(answers) == len(lines), f"{len(lines)} lines sent, {len(answers)} answered; stderr: {done.stderr}"
    return answers


@pytest.fixture(scope="session")
def answered(roundtrip_binary: Path) -> dict[tuple[str, int, int], list[tuple[Case, str]]]:
    """Every case, with the binary's answer: all of a session's bodies through one process."""
    cases = [Case(kind, key, version, entity, encode(entity))
             for kind, key, version in covered() for entity in draw(kind, key, version)]
    lines = [f"{c.kind} {c.api_key} {c.version} {c.body.hex()}" for c in cases]
    out: dict[tuple[str, int, int], list[tuple[Case, str]]] = {}
    for case, answer in zip(cases, run_binary(roundtrip_binary, lines), strict=True):
        out.setdefault((case.kind, case.api_key, case.version), []).append((case, answer))
    return out


def first_difference(a: bytes, b: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def test_the_generator_covers_what_kcoord_serve_advertises() -> None:
    served = {key: (r.min_version, r.max_version) for key, r in SERVED.items()}
    served[18] = (API_VERSIONS_RANGE.min_version, API_VERSIONS_RANGE.max_version)
    assert dict(gen_codec.COVERED) == served


def test_every_covered_version_has_a_kio_schema() -> None:
    missing = [(key, v) for kind, key, v in covered() if kind in ("req", "resp")
               and v not in schema_name_map[api_key_map[key]]]
    assert missing == []


@pytest.mark.parametrize("api_key", sorted(gen_codec.COVERED))
@pytest.mark.parametrize("kind", ["req", "resp"])
def test_rust_reencodes_kio_bytes_byte_for_byte(answered: dict[Any, list[tuple[Case, str]]], kind: str,
                                                api_key: int) -> None:
    problems = []
    versions = [v for k, key, v in covered() if k == kind and key == api_key]
    assert versions, f"no version of api key {api_key} covered"
    for version in versions:
        for case, answer in answered[kind, api_key, version]:
            got = answer.split(" ", 1)[0]
            if answer.startswith("ERR ") or got != case.body.hex():
                at = first_difference(case.body, bytes.fromhex(got)) if not answer.startswith("ERR") else 0
                problems.append(f"v{version}: {answer[:200]!r} for kio's {case.body.hex()[:200]} (first difference "
                                f"at byte {at}); entity: {case.entity!r:.300}")
    assert problems == [], f"{len(problems)} bodies differ; the first:\n" + "\n".join(problems[:3])


@pytest.mark.parametrize("kind", ["reqhdr", "resphdr"])
def test_headers_reencode_byte_for_byte(answered: dict[Any, list[tuple[Case, str]]], kind: str) -> None:
    for (k, _, version), found in answered.items():
        for case, answer in found if k == kind else ():
            assert answer.split(" ", 1)[0] == case.body.hex(), f"{kind} v{version}: {answer!r} for {case.entity!r}"


def plain(entity: Any) -> dict[str, Any]:
    """A kio entity as the Rust dump writes it: wire values (milliseconds, error code numbers, hex bytes)."""
    out = {}
    for field in dataclasses.fields(entity):
        out[field.name] = plain_value(getattr(entity, field.name), field.metadata.get("kafka_type"))
    return out


def plain_value(value: Any, kafka_type: str | None) -> Any:
    if dataclasses.is_dataclass(value):
        return plain(value)
    if isinstance(value, tuple):
        return [plain_value(v, kafka_type) for v in value]
    if value is None:
        return {"uuid": "00" * 16, "datetime_i64": -1}.get(kafka_type or "")
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return value.bytes.hex()
    if isinstance(value, bytes):
        return value.hex()
    return value


def aligned(kio: Any, rust: Any, where: str) -> list[str]:
    """Where kio's plain value and the Rust dump differ; kio drops `_ms` from duration fields' names."""
    if isinstance(kio, dict) and isinstance(rust, dict):
        problems, left = [], dict(rust)
        for name, value in kio.items():
            key = name if name in left else f"{name}_ms"
            if key not in left:
                problems.append(f"{where}.{name}: in kio, not in the Rust dump ({sorted(rust)})")
                continue
            problems += aligned(value, left.pop(key), f"{where}.{name}")
        return problems + [f"{where}.{name}: in the Rust dump, not in kio" for name in sorted(left)]
    if isinstance(kio, list) and isinstance(rust, list) and len(kio) == len(rust):
        return [p for i, (a, b) in enumerate(zip(kio, rust, strict=True)) for p in aligned(a, b, f"{where}[{i}]")]
    return [] if kio == rust and type(kio) is type(rust) else [f"{where}: kio {kio!r}, Rust {rust!r}"]


@pytest.mark.parametrize("kind", ["req", "resp", "reqhdr", "resphdr"])
def test_rust_decodes_the_values_kio_encoded(answered: dict[Any, list[tuple[Case, str]]], kind: str) -> None:
    problems = []
    for (k, api_key, version), found in sorted(answered.items(), key=lambda item: item[0][1:]):
        for case, answer in found[:DUMPED] if k == kind else ():
            if answer.startswith("ERR "):
                problems.append(f"{api_key} v{version}: {answer}")
                continue
            rust = json.loads(answer.split(" ", 1)[1])
            problems += aligned(plain(case.entity), rust, f"{api_key} v{version} {type(case.entity).__name__}")
    assert problems == [], f"{len(problems)} differences; the first:\n" + "\n".join(problems[:5])


def test_unknown_tagged_fields_are_skipped(roundtrip_binary: Path) -> None:
    """A tag no version declares (99, two bytes) in HeartbeatRequest v4's top-level section: read past and dropped."""
    body = encode(draw("req", 12, 4)[0])
    assert body[-1] == 0, "expected an empty tagged-field section at the end"
    (answer,) = run_binary(roundtrip_binary, [f"req 12 4 {(body[:-1] + bytes([1, 99, 2, 0xAB, 0xCD])).hex()}"])
    assert answer.split(" ", 1)[0] == body.hex()


def test_header_versions_are_kios(roundtrip_binary: Path) -> None:
    """Request header v1/v2 and response header v0/v1 per API version as kio has them (ApiVersions answers v0)."""
    cases = [(key, version) for kind, key, version in covered() if kind == "req"]
    answers = run_binary(roundtrip_binary, [f"hdrver {key} {version} 00" for key, version in cases])
    for (key, version), answer in zip(cases, answers, strict=True):
        got = json.loads(answer.split(" ", 1)[1])
        want = {kind: int(entity_class(k, key, version).__header_schema__.__version__)
                for kind, k in (("request", "req"), ("response", "resp"))}
        assert got == want, f"api key {key} v{version}"


def test_versions_the_jar_lacks_are_refused(roundtrip_binary: Path) -> None:
    answers = run_binary(roundtrip_binary, [f"req {key} {version} 00" for key, version in sorted(KAFKA_402_LACKS)])
    assert all("is not covered" in a for a in answers), answers


def test_the_committed_rust_is_what_the_generator_writes(capsys: pytest.CaptureFixture[str]) -> None:
    jars = sorted(ROOT.glob(gen_codec.JAR_GLOB))
    if not jars:
        pytest.skip(f"no {gen_codec.JAR_GLOB} (run `make`): cannot regenerate")
    assert gen_codec.main(["--jar", str(jars[-1]), "--check"]) == 0, capsys.readouterr().err


def test_the_generator_runs_as_a_plain_module(tmp_path: Path) -> None:
    """Standard library only: `python -m impl.native.wire.gen_codec` from the repo root, without kcoord's packages."""
    jars = sorted(ROOT.glob(gen_codec.JAR_GLOB))
    if not jars:
        pytest.skip(f"no {gen_codec.JAR_GLOB} (run `make`): cannot regenerate")
    done = subprocess.run([sys.executable, "-S", "-m", "impl.native.wire.gen_codec", "--jar", str(jars[-1]),
                           "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (CRATE / "src/generated").iterdir())
