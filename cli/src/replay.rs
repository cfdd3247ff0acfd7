//! `toolhost replay DIR`: the calls `serve --record DIR` recorded, run
//! again against the plugins (those recorded, or `--plugins OTHER`), and
//! every difference printed: a vendor's regression check, a user's bug
//! report.
//!
//! Owns reading the session files, matching each call to a plugin by name,
//! the structural JSON diff and the summary; the record format and running
//! a call again are `toolhost::plugin::{record, rerun}`'s.
//!
//! Decisions:
//! - `execute` may reach HTTP, so it is not run by default: every other
//!   export is a pure hook of what the host handed it, and is run again.
//!   `--execute` runs recorded `execute` calls too (against whatever the
//!   plugin's grants reach now); its differences then count like others.
//! - The plugins load through the supply checks of `[trust]`, as `serve`
//!   loads them (a lock file applies to a replay too).
//! - The exit status is 1 when any call differs or names a plugin that is
//!   not loaded, 0 when every call that ran answered as recorded.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use toolhost::bounds;
use toolhost::plugin::record::{self, Call, Line, Outcome};
use toolhost::plugin::{Rerun, Runtime};
use toolhost::supply::{self, Digest};

use crate::config::Config;

/// Differences printed per call before the rest is summed up.
const MAX_DIFF_LINES: usize = 20;
/// Of a value in a diff line or an input summary.
const SHOWN_BYTES: usize = 160;

/// What a replay found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub calls: usize,
    pub same: usize,
    pub differ: usize,
    pub missing: usize,
    pub skipped: usize,
}

/// Replay the sessions in `dir` (a directory of `*.jsonl`, or one file)
/// against `plugins` if given, else the directory each was recorded from.
pub async fn run(
    runtime: &Runtime,
    config: &Config,
    dir: &Path,
    plugins: Option<&Path>,
    execute: bool,
) -> Result<ExitCode> {
    let mut files = session_files(dir)?;
    files.sort();
    let mut total = Summary::default();
    for file in &files {
        let lines = record::read(file).map_err(anyhow::Error::msg)?;
        let recorded_dir = lines.iter().find_map(|l| match l {
            Line::Session(s) => s.plugins.clone(),
            _ => None,
        });
        let Some(plugin_dir) = plugins.map(Path::to_owned).or(recorded_dir) else {
            bail!("{} names no plugin directory: pass --plugins DIR", file.display());
        };
        println!("replaying {} against {}", file.display(), plugin_dir.display());
        let report = supply::load_dir(runtime, &config.trust, &plugin_dir).await?;
        for error in &report.errors {
            eprintln!("error: {error}");
        }
        for line in &lines {
            match line {
                Line::Session(_) => {}
                Line::Capped { bytes } => println!(
                    "note: the recording reached its cap of {bytes} bytes; later calls were not recorded"
                ),
                Line::Call(call) => {
                    total.calls += 1;
                    let Some(plugin) = report.plugins.iter().find(|p| *p.name == *call.plugin) else {
                        total.missing += 1;
                        println!(
                            "missing: {} {} ({}): no plugin `{}` in {}",
                            call.plugin,
                            call.export,
                            summary_of(&call.input),
                            call.plugin,
                            plugin_dir.display()
                        );
                        continue;
                    };
                    match plugin.rerun(&call.export, &call.input, execute).await {
                        Ok(Rerun::Skipped(_)) => total.skipped += 1,
                        Ok(Rerun::Done(now)) if now == call.output => total.same += 1,
                        Ok(Rerun::Done(now)) => {
                            total.differ += 1;
                            print!("{}", difference(call, &digest_of(&plugin.path), &now));
                        }
                        Err(why) => {
                            total.differ += 1;
                            println!(
                                "differs: {} {} ({}): cannot run it again: {why}",
                                call.plugin,
                                call.export,
                                summary_of(&call.input)
                            );
                        }
                    }
                }
            }
        }
    }
    let t = &total;
    print!(
        "{} calls, {} same, {} differ, {} missing plugin",
        t.calls, t.same, t.differ, t.missing
    );
    if t.skipped > 0 {
        print!(", {} execute not run (pass --execute)", t.skipped);
    }
    println!();
    Ok(if t.differ > 0 || t.missing > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The session files of `dir`, or `dir` itself if it is one.
fn session_files(dir: &Path) -> Result<Vec<PathBuf>> {
    if dir.is_file() {
        return Ok(vec![dir.to_owned()]);
    }
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read the recording {}", dir.display()))?;
    let files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    if files.is_empty() {
        bail!(
            "{} holds no recording (*.jsonl): record one with `toolhost serve --record DIR`",
            dir.display()
        );
    }
    Ok(files)
}

fn digest_of(path: &Path) -> String {
    std::fs::read(path).map_or_else(|e| format!("unreadable: {e}"), |b| Digest::of(&b).to_string())
}

/// The tool and a short form of the input, for a heading.
fn summary_of(input: &Value) -> String {
    let mut rest = input.clone();
    let tool = rest
        .as_object_mut()
        .and_then(|m| m.remove("tool"))
        .and_then(|t| t.as_str().map(str::to_owned));
    let rest = shown(&rest);
    match tool {
        Some(tool) => format!("tool {tool}, {rest}"),
        None => rest,
    }
}

fn shown(v: &Value) -> String {
    bounds::cut(v.to_string(), SHOWN_BYTES)
}

/// A call that answered otherwise: a heading, then each place the two
/// answers differ, recorded against now.
fn difference(call: &Call, digest_now: &str, now: &Outcome) -> String {
    let mut out = format!(
        "differs: {} {} ({})\n",
        call.plugin,
        call.export,
        summary_of(&call.input)
    );
    if call.digest != digest_now {
        out.push_str(&format!(
            "  component: recorded {}, now {digest_now}\n",
            call.digest
        ));
    }
    let mut lines = Vec::new();
    let (was, is) = (outcome_value(&call.output), outcome_value(now));
    diff("", &was, &is, &mut lines);
    let more = lines.len().saturating_sub(MAX_DIFF_LINES);
    for line in lines.into_iter().take(MAX_DIFF_LINES) {
        out.push_str(&format!("  {line}\n"));
    }
    if more > 0 {
        out.push_str(&format!("  ... and {more} more differences\n"));
    }
    out
}

fn outcome_value(o: &Outcome) -> Value {
    serde_json::to_value(o).expect("an outcome serialises")
}

/// Each JSON pointer where `was` and `is` differ, with both values.
fn diff(at: &str, was: &Value, is: &Value, out: &mut Vec<String>) {
    match (was, is) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, va) in a {
                let here = format!("{at}/{key}");
                match b.get(key) {
                    Some(vb) => diff(&here, va, vb, out),
                    None => out.push(format!("{here}: recorded {}, now absent", shown(va))),
                }
            }
            for (key, vb) in b.iter().filter(|(k, _)| !a.contains_key(*k)) {
                out.push(format!("{at}/{key}: recorded absent, now {}", shown(vb)));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                diff(&format!("{at}/{i}"), va, vb, out);
            }
        }
        _ if was == is => {}
        _ => out.push(format!(
            "{}: recorded {}, now {}",
            if at.is_empty() { "/" } else { at },
            shown(was),
            shown(is)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_diff_names_each_place_with_both_values() {
        let mut out = Vec::new();
        diff(
            "",
            &json!({"ok": {"args": {"code": "1", "keep": 1}, "list": [1, 2]}}),
            &json!({"ok": {"args": {"id": "p1", "keep": 1}, "list": [1, 3]}}),
            &mut out,
        );
        assert_eq!(
            out,
            [
                "/ok/args/code: recorded \"1\", now absent",
                "/ok/args/id: recorded absent, now \"p1\"",
                "/ok/list/1: recorded 2, now 3",
            ]
        );
        let mut out = Vec::new();
        diff("", &json!({"ok": 1}), &json!({"error": "trap"}), &mut out);
        assert_eq!(out.len(), 2, "{out:?}");
    }
}
