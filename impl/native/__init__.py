"""Native (Rust) parts of kcoord, each a self-contained crate with its Python-side generator."""
