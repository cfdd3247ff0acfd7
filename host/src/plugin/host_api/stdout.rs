//! A guest's stdout and stderr as WASI streams that cut what is written
//! into lines for the plugin's log.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

use super::log::{LogBudget, LogLevel};
use crate::bounds::MAX_LOG_LINE;

/// A guest's stdout or stderr, cut into lines for the host log.
#[derive(Clone)]
pub(crate) struct LogStream {
    log: Arc<LogBudget>,
    stream: &'static str,
    level: LogLevel,
}

impl LogStream {
    pub fn new(log: Arc<LogBudget>, stream: &'static str, level: LogLevel) -> Self {
        Self { log, stream, level }
    }
}

impl IsTerminal for LogStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogStream {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(LineWriter {
            sink: self.clone(),
            pending: Vec::new(),
        })
    }
}

struct LineWriter {
    sink: LogStream,
    pending: Vec<u8>,
}

impl LineWriter {
    fn flush_lines(&mut self, all: bool) {
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            self.emit(&line[..line.len() - 1]);
        }
        if all || self.pending.len() > MAX_LOG_LINE {
            let rest = std::mem::take(&mut self.pending);
            if !rest.is_empty() {
                self.emit(&rest);
            }
        }
    }

    fn emit(&self, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes).trim_end_matches('\r').to_owned();
        self.sink.log.emit(self.sink.level, self.sink.stream, text);
    }
}

impl AsyncWrite for LineWriter {
    fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.pending.extend_from_slice(buf);
        self.flush_lines(false);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.flush_lines(true);
        Poll::Ready(Ok(()))
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        self.flush_lines(true);
    }
}
