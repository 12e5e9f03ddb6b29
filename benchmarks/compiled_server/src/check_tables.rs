//! The generated Rust tables against kcoord's Python tables (`MachineTable.decide`), case by case: `check-tables
//! MACHINE` reads the JSON lines `table_cases.py MACHINE N` writes (the machine, an instance, an event, its arguments,
//! `pending`, and what the Python table answered: the row and its post-state, or why it refused — no row, a bound, a
//! precondition) from stdin, decides each with that machine's generated `decide_case` (its `decide_json` over JSON;
//! `machines.rs`, generated with the tables, lists every machine of spec/), and exits 1 on the first difference,
//! saying what differs, 2 on a malformed case or a case of another machine. Prints how many cases agreed and how many
//! rows of the table they reached, naming the rows none reached. Without MACHINE it checks the machine the cases
//! name (benchmarks/compiled_server.sh runs it so, on Transaction's cases).

mod machines {
    include!(concat!(env!("OUT_DIR"), "/machines.rs"));
}

use machines::{Machine, MACHINES};
use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::process::exit;

fn machine(name: &str) -> &'static Machine {
    MACHINES.iter().find(|m| m.name == name).unwrap_or_else(|| {
        let names: Vec<&str> = MACHINES.iter().map(|m| m.name).collect();
        eprintln!(
            "check-tables: no machine {name} in spec/ (there are: {})",
            names.join(", ")
        );
        exit(2)
    })
}

fn main() {
    let mut chosen = std::env::args().nth(1).map(|name| machine(&name));
    let mut cases = 0usize;
    let mut rows: BTreeSet<u16> = BTreeSet::new();
    let mut refused: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (n, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.expect("stdin");
        let malformed = |what: String| -> ! {
            eprintln!("check-tables: case {}: {what}", n + 1);
            exit(2)
        };
        let case: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| malformed(e.to_string()));
        let name = case["machine"]
            .as_str()
            .unwrap_or_else(|| malformed("no machine".into()));
        let m = *chosen.get_or_insert_with(|| machine(name));
        if name != m.name {
            malformed(format!("a case of {name}, not of {}", m.name));
        }
        let event = case["event"].as_str().unwrap_or_else(|| malformed("no event".into()));
        let pending = case["pending"]
            .as_bool()
            .unwrap_or_else(|| malformed("no pending".into()));
        let got =
            (m.decide)(case["instance"].clone(), event, case["args"].clone(), pending).unwrap_or_else(|e| malformed(e));
        let expected = &case["expected"];
        let agree = match (&got, expected.get("row")) {
            (Ok((row, post)), Some(want)) => {
                rows.insert(*row);
                want.as_u64() == Some(u64::from(*row)) && *post == expected["post"]
            }
            (Err(why), None) => {
                *refused.entry(why).or_default() += 1;
                expected["refused"].as_str() == Some(*why)
            }
            _ => false,
        };
        if !agree {
            eprintln!(
                "check-tables: {} case {} ({event} on {line}): the Rust table answered {got:?}",
                m.name,
                n + 1
            );
            exit(1);
        }
        cases += 1;
    }
    let Some(m) = chosen.filter(|_| cases > 0) else {
        eprintln!("check-tables: no case read");
        exit(2)
    };
    let reasons: Vec<String> = refused.iter().map(|(why, k)| format!("{k} {why}")).collect();
    // a row's index is its position in ROWS: the IR numbers a machine's rows so
    let unreached: Vec<String> = (0..m.rows as u16)
        .filter(|i| !rows.contains(i))
        .map(|i| i.to_string())
        .collect();
    println!(
        "check-tables: {}: {cases} cases, the Rust table's answers equal to the Python table's ({} refused by \
              both: {}); rows reached: {} of {}{}",
        m.name,
        refused.values().sum::<usize>(),
        if reasons.is_empty() {
            "none".to_string()
        } else {
            reasons.join(", ")
        },
        rows.len(),
        m.rows,
        if unreached.is_empty() {
            String::new()
        } else {
            format!(" (none reached row {})", unreached.join(", "))
        }
    );
}
