"""One measurement in a fresh process: the benchmarks run each measured case as a child (`python -m benchmarks.X
--child ...`) so that nothing a previous case warmed up (JIT, caches, imports, the heap) is counted for the next, and
read what it measured from the last line it prints (one JSON object; anything before it is the child's own chatter)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def last_json(module: str, *args: str, cwd: Path = ROOT, stderr: bool = False) -> dict[str, Any]:
    """Run `python -m module --child ARGS...` in `cwd` and return the JSON object on its last line of standard output.
    `stderr=True` lets the child's standard error through to ours (progress a reader should see), else it is captured
    and shown only if the child fails."""
    cmd = [sys.executable, "-m", module, "--child", *args]
    done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=None if stderr else subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {done.returncode}: {(done.stderr or '').strip()[-2000:]}")
    lines = done.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"{' '.join(cmd)} printed nothing on its standard output")
    result: dict[str, Any] = json.loads(lines[-1])
    return result
