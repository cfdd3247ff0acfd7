//! The plugins bench's peer, Extism: `fixture_remap`'s transform (the
//! ~1 KB `create_issue` arguments of `host/benches/create_issue.json`, two
//! keys remapped) as an Extism plug-in (`guest/`) on one reused plug-in
//! instance, against the same transform natively, in turn in the same
//! rounds. An Extism plug-in takes and returns bytes, so the arguments go
//! in as JSON and come back as JSON, parsed into the map they left as:
//! what a host calling it has to do, as toolhost's figure counts lending
//! the map and taking it back.
//!
//! `make bench` builds it (outside the workspace: Extism brings its own
//! wasmtime) and prints its figures in the one table; `--json` is what the
//! table reads.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

// The allocator toolhost's plugins bench runs on, so that only the hosts
// differ.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ARGS: &str = include_str!("../../../../host/benches/create_issue.json");

/// The guest's logic, natively (as `host/benches/plugins.rs` runs it).
fn remap_native(args: &mut Map<String, Value>) {
    if let Some(Value::String(name)) = args.shift_remove("priority") {
        let id = match name.as_str() {
            "urgent" => 1,
            "high" => 2,
            "low" => 4,
            _ => 3,
        };
        args.insert("priorityId".into(), json!(id));
    }
    if let Some(Value::String(user)) = args.shift_remove("assignee") {
        args.insert("assigneeId".into(), json!(format!("user:{user}")));
    }
}

fn through_extism(
    plugin: &mut extism::Plugin,
    args: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let input = serde_json::to_vec(args).map_err(|e| e.to_string())?;
    let output: &[u8] = plugin
        .call("transform_args", input.as_slice())
        .map_err(|e| format!("the Extism plug-in failed: {e}"))?;
    serde_json::from_slice(output).map_err(|e| format!("the Extism plug-in answered no JSON object: {e}"))
}

/// The median of per-call means, one mean a round.
fn median(mut per_call: Vec<Duration>) -> Duration {
    per_call.sort();
    per_call[per_call.len() / 2]
}

fn main() -> Result<(), String> {
    let mut wasm = None;
    let (mut rounds, mut calls, mut json_out) = (200usize, 200u32, false);
    let mut argv = std::env::args().skip(1);
    while let Some(arg) = argv.next() {
        match arg.as_str() {
            "--json" => json_out = true,
            "--rounds" => rounds = argv.next().and_then(|n| n.parse().ok()).ok_or("--rounds N")?,
            "--calls" => calls = argv.next().and_then(|n| n.parse().ok()).ok_or("--calls N")?,
            path => wasm = Some(path.to_owned()),
        }
    }
    let wasm = wasm.ok_or("usage: toolhost-peer-extism GUEST.wasm [--rounds N] [--calls N] [--json]")?;
    let bytes = std::fs::read(&wasm).map_err(|e| format!("cannot read {wasm}: {e}"))?;
    let mut plugin =
        extism::Plugin::new(&bytes, [], false).map_err(|e| format!("Extism cannot load {wasm}: {e}"))?;
    let args: Map<String, Value> =
        serde_json::from_str(ARGS).map_err(|e| format!("create_issue.json: {e}"))?;
    let mut expected = args.clone();
    remap_native(&mut expected);
    if through_extism(&mut plugin, &args)? != expected {
        return Err("the Extism plug-in's transform differs from the native one".into());
    }
    let (mut native, mut extism) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for round in 0..rounds.max(1) {
        // Whichever goes first alternates, so that the machine's load
        // weighs on both alike.
        for side in [round % 2, 1 - round % 2] {
            let mut total = Duration::ZERO;
            for _ in 0..calls {
                let mut a = args.clone();
                let start = Instant::now();
                if side == 0 {
                    remap_native(&mut a);
                    black_box(a);
                } else {
                    black_box(through_extism(&mut plugin, &a)?);
                }
                total += start.elapsed();
            }
            let per_call = total / calls.max(1);
            if side == 0 {
                native.push(per_call)
            } else {
                extism.push(per_call)
            }
        }
    }
    let (native, extism) = (median(native), median(extism));
    let ns = |d: Duration| d.as_secs_f64() * 1e9;
    if json_out {
        println!("{}", json!({"native_ns": ns(native), "extism_ns": ns(extism)}));
    } else {
        println!(
            "transform_args, native: {:.3} µs; Extism, reused plug-in: {:.3} µs ({:.1}x native)",
            ns(native) / 1e3,
            ns(extism) / 1e3,
            ns(extism) / ns(native)
        );
    }
    Ok(())
}
