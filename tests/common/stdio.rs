//! A `toolhost serve` on stdio spoken to line by line, as a client that
//! writes its own JSON-RPC would: for what an SDK client would not send
//! (a raw 2026-07-28 request) or hides (the exact answer).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};

use serde_json::{Value, json};

/// A running `toolhost serve` on stdio.
pub struct StdioServe {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl StdioServe {
    /// Spawn `command` (a `toolhost ... serve`) with its stdin, stdout and
    /// stderr piped.
    pub fn spawn(command: &mut Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self { child, stdin, stdout }
    }

    /// Write one message, on its line.
    pub fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open until `end`");
        writeln!(stdin, "{message}").unwrap();
    }

    /// Its stdin, to write to from elsewhere (another thread); `send` and
    /// `end` no longer can.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin is taken once")
    }

    /// The next message it writes; `None` once it closes its stdout.
    pub fn message(&mut self) -> Option<Value> {
        let mut line = String::new();
        (self.stdout.read_line(&mut line).unwrap() > 0).then(|| serde_json::from_str(&line).unwrap())
    }

    /// The answer to request `id`, skipping whatever comes before it (a
    /// notification, another answer); panics if the process ends first.
    pub fn answer(&mut self, id: u64) -> Value {
        loop {
            let message = self
                .message()
                .unwrap_or_else(|| panic!("serve ended before answering {id}"));
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Send request `id` of `method` with `params`, and its answer.
    pub fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(id)
    }

    /// The 2025-11-25 handshake as request 1: `initialize`'s answer, after
    /// which `notifications/initialized` is sent.
    pub fn initialize(&mut self, initialize: &Value) -> Value {
        self.send(initialize);
        let answer = self.answer(1);
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer
    }

    /// Close its stdin (unless taken), which ends it, and what it wrote.
    pub fn end(mut self) -> Output {
        drop(self.stdin.take());
        self.child.wait_with_output().unwrap()
    }
}
