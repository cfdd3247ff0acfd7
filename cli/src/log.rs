//! The command's log: tracing's lines on stderr, each with every secret the
//! process holds replaced ([`toolhost::redact_secrets`]).
//!
//! toolhost's own lines are redacted where they are made; the libraries
//! below it (rmcp, hyper, wasmtime) log what they were handed, and an
//! upstream server's refusal that quotes the token it was sent reached the
//! log whole at `-v`. Every line passes here instead, whoever wrote it.

use std::io::Write;

use tracing_subscriber::fmt::MakeWriter;

/// Log lines to stderr, redacted.
pub struct RedactedStderr;

impl<'a> MakeWriter<'a> for RedactedStderr {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line(Vec::new())
    }
}

/// One event's line, held until it is whole, so a secret is never split
/// across two writes and missed.
pub struct Line(Vec<u8>);

impl Write for Line {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let line = toolhost::redact_secrets(&String::from_utf8_lossy(&self.0));
        // A closed stderr loses the log, as it would unredacted.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}
