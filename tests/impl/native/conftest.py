"""The compiled crates' binaries (impl/native/server: kcoord-native, check-tables; impl/native/wire:
wire_roundtrip), built as `make native` builds them: cargo's release profile into build/native (a no-op, well under a
second, when make built them and nothing changed since)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TARGET = ROOT / "build" / "native"


def cargo_build(crate: str) -> Path:
    """Builds impl/native/CRATE (release, Cargo.lock's versions) into build/native; returns build/native/release.
    Fails the test, saying so, when there is no cargo (`make setup` installs Rust) or the build fails."""
    cargo = shutil.which("cargo") or shutil.which("cargo", path=str(Path.home() / ".cargo" / "bin"))
    if cargo is None:
        pytest.fail("cargo not found (on PATH or in ~/.cargo/bin): `make setup` installs Rust")
    manifest = ROOT / "impl" / "native" / crate / "Cargo.toml"
    built = subprocess.run([cargo, "build", "--release", "--locked", "--quiet", "--manifest-path", str(manifest),
                            "--target-dir", str(TARGET)], capture_output=True, text=True, check=False,
                           env={**os.environ, "CARGO_TERM_COLOR": "never"})
    assert built.returncode == 0, f"cargo build of {manifest} failed:\n{built.stderr}"
    return TARGET / "release"


@pytest.fixture(scope="session")
def native_release() -> Path:
    """build/native/release, holding `kcoord-native` and `check-tables` built from the current sources (the generated
    tables in impl/_generated/rust/ among them)."""
    return cargo_build("server")
