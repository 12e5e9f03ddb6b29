"""`build` drops the fields a version lacks (handlers pass the union of every version they serve) but refuses a name
that no version of the schema has: a misspelt response field would otherwise vanish without a word."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.produce.v3.response import PartitionProduceResponse as PartitionV3
from kio.schema.produce.v9.response import PartitionProduceResponse as PartitionV9

from kcoord.impl.errors import IllegalStateError
from kcoord.impl.server import kio_build
from kcoord.impl.server.kio_build import build, field_names, fields_of_any_version


def test_a_field_of_another_version_is_dropped() -> None:
    """log_start_offset exists from v5 on: at v3 it is left out, as Kafka leaves it out."""
    assert "log_start_offset" not in field_names(PartitionV3)
    assert "log_start_offset" in fields_of_any_version(PartitionV3) == fields_of_any_version(PartitionV9)
    built = build(PartitionV3, index=2, error_code=ErrorCode.none, base_offset=7, log_start_offset=3)
    assert (built.index, built.base_offset) == (2, 7)
    assert build(PartitionV9, index=2, error_code=ErrorCode.none, base_offset=7, log_start_offset=3).log_start_offset \
        == 3


def test_a_name_no_version_has_is_refused() -> None:
    with pytest.raises(IllegalStateError, match=r"PartitionProduceResponse has no field \['base_offst'\] in any "
                                                r"version"):
        build(PartitionV3, index=2, error_code=ErrorCode.none, base_offst=7)
    with pytest.raises(IllegalStateError, match="base_offst"):  # at a version with every field too
        build(PartitionV9, index=2, error_code=ErrorCode.none, base_offst=7)


def test_the_check_is_made_once_per_schema_and_set_of_dropped_names() -> None:
    check = kio_build._check_dropped
    check.cache_clear()  # type: ignore[attr-defined]
    for _ in range(3):
        build(PartitionV3, index=0, error_code=ErrorCode.none, log_start_offset=0, error_message=None)
    build(PartitionV9, index=0, error_code=ErrorCode.none, log_start_offset=0)  # nothing dropped: nothing checked
    info = check.cache_info()  # type: ignore[attr-defined]
    assert (info.misses, info.hits) == (1, 2)
