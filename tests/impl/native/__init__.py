"""Tests of kcoord's native (Rust) crates against their Python references."""
