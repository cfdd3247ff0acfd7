//! Recording the calls the host makes into plugins (`serve --record DIR`),
//! and the record format `toolhost replay` reads back.
//!
//! Owns the file format ([`Line`], [`Call`], [`Outcome`]) and the
//! [`Recorder`], which appends one JSON line per call to one file per
//! session. The JSON form of each export's inputs and outputs, and
//! running a recorded call again, are `calls`'; comparing and printing
//! differences is the command line's.
//!
//! Decisions:
//! - One file per session, `calls-SECONDS-PID.jsonl` in DIR (made 0700),
//!   opened for appending: a line is written whole, with one `write`, as
//!   the call returns, so a server that dies leaves every call before it.
//!   The first line ([`Session`]) names the plugin directory, so a replay
//!   without `--plugins` runs against the plugins that were recorded.
//! - Bounded: once a file holds [`MAX_RECORDING_BYTES`], one last line
//!   ([`Line::Capped`]) says so, one warning is logged, and later calls
//!   are not recorded (the server goes on serving). A replay says the
//!   recording was cut.
//! - Secrets: each line is passed through the plugin's own redactor
//!   (`redact`, the one every other boundary uses) before it is written,
//!   so a secret value in arguments, results or errors is written
//!   `[redacted:NAME]`, in its JSON-escaped form too.
//! - No cost when off: the runtime holds an `Option<Arc<Recorder>>`; with
//!   none (and no shadow) no call builds its JSON form.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::redact::Redactor;

/// The most one session's file holds.
pub const MAX_RECORDING_BYTES: u64 = 64 << 20;

/// One line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Line {
    Session(Session),
    Call(Call),
    /// The file reached its cap: no later call is in it.
    Capped {
        bytes: u64,
    },
}

/// What the first line says of the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// The plugin directory served, if any.
    pub plugins: Option<PathBuf>,
    /// Seconds since the Unix epoch.
    pub started: u64,
    pub toolhost: String,
}

/// One call into one plugin's export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    pub plugin: String,
    /// `sha256:HEX` of the component file.
    pub digest: String,
    /// The export's WIT name (`transform-args`).
    pub export: String,
    /// The inputs as the plugin saw them (see `calls` for each export's).
    pub input: Value,
    pub output: Outcome,
    pub micros: u64,
}

/// What a call returned: the export's answer as JSON, or the plugin's
/// failure or refusal as its message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok(Value),
    Error(String),
}

/// Appends the calls of one session to its file.
pub struct Recorder {
    path: PathBuf,
    state: Mutex<State>,
    cap: u64,
}

struct State {
    file: std::fs::File,
    written: u64,
    capped: bool,
}

impl Recorder {
    /// Start a session file in `dir` (created if missing), for a server
    /// of the plugin directory `plugins`.
    pub fn create(dir: &Path, plugins: Option<&Path>) -> std::io::Result<Self> {
        Self::with_cap(dir, plugins, MAX_RECORDING_BYTES)
    }

    fn with_cap(dir: &Path, plugins: Option<&Path>, cap: u64) -> std::io::Result<Self> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let path = dir.join(format!("calls-{started}-{}.jsonl", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)?;
        let recorder = Self {
            path,
            state: Mutex::new(State {
                file,
                written: 0,
                capped: false,
            }),
            cap,
        };
        let session = Line::Session(Session {
            plugins: plugins.map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_owned())),
            started,
            toolhost: env!("CARGO_PKG_VERSION").to_owned(),
        });
        recorder.append(&Redactor::none(), &session);
        Ok(recorder)
    }

    /// The session's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Record one call, redacted with `redactor`.
    pub(super) fn call(&self, redactor: &Redactor, call: Call) {
        self.append(redactor, &Line::Call(call));
    }

    fn append(&self, redactor: &Redactor, line: &Line) {
        let text = serde_json::to_string(line).expect("a record serialises");
        let mut text = redactor.text(&text).into_owned();
        text.push('\n');
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.capped {
            return;
        }
        if state.written + text.len() as u64 > self.cap {
            state.capped = true;
            tracing::warn!(
                "the recording {} reached its cap of {} bytes: later calls are not recorded",
                self.path.display(),
                self.cap
            );
            let end = serde_json::to_string(&Line::Capped { bytes: self.cap }).expect("serialises");
            let _ = writeln!(state.file, "{end}");
            return;
        }
        match state.file.write_all(text.as_bytes()) {
            Ok(()) => state.written += text.len() as u64,
            Err(e) => {
                state.capped = true;
                tracing::warn!(
                    "cannot write the recording {}: {e}; recording stopped",
                    self.path.display()
                );
            }
        }
    }
}

/// Read every line of a session file; a line that is not one names its
/// number.
pub fn read(path: &Path) -> Result<Vec<Line>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            serde_json::from_str(l)
                .map_err(|e| format!("{} line {}: not a recorded call: {e}", path.display(), n + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_secrets_are_redacted_and_the_cap_ends_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Recorder::with_cap(dir.path(), Some(Path::new("/p")), 600).unwrap();
        let redactor = Redactor::new([("tok", "s3cret")]);
        let call = |n: u32| {
            let call = Call {
                plugin: "a".into(),
                digest: "sha256:00".into(),
                export: "transform-args".into(),
                input: serde_json::json!({"tool": "t", "args": {"k": format!("s3cret {n}")}}),
                output: Outcome::Ok(serde_json::json!({"n": n})),
                micros: 5,
            };
            recorder.call(&redactor, call)
        };
        for n in 0..10 {
            call(n);
        }
        let text = std::fs::read_to_string(recorder.path()).unwrap();
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.len() <= 600 + 40, "{}", text.len());
        let lines = read(recorder.path()).unwrap();
        assert!(matches!(&lines[0], Line::Session(s) if s.plugins.as_deref() == Some(Path::new("/p"))));
        assert!(matches!(lines.last(), Some(Line::Capped { bytes: 600 })));
        let Line::Call(first) = &lines[1] else {
            panic!("{lines:?}")
        };
        assert_eq!(first.input["args"]["k"], "[redacted:tok] 0");
        assert!(lines.len() < 12, "calls past the cap were recorded");
    }
}
