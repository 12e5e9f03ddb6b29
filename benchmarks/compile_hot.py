"""Compile kcoord's hot modules ahead of time with mypyc into a build directory, leaving the source tree alone.

Run: ``.venv/bin/python benchmarks/compile_hot.py [--out build/hot] [--modules impl/server,impl/runtime,...]
[--jobs 2] [--opt 3]``, then put the result first on the path to run the compiled modules:
``PYTHONPATH=build/hot .venv/bin/python benchmarks/bench_server.py ...`` (or ``profile_dispatch.py``). Without that
PYTHONPATH everything (the tests, a fresh clone) runs the pure-Python modules as before.

The build tree is laid out like the installed package (``kcoord/``, ``kcoord/impl`` = ``impl/``, ``kcoord/model`` =
``model/``, ...; the editable install maps those folders, which mypy cannot follow, as ``make lint`` knows) with real
folders and one symlink per source or data file, so that the compiled extension modules land beside the symlinks and
never in the source tree. An extension module is found before a ``.py`` of the same name, so the compiled modules
win and every other module (kio, asyncio, the CLI, the model, the generated tables unless listed) stays interpreted.
``python -c 'import kcoord.impl.server.codec as m; print(m.__file__)'`` with that PYTHONPATH shows which one ran.

Tests against the compiled modules: pytest puts the repository root (which holds the source ``kcoord/``) first on
the path, so import ``kcoord`` from the build tree before pytest starts: ``PYTHONPATH=build/hot .venv/bin/python -P
-c "import sys, kcoord, pytest; sys.exit(pytest.main(sys.argv[1:]))" -q tests/impl/txn``.

Only the given modules are compiled; mypy (the project's own strict configuration) checks everything they import.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the installed package's layout (pyproject.toml's package-dir)
LAYOUT = {"kcoord": "kcoord", "kcoord/impl": "impl", "kcoord/model": "model", "kcoord/conformance": "conformance",
          "kcoord/spec": "spec"}
# what a committed transaction and a heartbeat run through (profile_dispatch.py --workload txn, by own time)
HOT = ("impl/server", "impl/runtime", "impl/txn", "impl/partition", "impl/storage", "impl/group",
       "impl/statemachine.py", "impl/cluster.py", "impl/errors.py", "impl/interfaces.py")
# modules left interpreted inside the hot folders, and why (see benchmarks/RESULTS.md, issue 31's sixth session)
_OS_ERROR = ("defines an exception class derived from a builtin one (OSError, AssertionError): mypyc's native classes"
             " may derive only from Exception/BaseException among builtins; @mypyc_attr(native_class=False) would"
             " take it, at the price of mypy_extensions as a runtime dependency. Not on the hot path")
REFUSED: dict[str, str] = {
    "impl/errors.py": _OS_ERROR,  # IllegalStateError(AssertionError)
    "impl/txn/errors.py": _OS_ERROR,
    "impl/storage/durability.py": _OS_ERROR,  # LogFailedError, InjectedFault
    "impl/storage/_files.py": _OS_ERROR,  # LogAppendError
    "impl/server/handlers_configs.py": "mypyc 2.4.1 stops with an internal error (AssertionError in visit_star_expr) on"
    " `x in (TOPIC, BROKER, *_NOT_DESCRIBED)`; DescribeConfigs is not on the hot path",
    "impl/server/embedded.py": "mypyc 2.4.1 names the C field of attribute `_thread` `__thread`, a gcc keyword: the C"
    " does not compile; the in-process server thread is not on the hot path",
}


def mirror(out: Path) -> None:
    """A real folder tree under `out` with one symlink per file of the package's folders (no __pycache__).

    An existing tree is kept (its C files, objects and extension modules let a rebuild skip what has not changed);
    its symlinks are made again."""
    for target, source in LAYOUT.items():
        src_root = ROOT / source
        for dirpath, dirnames, filenames in os.walk(src_root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__" and not (target == "kcoord" and
                                                                             Path(dirpath) == src_root)]
            rel = Path(dirpath).relative_to(src_root)
            dest = out / target / rel
            dest.mkdir(parents=True, exist_ok=True)
            for name in filenames:
                if name.endswith((".pyc", ".so", ".c")):
                    continue
                link = dest / name
                if link.is_symlink():
                    link.unlink()
                link.symlink_to(Path(dirpath) / name)


def hot_files(out: Path, modules: list[str]) -> list[str]:
    """The mirror's paths (relative to `out`) of the source files `modules` name, minus REFUSED."""
    files: list[str] = []
    for module in modules:
        source = ROOT / module
        paths = [source] if source.suffix == ".py" else sorted(source.rglob("*.py"))
        for path in paths:
            rel = path.relative_to(ROOT / "impl")
            if str(Path("impl") / rel) in REFUSED or "__pycache__" in rel.parts:
                continue
            files.append(str(Path("kcoord/impl") / rel))
    return files


def build(out: Path, files: list[str], jobs: int, opt: int) -> int:
    """mypyc over `files`, in place in the mirror `out` (separate C files, so that gcc can run `jobs` at once)."""
    script = out / "setup_hot.py"
    script.write_text(
        "import sys\n"
        "from setuptools import setup\n"
        "from mypyc.build import mypycify\n"
        f"files = {files!r}\n"
        f"setup(name='kcoord_hot', ext_modules=mypycify(['--config-file', {str(ROOT / 'pyproject.toml')!r}, *files],"
        f" opt_level={str(opt)!r}, separate=True),\n"
        f"      script_args=['build_ext', '--inplace', '-j', {str(jobs)!r}])\n"
    )
    return subprocess.call([sys.executable, script.name], cwd=out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "hot")
    parser.add_argument("--modules", default=",".join(HOT), help="comma-separated folders or files under impl/")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--opt", type=int, default=3, help="mypyc's opt_level (the C compiler's -O)")
    parser.add_argument("--list", action="store_true", help="print the files that would be compiled, and stop")
    args = parser.parse_args()
    out = args.out.resolve()
    files = hot_files(out, [m for m in args.modules.split(",") if m])
    if args.list:
        print("\n".join(files))
        return 0
    mirror(out)
    status = build(out, files, args.jobs, args.opt)
    if status == 0:
        built = sorted(p.relative_to(out) for p in out.rglob("*.so"))
        print(f"compiled {len(files)} modules into {out} ({len(built)} extension modules);"
              f" run with PYTHONPATH={out}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
