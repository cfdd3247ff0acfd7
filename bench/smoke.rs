//! The benches run: each is a program measuring against a baseline in the
//! same run (`make bench`); here one runs on a small load and what it
//! measures is checked, so a change that breaks it fails `cargo test`.

use std::process::Command;

use serde_json::Value;

#[test]
fn the_replay_bench_runs_and_no_result_is_ever_stale() {
    let out = Command::new(env!("CARGO_BIN_EXE_replay"))
        .args(["--sessions", "2", "--calls", "16", "--scale", "0.05", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(runs.len(), 4, "two mixes, speculation off and on");
    for run in &runs {
        assert_eq!(run["stale"], 0, "{run}");
        assert!(run["calls"].as_u64().unwrap() >= 30, "{run}");
        let served = run["stats"]["hits"].as_u64().unwrap_or(0) + run["stats"]["joins"].as_u64().unwrap_or(0);
        assert_eq!(run["speculation"] == true, served > 0, "{run}");
    }
}
