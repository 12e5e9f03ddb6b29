//! The generated Rust table against kcoord's Python table (`MachineTable.decide`), case by case: reads the JSON lines
//! `table_cases.py` writes (an instance, an event, its arguments, `pending`, and what the Python table answered: the
//! row and its post-state, or an error) from stdin, decides each with the generated `decide_json`, and exits 1 on the
//! first difference, saying what differs. Prints how many cases agreed and how many rows of the table they reached.

#[allow(non_camel_case_types, non_snake_case, clippy::all, unused_parens, dead_code, unused_variables)]
mod transaction {
    include!(concat!(env!("OUT_DIR"), "/transaction.rs"));
}

use std::collections::BTreeSet;
use std::io::BufRead;

fn main() {
    let mut cases = 0usize;
    let mut rows: BTreeSet<u16> = BTreeSet::new();
    let mut errors = 0usize;
    for (n, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.expect("stdin");
        let case: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
        let instance: transaction::Instance = serde_json::from_value(case["instance"].clone())
            .unwrap_or_else(|e| panic!("line {}: the instance: {e}", n + 1));
        let event = case["event"].as_str().expect("event");
        let pending = case["pending"].as_bool().expect("pending");
        let got = transaction::decide_json(&instance, event, case["args"].clone(), pending);
        let expected = &case["expected"];
        let agree = match (&got, expected.get("row")) {
            (Ok(d), Some(row)) => {
                rows.insert(d.row.index);
                let post = d.post.as_ref().map(|p| serde_json::to_value(p).unwrap()).unwrap_or(serde_json::Value::Null);
                row.as_u64() == Some(d.row.index as u64) && post == expected["post"]
            }
            (Err(_), None) => {
                errors += 1;
                true
            }
            _ => false,
        };
        if !agree {
            eprintln!("check-tables: case {} ({event} on {line}): the Rust table answered {:?}", n + 1,
                      got.map(|d| (d.row.index, d.post)));
            std::process::exit(1);
        }
        cases += 1;
    }
    if cases == 0 {
        eprintln!("check-tables: no case read");
        std::process::exit(2);
    }
    println!("check-tables: {cases} cases, the Rust table's answers equal to the Python table's ({errors} refused by \
              both); rows reached: {} of {}", rows.len(), transaction::ROWS.len());
}
