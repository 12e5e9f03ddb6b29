"""The compiled server's binaries (impl/native/server), built as `make native` builds them: cargo's release profile
into build/native (a no-op, ~0.3 s, when make built them and nothing changed since)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MANIFEST = ROOT / "impl" / "native" / "server" / "Cargo.toml"
TARGET = ROOT / "build" / "native"


def _cargo() -> str:
    found = shutil.which("cargo") or shutil.which("cargo", path=str(Path.home() / ".cargo" / "bin"))
    if found is None:
        pytest.fail("cargo not found (on PATH or in ~/.cargo/bin): `make setup` installs Rust")
    return found


@pytest.fixture(scope="session")
def native_release() -> Path:
    """build/native/release, holding `kcoord-native` and `check-tables` built from the current sources (the generated
    tables in impl/_generated/rust/ among them)."""
    built = subprocess.run([_cargo(), "build", "--release", "--locked", "--quiet", "--manifest-path", str(MANIFEST),
                            "--target-dir", str(TARGET)], capture_output=True, text=True, check=False,
                           env={**os.environ, "CARGO_TERM_COLOR": "never"})
    assert built.returncode == 0, f"cargo build of {MANIFEST} failed:\n{built.stderr}"
    return TARGET / "release"
