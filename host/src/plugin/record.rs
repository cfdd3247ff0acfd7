//! Recording the calls the host makes into plugins (`serve --record DIR`),
//! and reading a recording back for `toolhost replay`.
//!
//! Owns the file format ([`Line`], [`Call`], [`Outcome`]), the
//! [`Recorder`], which appends one JSON line per call to one file per
//! session, and the bounded reader ([`Recording`]). The JSON form of each
//! export's inputs and outputs, and running a recorded call again, are
//! `rerun`'s; comparing and printing differences is the command line's.
//!
//! Decisions:
//! - One file per session, `calls-SECONDS-PID.jsonl` in DIR (made 0700),
//!   opened for appending: a line is written whole, with one `write`, as
//!   the call returns, so a server that dies leaves every call before it.
//!   The first line ([`Session`]) says when and by which toolhost; it
//!   names no directory: which plugins a replay runs is the replaying
//!   user's choice, never the file's.
//! - Bounded: once a file holds [`MAX_RECORDING_BYTES`], one last line
//!   ([`Line::Capped`]) says so, one warning is logged, and later calls
//!   are not recorded (the server goes on serving). A call whose line is
//!   over the caps a reader holds to (bytes, nesting, entries: `bounds`)
//!   is not recorded either, with a warning naming it.
//! - A recording is read as a file from anyone: over the caps, a line that
//!   is not a record, a plugin name that could be a path, an export or
//!   digest that is not one is refused, naming the file and line, before
//!   anything of it runs. It is parsed a line at a time: a file's size in
//!   memory is its text and one line's values.
//! - Secrets: each line is passed through the plugin's own redactor
//!   (`redact`, the one every other boundary uses) before it is written,
//!   so a secret value in arguments, results or errors is written
//!   `[redacted:NAME]`, in its JSON-escaped form too.
//! - No cost when off: the runtime holds an `Option<Arc<Recorder>>`; with
//!   none (and no shadow) no call builds its JSON form.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::redact::Redactor;
use crate::bounds::{
    self, MAX_RECORDED_DEPTH, MAX_RECORDED_ENTRIES, MAX_RECORDED_LINE_BYTES, MAX_RECORDING_BYTES,
};
use crate::json_structure;

/// Room past [`MAX_RECORDING_BYTES`] for the [`Line::Capped`] line.
const CAPPED_LINE_ROOM: u64 = 64;
/// Longest plugin name a recording may hold: a file name's.
const MAX_PLUGIN_NAME: usize = 255;

/// One line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Line {
    /// The session's first line: who recorded it.
    Session(Session),
    /// One call of a plugin's export.
    Call(Call),
    /// The file reached its cap: no later call is in it.
    Capped {
        /// The cap the file reached.
        bytes: u64,
    },
}

/// What the first line says of the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// Seconds since the Unix epoch.
    pub started: u64,
    /// The version of toolhost that recorded it.
    pub toolhost: String,
}

/// One call into one plugin's export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    /// The plugin called.
    pub plugin: String,
    /// `sha256:HEX` of the component file.
    pub digest: String,
    /// The export's WIT name (`transform-args`).
    pub export: String,
    /// The inputs as the plugin saw them (see `calls` for each export's).
    pub input: Value,
    /// What the call gave.
    pub output: Outcome,
    /// How long it took, in microseconds.
    pub micros: u64,
}

/// What a call returned: the export's answer as JSON, or the plugin's
/// failure or refusal as its message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The export's result.
    Ok(Value),
    /// The export's error.
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
    /// Start a session file in `dir` (created if missing).
    pub fn create(dir: &Path) -> std::io::Result<Self> {
        Self::with_cap(dir, MAX_RECORDING_BYTES)
    }

    fn with_cap(dir: &Path, cap: u64) -> std::io::Result<Self> {
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
        // A line no replay would read is not written.
        if let Err(why) = within_caps(&text) {
            if let Line::Call(call) = line {
                tracing::warn!(
                    plugin = %call.plugin,
                    export = %call.export,
                    "a call is not recorded in {}: {why}",
                    self.path.display()
                );
            }
            return;
        }
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

/// Why a recording is refused.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The recording could not be read.
    #[error("cannot read the recording {}: {source}", path.display())]
    Io {
        /// The recording.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The recording is larger than the recorder writes.
    #[error(
        "the recording {} is over {max} bytes, more than `serve --record` writes to one file: refused",
        path.display()
    )]
    TooLarge {
        /// The recording.
        path: PathBuf,
        /// The recorder's cap, in bytes.
        max: u64,
    },
    /// A line that is not a recording's.
    #[error("the recording {} line {line}: {message}: refused", path.display())]
    Line {
        /// The recording.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

/// One session file, read within the caps and every line of it checked.
pub struct Recording {
    path: PathBuf,
    text: String,
}

impl Recording {
    /// Read `path` and check each line: the first error refuses it.
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        let io = |source| ReadError::Io {
            path: path.to_owned(),
            source,
        };
        let max = MAX_RECORDING_BYTES + CAPPED_LINE_ROOM;
        let too_large = || ReadError::TooLarge {
            path: path.to_owned(),
            max,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        if file.metadata().map_err(io)?.len() > max {
            return Err(too_large());
        }
        let mut text = String::new();
        file.take(max + 1).read_to_string(&mut text).map_err(io)?;
        if text.len() as u64 > max {
            return Err(too_large());
        }
        let recording = Self {
            path: path.to_owned(),
            text,
        };
        recording.check()?;
        Ok(recording)
    }

    /// Each line parses, a session line only starts the file and a capped
    /// line only ends it.
    fn check(&self) -> Result<(), ReadError> {
        let mut lines = self.lines().peekable();
        let mut first = true;
        while let Some(line) = lines.next() {
            let (number, line) = line?;
            let misplaced = match line {
                Line::Session(_) if !first => Some("a session line only starts a recording"),
                Line::Capped { .. } if lines.peek().is_some() => Some("a capped line only ends a recording"),
                _ => None,
            };
            if let Some(message) = misplaced {
                return Err(self.error(number, message.to_owned()));
            }
            first = false;
        }
        Ok(())
    }

    /// Every line, parsed one at a time, with its number.
    pub fn lines(&self) -> impl Iterator<Item = Result<(usize, Line), ReadError>> + '_ {
        self.text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(n, l)| {
                let line = parse(l).map_err(|message| self.error(n + 1, message))?;
                Ok((n + 1, line))
            })
    }

    fn error(&self, line: usize, message: String) -> ReadError {
        ReadError::Line {
            path: self.path.clone(),
            line,
            message,
        }
    }
}

/// One line of a recording, within the caps, whose call names a plugin
/// and an export as the host does, and a digest.
fn parse(text: &str) -> Result<Line, String> {
    within_caps(text)?;
    let line: Line = serde_json::from_str(text).map_err(|e| format!("not a recorded call: {e}"))?;
    if let Line::Call(call) = &line {
        if !is_plugin_name(&call.plugin) {
            return Err(format!(
                "plugin {} is not a plugin's name (a file stem: no path, no control characters, \
                 at most {MAX_PLUGIN_NAME} bytes)",
                bounds::shown(&call.plugin)
            ));
        }
        if !bounds::is_tool_name(&call.export) {
            return Err(format!(
                "export {} is not an export's name",
                bounds::shown(&call.export)
            ));
        }
        if !is_digest(&call.digest) {
            return Err(format!(
                "digest {} is not `sha256:` and 64 hex digits",
                bounds::shown(&call.digest)
            ));
        }
    }
    Ok(line)
}

/// Whether `text` is within the bytes, nesting and entries a recording's
/// line may have. Counted over the text before it is parsed, so a line
/// over them never takes the memory its values would.
fn within_caps(text: &str) -> Result<(), String> {
    if text.len() > MAX_RECORDED_LINE_BYTES {
        return Err(format!(
            "the line is {} bytes, over the cap of {MAX_RECORDED_LINE_BYTES}",
            text.len()
        ));
    }
    let (mut deepest, mut entries) = (0usize, 0usize);
    json_structure::scan(text, |_, byte, depth| match byte {
        b'[' | b'{' => {
            deepest = deepest.max(depth);
            entries += 1;
        }
        b',' => entries += 1,
        _ => {}
    });
    if deepest > MAX_RECORDED_DEPTH {
        return Err(format!(
            "the line nests arrays and objects deeper than {MAX_RECORDED_DEPTH}"
        ));
    }
    if entries > MAX_RECORDED_ENTRIES {
        return Err(format!(
            "the line holds more than {MAX_RECORDED_ENTRIES} array elements and object members"
        ));
    }
    Ok(())
}

/// A name the loader could have given a plugin: a file stem.
fn is_plugin_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_PLUGIN_NAME
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\'])
        && !name.chars().any(bounds::is_control)
}

fn is_digest(digest: &str) -> bool {
    digest
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:00000000000000000000000000000000000000000000000000000000000000ff";

    fn call(args: serde_json::Value) -> Call {
        Call {
            plugin: "a".into(),
            digest: DIGEST.into(),
            export: "transform-args".into(),
            input: serde_json::json!({"tool": "t", "args": args}),
            output: Outcome::Ok(serde_json::json!({"n": 1})),
            micros: 5,
        }
    }

    fn read(path: &Path) -> Vec<Line> {
        let recording = Recording::open(path).unwrap();
        recording.lines().map(|l| l.unwrap().1).collect()
    }

    #[test]
    fn lines_round_trip_secrets_are_redacted_and_the_cap_ends_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Recorder::with_cap(dir.path(), 1000).unwrap();
        let redactor = Redactor::new([("tok", "s3cret")]);
        for n in 0..10 {
            recorder.call(&redactor, call(serde_json::json!({"k": format!("s3cret {n}")})));
        }
        let text = std::fs::read_to_string(recorder.path()).unwrap();
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.len() <= 1000 + 40, "{}", text.len());
        let lines = read(recorder.path());
        assert!(matches!(&lines[0], Line::Session(_)));
        assert!(matches!(lines.last(), Some(Line::Capped { bytes: 1000 })));
        let Line::Call(first) = &lines[1] else {
            panic!("{lines:?}")
        };
        assert_eq!(first.input["args"]["k"], "[redacted:tok] 0");
        assert!(lines.len() < 12, "calls past the cap were recorded");
    }

    #[test]
    fn a_call_no_reader_would_take_is_not_recorded_and_later_ones_are() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Recorder::create(dir.path()).unwrap();
        let mut deep = serde_json::json!(1);
        for _ in 0..MAX_RECORDED_DEPTH {
            deep = serde_json::json!([deep]);
        }
        recorder.call(&Redactor::none(), call(serde_json::json!({"deep": deep})));
        recorder.call(&Redactor::none(), call(serde_json::json!({"k": "kept"})));
        let lines = read(recorder.path());
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(matches!(&lines[1], Line::Call(c) if c.input["args"]["k"] == "kept"));
    }
}
