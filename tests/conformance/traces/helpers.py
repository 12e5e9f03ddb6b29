"""Shared test material: the spec README's GroupLease machine (it uses every trace-property form) and helpers."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from kcoord.conformance.traces.generate import scripted
from kcoord.model import ir
from tests.model.helpers import machine

GROUP_LEASE = machine('''
machine GroupLease
  key group_id: string
  enum ReleaseReason { LEAVE, REVOKED }
  const NO_GENERATION: int32 = -1
  var generation: int32 = -1
  var holder: member = ""
  var owned: set[partition] = {}
  var deadline_ms: int64 = -1
  var last_release: ReleaseReason = LEAVE
  def held = holder != ""
  initial expirable state Free "free"
  state Held "held"
  pending state Revoking "revoking"
  pending final state Dead "dead"
  event Acquire(m: member, parts: set[partition], now_ms: int64, session_ms: int32) "acquire"
    let until_ms = now_ms + session_ms
    requires now_ms >= 0 and session_ms > 0
    check not pending else REBALANCE_IN_PROGRESS
    check m != "" and parts != {} else INVALID_REQUEST
    from Free -> Held ensures holder' == m, owned' == parts, generation' == generation + 1, deadline_ms' == until_ms
    from Held -> Held when m == holder ensures owned' == parts, deadline_ms' == until_ms
    reject in Held when m != holder and now_ms <= deadline_ms with REBALANCE_IN_PROGRESS
    from Held -> Revoking when m != holder and now_ms > deadline_ms answer REBALANCE_IN_PROGRESS
  event Release(m: member, gen: int32) "release"
    check gen == generation else ILLEGAL_GENERATION
    reject in Free with NONE
    reject in Held, Revoking when m != holder with UNKNOWN_MEMBER_ID
    from Held, Revoking -> Free when m == holder
      ensures holder' == "", owned' == {}, deadline_ms' == -1, last_release' == LEAVE
  internal event RevokeDone() "done"
    from Revoking -> Free ensures holder' == "", owned' == {}, deadline_ms' == -1, last_release' == REVOKED
  internal event Expire(now_ms: int64) "expire"
    from Free -> Dead when not pending
  invariant free_is_empty: state == Free -> not held and owned == {}
  invariant held_has_partitions: state in {Held, Revoking} -> held and owned != {}
  step generation_grows: generation' >= generation
  trace one_group_per_partition: exclusive owned per holder
  trace generations_monotonic: monotonic generation per group_id
  trace revocation_finishes: within Revoking -> Free by 30000
  trace granted_after_acquire: before GroupLease.Held requires GroupLease.Acquire on group_id
''', "group_lease.sm")

FENCED = ir.TraceProperty("session_fenced", "fenced", ("GroupLease", "Release", "gen", "GroupLease", "generation"),
                          ("group_id",), span=GROUP_LEASE.traces[0].span)
LEASE_WITH_FENCED = dataclasses.replace(GROUP_LEASE, traces=(*GROUP_LEASE.traces, FENCED))


def acquire(m: str, parts: set[str], now: int, session: int = 1000) -> tuple[str, dict[str, Any], int]:
    return "Acquire", {"m": m, "parts": frozenset(parts), "now_ms": now, "session_ms": session}, now


def lease_rows(group: str, steps: list[tuple[str, dict[str, Any], int]], seq: int = 0) -> list[dict[str, Any]]:
    return scripted(GROUP_LEASE, {"group_id": group}, steps, seq)


BOX = machine('''
machine Box
  key box_id: string
  var n: int32 = 0
  initial state Open "open"
  state Gone "gone: nothing leaves it, the coordinator forgets it"
  event Put(k: int32) "put"
    from Open -> Open ensures n' == n + k
  event Delete() "delete"
    from Open -> Gone
  event Poke() "poke"
    from Gone -> Gone
  step put_grows on Put "only Put promises growth": k >= 0 -> n' >= n
''', "box.sm")


def box_rows(box: str, steps: list[tuple[str, dict[str, Any], int]], seq: int = 0) -> list[dict[str, Any]]:
    return scripted(BOX, {"box_id": box}, steps, seq)


def break_partway(path: Path) -> None:
    """Rewrite a Parquet file of two or more rows one row per row group, then break the second group's page header:
    the footer stays sound, so the file opens, and reading fails at the second group."""
    import pyarrow.parquet as pq

    pq.write_table(pq.read_table(path), path, row_group_size=1)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups >= 2
    broken = bytearray(path.read_bytes())
    start = meta.row_group(1).column(0).data_page_offset
    broken[start:start + 8] = b"\xff" * 8
    path.write_bytes(bytes(broken))


def write_mixed(traces: dict[str, list[dict[str, Any]]], machines: dict[str, ir.Machine], root: Path) -> None:
    """Each machine's rows spread over three files, one per format the readers take: JSON Lines, v1 Parquet (names
    as strings) and the typed format (v2), so one run reads all three and the union of their rows."""
    import json

    from kcoord.conformance.traces.writers import _jsonable, write_parquet_file

    for name, rows in traces.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        parts = [rows[i::3] for i in range(3)]
        (folder / "part-0.jsonl").write_text("".join(json.dumps(_jsonable(r)) + "\n" for r in parts[0]))
        write_parquet_file(parts[1], machines[name], str(folder / "part-1.parquet"), typed=False)
        write_parquet_file(parts[2], machines[name], str(folder / "part-2.parquet"), typed=True)
