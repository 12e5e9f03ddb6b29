//! Generates every spec machine's decision table from spec/ (gen_rust.py, one run writing `<machine>.rs` for each and
//! `machines.rs`, their registry, into OUT_DIR) before every build that needs it: the prototype's decisions come from
//! the spec, as kcoord's Python tables do, and check-tables holds each table equal to its Python one. KCOORD_PYTHON
//! names a Python with kcoord installed (benchmarks/compiled_server.sh passes the project's .venv).
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = here.join("../..");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let python = std::env::var("KCOORD_PYTHON").unwrap_or_else(|_| root.join(".venv/bin/python").display().to_string());
    let status = Command::new(&python)
        .arg(here.join("gen_rust.py"))
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    assert!(status.success(), "gen_rust.py failed: {status}");
    println!("cargo:rerun-if-changed={}", here.join("gen_rust.py").display());
    // every machine's spec (not the directory: importing kcoord may write its __pycache__; a machine added to spec/
    // is generated once gen_rust.py or another spec changes)
    let spec = root.join("spec");
    for entry in std::fs::read_dir(&spec).unwrap_or_else(|e| panic!("{}: {e}", spec.display())) {
        let path = entry.expect("a spec/ entry").path();
        if path.extension().is_some_and(|x| x == "sm") {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    println!("cargo:rerun-if-env-changed=KCOORD_PYTHON");
}
