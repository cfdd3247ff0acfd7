//! The audit ([`Audit`]): one JSON line per call of [`Toolhost::call_tool`]
//! (every `tools/call` the MCP front takes goes through it), appended to a
//! file opened once, at start, created private (0600).
//!
//! A line says who called ([`Caller`]: subject, how it was established,
//! the configured claims), the tool, the backend that served it, the
//! outcome, the duration, whether the answer came from the prefetch cache,
//! and the arguments' shape (their keys and the types of their values):
//! never a value, which may be a secret, nor a digest of one, which gives
//! away a value that can be guessed (a short code, yes or no). Every string of a line passes the
//! gate's redaction, as everything else the host writes out does, and a
//! line is at most [`MAX_AUDIT_LINE`] bytes.
//!
//! Under a policy, a line records its decision too (`allow` or `deny`,
//! and the rules that made it): the rules' names, never the values they
//! read.
//!
//! Prefetches are not recorded: they are the host's own calls of tools
//! their value models say are pure or read-only, made after a caller's
//! call that is recorded, and one that is served shows as that caller's
//! call, with `prefetched`.
//!
//! A line that cannot be written is logged and the call stands: the audit
//! records calls, it does not gate them. Owns the file and the line; not
//! who the caller is (`caller`), nor when a call is recorded (`toolhost`).
//!
//! [`Toolhost::call_tool`]: super::Toolhost::call_tool

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::Value;

use super::caller::Caller;
use super::policy::Decision;
use crate::bounds::cut;
use crate::gate::Gate;
use crate::output::{CallOutput, ToolError};

/// The most bytes one line of the audit holds.
pub(crate) const MAX_AUDIT_LINE: usize = 32 << 10;
/// The most bytes of a tool's or a backend's name recorded, or of a key.
const MAX_AUDITED_NAME: usize = 256;
/// Objects within the arguments whose keys are recorded; deeper ones are
/// `"object"`.
const MAX_SHAPE_DEPTH: usize = 4;
/// Keys of one object recorded; the rest are counted.
const MAX_SHAPE_KEYS: usize = 64;

/// The audit file, open for appending.
#[derive(Debug)]
pub struct Audit {
    path: PathBuf,
    /// One line written at a time, whole.
    file: Mutex<File>,
}

/// The audit file cannot be opened.
#[derive(Debug, thiserror::Error)]
#[error("cannot open the audit file {}: {source}", path.display())]
pub struct AuditError {
    path: PathBuf,
    #[source]
    source: std::io::Error,
}

impl Audit {
    /// Open `path` for appending, creating it (mode 0600) if it does not
    /// exist; its directory must.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, AuditError> {
        let path = path.into();
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&path)
            .map_err(|source| AuditError {
                path: path.clone(),
                source,
            })?;
        Ok(Self {
            path,
            file: Mutex::new(file),
        })
    }

    /// Append `record`, through `gate`.
    pub(super) fn append(&self, record: &Record<'_>, gate: &Gate) {
        let Some(mut line) = record.line(gate) else {
            tracing::error!("an audit line was not written: it did not pass the gate");
            return;
        };
        line.push('\n');
        // One write of the whole line: appended at the end, as a unit.
        let written = self
            .file
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .write_all(line.as_bytes());
        if let Err(e) = written {
            tracing::error!("the audit file {} was not written: {e}", self.path.display());
        }
    }
}

/// One call, as the audit records it.
#[derive(Serialize)]
pub(super) struct Record<'a> {
    /// When the call started, RFC 3339 in UTC.
    time: String,
    caller: &'a Caller,
    tool: String,
    /// `None` for a tool the catalog does not have.
    backend: Option<ServedBy>,
    outcome: Outcome,
    duration_ms: u64,
    /// Answered from the prefetch cache, not run for this call.
    prefetched: bool,
    /// The arguments' keys and the types of their values.
    args_shape: Value,
    /// How the policy decided the call, and by which rules; absent with no
    /// policy, or for a call refused before it was decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    policy: Option<Decision>,
}

/// What a call leaves for its record besides its outcome.
#[derive(Default)]
pub(super) struct Noted {
    /// The answer came from the prefetch cache.
    pub(super) prefetched: bool,
    /// How the policy decided the call, if one decided it.
    pub(super) decision: Option<Decision>,
}

/// The backend a tool runs on, by name.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ServedBy {
    Native,
    Plugin(String),
    Upstream(String),
}

/// How a call ended.
#[derive(Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Outcome {
    /// A result.
    Ok,
    /// A result the tool marked as an error.
    ToolError,
    /// No result: an unknown tool, arguments that do not fit, a hook's
    /// refusal.
    Refused,
    Cancelled,
}

impl<'a> Record<'a> {
    /// The call of `tool` by `caller`, with arguments of `args_shape`
    /// ([`shape_of`]), that ended in `result`;
    /// `(started, took)`: when it started and how long it took.
    pub(super) fn new(
        caller: &'a Caller,
        tool: &str,
        args_shape: Value,
        backend: Option<ServedBy>,
        result: &Result<CallOutput, ToolError>,
        (started, took): (SystemTime, Duration),
        noted: &Noted,
    ) -> Self {
        let outcome = match result {
            Ok(output) if output.is_error => Outcome::ToolError,
            Ok(_) => Outcome::Ok,
            Err(ToolError::Cancelled) => Outcome::Cancelled,
            Err(_) => Outcome::Refused,
        };
        let name = |text: String| cut(text, MAX_AUDITED_NAME);
        Self {
            time: rfc3339(started),
            caller,
            tool: name(tool.to_owned()),
            backend: backend.map(|b| match b {
                ServedBy::Native => ServedBy::Native,
                ServedBy::Plugin(n) => ServedBy::Plugin(name(n)),
                ServedBy::Upstream(n) => ServedBy::Upstream(name(n)),
            }),
            outcome,
            duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            prefetched: noted.prefetched,
            args_shape,
            policy: noted.decision.clone(),
        }
    }

    /// The record as one line of JSON, redacted by `gate`, within
    /// [`MAX_AUDIT_LINE`]: over it (claims grown by redaction or escapes),
    /// the claims are left out and said to be, and the subject is cut.
    /// `None` if the gate does not pass it.
    fn line(&self, gate: &Gate) -> Option<String> {
        let mut value = gate.message(serde_json::to_value(self).ok()?)?;
        let line = value.to_string();
        if line.len() <= MAX_AUDIT_LINE {
            return Some(line);
        }
        let caller = &mut value["caller"];
        if let Some(caller) = caller.as_object_mut() {
            caller.remove("claims");
            caller.insert("claims_left_out".into(), Value::Bool(true));
        }
        if let Value::String(subject) = &mut caller["subject"] {
            *subject = cut(std::mem::take(subject), MAX_AUDITED_NAME);
        }
        Some(value.to_string())
    }
}

/// What the audit keeps of a call's arguments: their shape.
pub(super) fn shape_of(args: &Value) -> Value {
    shape(args, 0)
}

/// `value`'s shape: an object's keys (at most [`MAX_SHAPE_KEYS`], the rest
/// counted under `"…"`), each with its value's shape, to
/// [`MAX_SHAPE_DEPTH`]; else the name of its type.
fn shape(value: &Value, depth: usize) -> Value {
    match value {
        Value::Object(map) if depth < MAX_SHAPE_DEPTH => {
            let mut out: serde_json::Map<String, Value> = map
                .iter()
                .take(MAX_SHAPE_KEYS)
                .map(|(key, v)| (cut(key.clone(), MAX_AUDITED_NAME), shape(v, depth + 1)))
                .collect();
            if map.len() > MAX_SHAPE_KEYS {
                out.insert("…".into(), Value::from(map.len() - MAX_SHAPE_KEYS));
            }
            Value::Object(out)
        }
        Value::Object(_) => "object".into(),
        Value::Array(_) => "array".into(),
        Value::String(_) => "string".into(),
        Value::Number(_) => "number".into(),
        Value::Bool(_) => "boolean".into(),
        Value::Null => "null".into(),
    }
}

/// `time` as RFC 3339 in UTC, to the millisecond.
fn rfc3339(time: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use std::time::UNIX_EPOCH;

    use super::*;
    use crate::pipeline::caller::MAX_CLAIM_BYTES;

    const SECRET: &str = "s3cr3t-Token-42";

    fn record<'a>(caller: &'a Caller, tool: &str, args: &Value) -> Record<'a> {
        let ok = Ok(CallOutput::error("it failed"));
        Record::new(
            caller,
            tool,
            shape_of(args),
            Some(ServedBy::Plugin("github".into())),
            &ok,
            (
                UNIX_EPOCH + Duration::from_millis(1_764_779_264_123),
                Duration::from_millis(5),
            ),
            &Noted {
                prefetched: true,
                decision: None,
            },
        )
    }

    #[test]
    fn a_line_holds_the_arguments_shape_never_their_values_and_is_redacted() {
        let caller = Caller::named_by_embedder(format!("user-{SECRET}"));
        let args = json!({"token": SECRET, "q": "x", "filter": {"open": true, "labels": ["a"], "n": 2}});
        let gate = Gate::new([("TOKEN", SECRET)]);
        let line: Value =
            serde_json::from_str(&record(&caller, "search", &args).line(&gate).unwrap()).unwrap();
        assert_eq!(
            line,
            json!({
                "time": "2025-12-03T16:27:44.123Z",
                "caller": {"subject": "user-[redacted:TOKEN]", "via": "embedder"},
                "tool": "search",
                "backend": {"plugin": "github"},
                "outcome": "tool_error",
                "duration_ms": 5,
                "prefetched": true,
                "args_shape": {
                    "token": "string",
                    "q": "string",
                    "filter": {"open": "boolean", "labels": "array", "n": "number"},
                },
            })
        );
    }

    #[test]
    fn a_shape_is_bounded_in_depth_and_keys() {
        let mut deep = json!("leaf");
        for _ in 0..100 {
            deep = json!({ "k": deep });
        }
        let mut cut_at = &shape(&deep, 0);
        for _ in 0..MAX_SHAPE_DEPTH {
            cut_at = &cut_at["k"];
        }
        assert_eq!(cut_at, &json!("object"));
        let wide: serde_json::Map<String, Value> = (0..1000).map(|i| (format!("k{i}"), json!(i))).collect();
        let wide = shape(&Value::Object(wide), 0);
        assert_eq!(wide.as_object().unwrap().len(), MAX_SHAPE_KEYS + 1);
        assert_eq!(wide["…"], json!(1000 - MAX_SHAPE_KEYS));
    }

    #[test]
    fn a_line_is_bounded_whatever_its_names_and_claims_hold() {
        // Claims at their cap, each grown sixfold by escapes.
        let escaped = "\u{1}".repeat(MAX_CLAIM_BYTES / 8);
        let wanted: Vec<String> = (0..8).map(|i| format!("c{i}")).collect();
        let mut claims = serde_json::Map::new();
        claims.insert("sub".into(), json!("\u{1}".repeat(255)));
        for name in &wanted {
            claims.insert(name.clone(), json!(escaped));
        }
        let caller = Caller::verified(claims, &wanted).unwrap();
        let gate = Gate::new([]);
        let tool = "\u{1}".repeat(1 << 20);
        let line = record(&caller, &tool, &Value::Null).line(&gate).unwrap();
        assert!(line.len() <= MAX_AUDIT_LINE, "{}", line.len());
        assert!(line.contains("[cut: 1048576 bytes in all]"), "{line}");

        // Past the line's cap (a caller built here with claims no token
        // could bring): the claims are left out, and said to be.
        let mut huge = serde_json::Map::new();
        huge.insert("sub".into(), json!("alice"));
        let mut caller = Caller::verified(huge, &[]).unwrap();
        caller = with_claims(caller, (0..64).map(|i| (format!("c{i}"), json!(escaped))));
        let line = record(&caller, "t", &Value::Null).line(&gate).unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        assert!(line.len() <= MAX_AUDIT_LINE, "{}", line.len());
        assert_eq!(
            value["caller"],
            json!({"subject": "alice", "via": "token", "claims_left_out": true})
        );
    }

    /// `caller` with `claims` besides its own, bypassing their bounds.
    fn with_claims(caller: Caller, claims: impl Iterator<Item = (String, Value)>) -> Caller {
        let mut token: serde_json::Map<String, Value> = claims.collect();
        let names: Vec<String> = token.keys().cloned().collect();
        token.insert("sub".into(), json!(caller.subject()));
        // Each value is within the claim cap; only their number is not.
        Caller::verified(token, &names).unwrap()
    }

    #[test]
    fn outcomes_and_times_are_named() {
        let caller = Caller::embedder();
        let outcome = |result: Result<CallOutput, ToolError>| {
            Record::new(
                &caller,
                "t",
                shape_of(&Value::Null),
                None,
                &result,
                (UNIX_EPOCH, Duration::ZERO),
                &Noted::default(),
            )
            .outcome
        };
        assert_eq!(outcome(Ok(CallOutput::error("no"))), Outcome::ToolError);
        assert_eq!(outcome(Err(ToolError::Cancelled)), Outcome::Cancelled);
        assert_eq!(outcome(Err(ToolError::NotFound("t".into()))), Outcome::Refused);
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn the_file_is_created_private_and_appended_to_and_a_bad_path_is_named() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let caller = Caller::embedder();
        for _ in 0..2 {
            let audit = Audit::open(&path).unwrap();
            audit.append(&record(&caller, "t", &Value::Null), &Gate::new([]));
        }
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
        let missing = dir.path().join("no-such-dir/audit.jsonl");
        let err = Audit::open(&missing).unwrap_err().to_string();
        assert!(err.contains(&missing.display().to_string()), "{err}");
    }
}
