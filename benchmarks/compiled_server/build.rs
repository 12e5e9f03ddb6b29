//! Generates the Transaction machine's decision table from spec/ (gen_rust.py) before every build that needs it:
//! the prototype's decisions come from the spec, as kcoord's Python tables do. KCOORD_PYTHON names a Python with kcoord
//! installed (benchmarks/compiled_server.sh passes the project's .venv).
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = here.join("../..");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("transaction.rs");
    let python = std::env::var("KCOORD_PYTHON").unwrap_or_else(|_| root.join(".venv/bin/python").display().to_string());
    let status = Command::new(&python)
        .arg(here.join("gen_rust.py"))
        .arg("Transaction")
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    assert!(status.success(), "gen_rust.py failed: {status}");
    println!("cargo:rerun-if-changed={}", here.join("gen_rust.py").display());
    println!("cargo:rerun-if-changed={}", root.join("spec/transaction.sm").display());
    println!("cargo:rerun-if-env-changed=KCOORD_PYTHON");
}
