"""`null_field` (the path of the first None where the schema forbids one) against the walk it replaced, which wrote
every field's path on the way: the same answer for request bodies of every served API and version with Nones put
anywhere (allowed or not)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.static.primitive import Records

from kcoord.impl.server import CLIENT_VERSIONS
from kcoord.impl.server.nullability import _nested, null_field

st.register_type_strategy(Records, st.binary(max_size=20).map(Records))
SERVED = sorted((key, version) for key, served in CLIENT_VERSIONS.items()
                for version in range(served.min_version, served.max_version + 1))


def _reference(entity: Any, path: str = "") -> str | None:
    """The walk before: every field's path built as it is visited."""
    for f in dataclasses.fields(entity):
        nullable = "None" in str(f.type)
        value = getattr(entity, f.name)
        where = f"{path}.{f.name}" if path else f.name
        if value is None:
            if not nullable:
                return where
            continue
        if _nested(f.type) is None:
            continue
        if isinstance(value, tuple):
            for i, item in enumerate(value):
                found = _reference(item, f"{where}[{i}]") if item is not None else f"{where}[{i}]"
                if found is not None:
                    return found
        else:
            found = _reference(value, where)
            if found is not None:
                return found
    return None


def _with_nones(entity: Any, data: st.DataObject) -> Any:
    """A copy of `entity` with None in some of its fields and its nested entities' fields. A copy, never the entity
    changed in place: a nested entity may be a schema's default instance, shared by every entity built without that
    field, and nulling it in place (as this helper did, with object.__setattr__) put None into every later request of
    the worker that took the default — test_valid_requests drew a FetchRequest v15 whose replica_state.replica_epoch
    was None, in CI18 (2026-11-29), after this test had run in the same worker."""
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if data.draw(st.integers(0, 9), label=f"null {f.name}?") == 0:
            changes[f.name] = None
        elif isinstance(value, tuple):
            items = list(value)
            for i, item in enumerate(items):
                if dataclasses.is_dataclass(item):
                    items[i] = _with_nones(item, data)
                elif data.draw(st.integers(0, 19), label="null item?") == 0:
                    items[i] = None
            changes[f.name] = tuple(items)
        elif dataclasses.is_dataclass(value):
            changes[f.name] = _with_nones(value, data)
    copy = object.__new__(type(entity))  # field by field, as the helper did: no __init__ or __post_init__ runs
    for f in dataclasses.fields(entity):
        object.__setattr__(copy, f.name, changes.get(f.name, getattr(entity, f.name)))
    return copy


@pytest.mark.parametrize(("api_key", "version"), SERVED, ids=[f"api{k}v{v}" for k, v in SERVED])
@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_null_field_is_the_field_by_field_walk(api_key: int, version: int, data: st.DataObject) -> None:
    schema = load_request_schema(api_key, version)
    entity = data.draw(st.from_type(schema), label="request")
    assert null_field(entity) == _reference(entity)
    entity = _with_nones(entity, data)
    assert null_field(entity) == _reference(entity)
    assert null_field(entity, "body") == (None if _reference(entity) is None else f"body.{_reference(entity)}")
