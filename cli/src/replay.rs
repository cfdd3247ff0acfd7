//! `toolhost replay DIR`: the calls `serve --record DIR` recorded, run
//! again against the user's plugins, and every difference printed: a
//! vendor's regression check, a user's bug report.
//!
//! Owns choosing the session files, matching each call to a plugin by name
//! and digest, the structural JSON diff and the summary; the record format
//! and its bounded reading are `toolhost::plugin::record`'s, running a
//! call again `toolhost::plugin::rerun`'s.
//!
//! Decisions (a recording is a file from anyone, a bug report):
//! - The recording chooses nothing: the plugin directory is the user's
//!   (`--plugins`, else the configuration's, as for `serve`), and so are
//!   the grants. The recording only names plugins, by name and digest.
//! - Offline unless `--execute`: the runtime loads every plugin with no
//!   grant (`RuntimeOptions::offline`), so no hook's request leaves and no
//!   secret is read; the recording holds no HTTP exchanges to answer them
//!   from, so they are refused. `execute` is not run. `--execute` gives
//!   the plugins their grants and runs `execute` too.
//! - A call recorded with another component than the installed one is
//!   refused, naming the plugin and both digests, unless `--changed`.
//! - Every file is read and checked (`Recording::open`) before any plugin
//!   is loaded: a recording over a cap, or with a line that is not a
//!   record, is refused whole.
//! - The plugins load through the supply checks of `[trust]`, as `serve`
//!   loads them (a lock file applies to a replay too).
//! - The exit status is 1 when any call differs, names a plugin that is
//!   not loaded or is refused, 0 when every call that ran answered as
//!   recorded.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use toolhost::bounds;
use toolhost::plugin::record::{Call, Line, Outcome, Recording};
use toolhost::plugin::{Rerun, Runtime};
use toolhost::supply::{self, Digest};

use crate::config::Config;

/// Differences printed per call before the rest is summed up.
const MAX_DIFF_LINES: usize = 20;
/// Of a value in a diff line or an input summary.
const SHOWN_BYTES: usize = 160;

/// What the user allowed a replay.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Grants apply, and `execute` is run (the runtime is not offline).
    pub execute: bool,
    /// Calls recorded with another component run against the installed one.
    pub changed: bool,
}

/// What a replay found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub calls: usize,
    pub same: usize,
    pub differ: usize,
    pub missing: usize,
    pub refused: usize,
    pub skipped: usize,
}

/// Replay the sessions in `dir` (a directory of `*.jsonl`, or one file)
/// against the plugins of `plugins`.
pub async fn run(
    runtime: &Runtime,
    config: &Config,
    dir: &Path,
    plugins: Option<&Path>,
    options: Options,
) -> Result<ExitCode> {
    let files = session_files(dir)?;
    for file in &files {
        Recording::open(file)?;
    }
    let Some(plugin_dir) = plugins else {
        bail!("no plugin directory to replay against: pass --plugins DIR, or set `plugins` in toolhost.toml");
    };
    crate::say!("replaying {} against {}", dir.display(), plugin_dir.display())?;
    if !options.execute {
        crate::say!(
            "offline: no plugin reaches the network and no secret is read; \
             pass --execute to give them their grants"
        )?;
    }
    let report = supply::load_dir(runtime, &config.trust, plugin_dir).await?;
    for error in &report.errors {
        eprintln!("error: {error}");
    }
    let installed: BTreeMap<&str, _> = report
        .plugins
        .iter()
        .map(|p| (&*p.name, (p, digest_of(&p.path))))
        .collect();
    let mut refused = BTreeSet::new();
    let mut total = Summary::default();
    for file in &files {
        let recording = Recording::open(file)?;
        for line in recording.lines() {
            let call = match line?.1 {
                Line::Session(_) => continue,
                Line::Capped { bytes } => {
                    crate::say!(
                        "note: {} reached its cap of {bytes} bytes; later calls were not recorded",
                        file.display()
                    )?;
                    continue;
                }
                Line::Call(call) => call,
            };
            total.calls += 1;
            let Some((plugin, digest)) = installed.get(call.plugin.as_str()) else {
                total.missing += 1;
                crate::say!(
                    "missing: {} {} ({}): no plugin `{}` in {}",
                    call.plugin,
                    call.export,
                    summary_of(&call.input),
                    call.plugin,
                    plugin_dir.display()
                )?;
                continue;
            };
            if call.digest != *digest && !options.changed {
                total.refused += 1;
                if refused.insert((call.plugin.clone(), call.digest.clone())) {
                    crate::say!(
                        "refused: plugin `{}` was recorded as {}, but {} is {}: its calls are not \
                         run (pass --changed to run them against the installed one)",
                        call.plugin,
                        call.digest,
                        plugin.path.display(),
                        digest
                    )?;
                }
                continue;
            }
            match plugin.rerun(&call.export, &call.input, options.execute).await {
                Ok(Rerun::Skipped(_)) => total.skipped += 1,
                Ok(Rerun::Done(now)) if now == call.output => total.same += 1,
                Ok(Rerun::Done(now)) => {
                    total.differ += 1;
                    crate::say_part!("{}", difference(&call, digest, &now))?;
                }
                Err(why) => {
                    total.differ += 1;
                    crate::say!(
                        "differs: {} {} ({}): cannot run it again: {why}",
                        call.plugin,
                        call.export,
                        summary_of(&call.input)
                    )?;
                }
            }
        }
    }
    let t = &total;
    crate::say_part!(
        "{} calls, {} same, {} differ, {} missing plugin",
        t.calls,
        t.same,
        t.differ,
        t.missing
    )?;
    if t.refused > 0 {
        crate::say_part!(", {} refused (another component)", t.refused)?;
    }
    if t.skipped > 0 {
        crate::say_part!(", {} execute not run (pass --execute)", t.skipped)?;
    }
    crate::say!()?;
    Ok(if t.differ > 0 || t.missing > 0 || t.refused > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The session files of `dir` (at most [`bounds::MAX_RECORDING_FILES`], in
/// name order), or `dir` itself if it is one.
fn session_files(dir: &Path) -> Result<Vec<PathBuf>> {
    if dir.is_file() {
        return Ok(vec![dir.to_owned()]);
    }
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read the recording {}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot read the recording {}", dir.display()))?
            .path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        // Its name is printed: it must not write on the terminal.
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.chars().any(bounds::is_control) {
            bail!(
                "the recording {} holds a session file named {}: control characters; refused",
                dir.display(),
                bounds::shown(&name)
            );
        }
        if files.len() == bounds::MAX_RECORDING_FILES {
            bail!(
                "the recording {} holds more than {} session files: refused",
                dir.display(),
                bounds::MAX_RECORDING_FILES
            );
        }
        files.push(path);
    }
    if files.is_empty() {
        bail!(
            "{} holds no recording (*.jsonl): record one with `toolhost serve --record DIR`",
            dir.display()
        );
    }
    files.sort();
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
