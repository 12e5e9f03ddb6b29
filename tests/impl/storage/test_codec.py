"""The generic codec and Kafka's declarations it is compiled from.

- The vendored declarations are Kafka 4.0.2's own files (compared with the jars `make` fetched).
- Every message at every version round-trips random values built from its declaration, in bound and raw form, and
  the two forms agree; cut or damaged bytes raise `SchemaError` (never another exception, never a value).
- A class that does not match its declaration is refused at bind time; a field absent from the version may only hold
  its default; a skipped (`spans`) field comes back as the bytes `field_reader` decodes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcoord.impl.storage import group_log_schema, txn_log_schema  # noqa: F401  (binds the classes)
from kcoord.impl.storage.codec import Codec, Encoded, SchemaError, shared_codec
from kcoord.impl.storage.declarations import FieldDecl, Message, load_messages

ROOT = Path(__file__).resolve().parents[3]
JARS = {"group": "kafka-group-coordinator-4.0.2.jar", "transaction": "kafka-transaction-coordinator-4.0.2.jar"}


def test_the_declarations_are_kafka_4_0_2s() -> None:
    libs = ROOT / "build" / "kafka" / "libs"
    if not libs.is_dir():
        pytest.skip("Kafka's jars are not fetched (run `make setup`)")
    for coordinator, jar in JARS.items():
        with zipfile.ZipFile(libs / jar) as z:
            theirs = {Path(n).name: z.read(n) for n in z.namelist() if n.startswith("common/message/")
                      and n.endswith(".json")}
        ours = {p.name: p.read_bytes() for p in (ROOT / "impl" / "storage" / "messages" / coordinator).glob("*.json")}
        assert ours == theirs, coordinator


def test_every_record_kafka_4_0_writes_is_declared() -> None:
    names = set(load_messages())
    assert {"TransactionLogKey", "TransactionLogValue", "OffsetCommitKey", "OffsetCommitValue", "GroupMetadataKey",
            "GroupMetadataValue", "ConsumerGroupRegularExpressionKey", "ShareGroupStatePartitionMetadataValue"} <= names
    assert len(names) == 34


# ---------------------------------------------------------------------------------------------- random values


def _scalar(f: FieldDecl, version: int) -> st.SearchStrategy[Any]:
    element = f.element
    if element == "int8":
        return st.integers(-128, 127)
    if element == "int16":
        return st.integers(-(2**15), 2**15 - 1)
    if element == "int32":
        return st.integers(-(2**31), 2**31 - 1)
    if element == "int64":
        return st.integers(-(2**63), 2**63 - 1)
    if element == "bool":
        return st.booleans()
    if element == "string":
        return st.text(max_size=8)
    if element == "bytes":
        return st.binary(max_size=8)
    if element == "uuid":
        return st.uuids()
    return _struct(f.fields, version)


def _field(f: FieldDecl, version: int) -> st.SearchStrategy[Any]:
    if not f.present(version):
        return st.just(f.default)
    if f.is_array:
        value: st.SearchStrategy[Any] = st.lists(_scalar(f, version), max_size=3).map(tuple)
    else:
        value = _scalar(f, version)
    if f.is_struct and not f.is_array and version in f.tagged:
        # Kafka's writer leaves out a tagged struct made with no field set (`new X()`), so it reads back as the
        # field's default: no round trip to test there (test_group_log_schema shows Kafka's own bytes)
        blank = tuple(g.default for g in f.fields)
        value = value.filter(lambda v: v != blank)
    return st.one_of(st.none(), value) if version in f.nullable else value


def _struct(fields: tuple[FieldDecl, ...], version: int) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.tuples(*(_field(f, version) for f in fields))


CASES = [(name, v) for name, m in sorted(load_messages().items()) for v in m.versions()]


@pytest.mark.parametrize(("name", "version"), CASES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_message_round_trips(name: str, version: int, data: st.DataObject) -> None:
    codec = shared_codec()
    message = codec.messages[name]
    value = data.draw(_struct(message.fields, version))
    encoded = codec.write(name, version, value, raw=True)
    assert codec.read(name, version, encoded, raw=True) == value
    try:
        bound = codec.read(name, version, encoded)
    except SchemaError as e:  # a bound class may refuse a value (TransactionStatus 9 is no state)
        assert "unknown TransactionStatus" in str(e)
    else:
        if not isinstance(bound, tuple):  # a class is bound: it writes the same bytes
            assert codec.write(name, version, bound) == encoded
    for cut in range(len(encoded)):  # any prefix is refused with a SchemaError
        try:
            codec.read(name, version, encoded[:cut], raw=True)
        except SchemaError:
            continue
        pytest.fail(f"{name} v{version}: {cut} of {len(encoded)} bytes decoded")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=60))
def test_garbage_is_a_schema_error_or_a_value(garbage: bytes) -> None:
    codec = shared_codec()
    for name in ("TransactionLogValue", "GroupMetadataValue", "ConsumerGroupMemberMetadataValue"):
        for version in codec.messages[name].versions():
            with contextlib.suppress(SchemaError):  # a SchemaError or a value: anything else fails the test
                codec.read(name, version, garbage)


# ---------------------------------------------------------------------------------------------- rules


def test_a_class_unlike_its_declaration_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Wrong:
        transactional_id: str
        extra: int

    codec = Codec(load_messages())
    with pytest.raises(TypeError, match=r"missing \[\], extra \['extra'\]"):
        codec.bind("TransactionLogKey", Wrong)


def test_a_field_absent_from_the_version_only_holds_its_default() -> None:
    codec = shared_codec()
    fields = (1, -1, -1, 0, 1000, 1, None, 5, 6, 2)  # ClientTransactionVersion 2 at version 0
    with pytest.raises(SchemaError, match="cannot write ClientTransactionVersion=2"):
        codec.write("TransactionLogValue", 0, fields, raw=True)
    assert codec.read("TransactionLogValue", 0, codec.write("TransactionLogValue", 0, (*fields[:9], 0), raw=True),
                      raw=True) == (*fields[:9], 0)
    # an ignorable field (OffsetCommitValue.leaderEpoch before version 3) is dropped instead
    assert codec.read("OffsetCommitValue", 2, codec.write("OffsetCommitValue", 2, (1, 7, "m", 2, -1), raw=True),
                      raw=True) == (1, -1, "m", 2, -1)


def test_a_skipped_field_comes_back_as_its_bytes() -> None:
    codec = shared_codec()
    parts = (("orders", (0, 3)), ("payments", (1,)))
    for version in (0, 1):
        whole = codec.write("TransactionLogValue", version, (7, -1, -1, 2, 1000, 1, parts, 5, 6, 0), raw=True)
        read = codec.reader("TransactionLogValue", version, raw=True, spans=frozenset({"TransactionPartitions"}))
        fields, end = read(whole, 0)
        assert end == len(whole) and isinstance(fields[6], Encoded)
        value, used = codec.field_reader("TransactionLogValue", version, "TransactionPartitions", raw=True)(
            fields[6].data, 0)
        assert value == parts and used == len(fields[6].data)
        out: list[bytes] = []
        codec.writer("TransactionLogValue", version, raw=True)((*fields[:6], fields[6], *fields[7:]), out)
        assert b"".join(out) == whole  # written back as they are


def test_uuids_strings_and_nulls() -> None:
    codec = shared_codec()
    topic = uuid.UUID(int=5)
    value = (None, "rack", "client", "host", ("a",), None, 300, None, (1000, (("range", b"\x01"),)))
    encoded = codec.write("ConsumerGroupMemberMetadataValue", 0, value, raw=True)
    assert codec.read("ConsumerGroupMemberMetadataValue", 0, encoded, raw=True) == value
    assigned = ((topic, (0, 1)),)
    encoded = codec.write("ConsumerGroupTargetAssignmentMemberValue", 0, (assigned,), raw=True)
    assert codec.read("ConsumerGroupTargetAssignmentMemberValue", 0, encoded, raw=True) == (assigned,)


def test_message_declarations_parse_versions() -> None:
    m: Message = load_messages()["OffsetCommitValue"]
    assert list(m.versions()) == [0, 1, 2, 3, 4] and 4 in m.flexible and 3 not in m.flexible
    expire = next(f for f in m.fields if f.name == "expireTimestamp")
    assert [v for v in range(5) if expire.present(v)] == [1] and expire.ignorable and expire.default == -1
