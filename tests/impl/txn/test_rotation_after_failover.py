"""Producer ids are unique, not increasing: nodes hold interleaved blocks, so after a failover a rotation may take a
smaller id than the one it replaces. The spec requires only that the new id differs from the ids in use (it once
required a larger one, and `decide` refused this legitimate rotation as a precondition violation).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .harness import Harness

T = "txn-gap"


def test_rotation_after_failover_to_a_node_with_an_older_block(tmp_path: Path) -> None:
    node_a = Harness(tmp_path / "a")
    node_b = Harness(tmp_path / "b", block_store=node_a.store)  # one controller hands out the blocks
    assert node_a.run(node_a.coordinator.init_producer_id(None, 0)).producer_id == 1_000  # A: block 1000-1999
    assert node_b.run(node_b.coordinator.init_producer_id(None, 0)).producer_id == 2_000  # B: block 2000-2999
    # t lives on node B with a producer id from the newer block and an exhausted epoch ...
    node_b.seed(T, "CompleteCommit", producer_id=2_500, previous_producer_id=2_500, producer_epoch=32766)
    partition = node_b.partition(T)
    node_b.coordinator.unload(partition)
    # ... then its partition moves to node A, whose next id (1001) is smaller
    shutil.copytree(node_b.log_dir(partition), node_a.log_dir(partition))
    node_a.coordinator.load(partition)
    r = node_a.init(T)  # rotates to a fresh id from A's (older) block
    assert (r.error, r.producer_epoch) == ("NONE", 0) and r.producer_id < 2_500
