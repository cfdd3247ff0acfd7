//! The command's standard output, whose reader may go before the end
//! (`toolhost tools | head -3`).
//!
//! A write there that finds the reader gone fails with [`StdoutClosed`]
//! inside its `io::Error`, and `main` ends on that quietly, as `cat` or
//! `rg` would, instead of printing `Broken pipe` or panicking in
//! `println!`. Only this output's broken pipe is marked: an upstream
//! server's or a registry's stays the error it is. `serve` over stdio
//! owns its standard output itself and does not write through here.

use std::io::{self, Write};

/// Standard output, locked while the value lives. Its writes fail with
/// [`StdoutClosed`] once the reader has gone.
pub struct Stdout(io::StdoutLock<'static>);

/// Standard output, for one command's lines.
pub fn stdout() -> Stdout {
    Stdout(io::stdout().lock())
}

/// `println!` on [`stdout`], returning the write's result instead of
/// panicking when the reader has gone.
#[macro_export]
macro_rules! say {
    () => {
        ::std::io::Write::write_all(&mut $crate::output::stdout(), b"\n")
    };
    ($($arg:tt)*) => {
        ::std::io::Write::write_fmt(&mut $crate::output::stdout(), format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` on [`stdout`], as [`say!`] without the line's end.
#[macro_export]
macro_rules! say_part {
    ($($arg:tt)*) => {
        ::std::io::Write::write_fmt(&mut $crate::output::stdout(), format_args!($($arg)*))
    };
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(marked)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(marked)
    }
}

/// The reader of standard output has gone: the command stops writing.
#[derive(Debug, thiserror::Error)]
#[error("standard output was closed by its reader")]
pub struct StdoutClosed;

fn marked(error: io::Error) -> io::Error {
    match error.kind() {
        io::ErrorKind::BrokenPipe => io::Error::new(io::ErrorKind::BrokenPipe, StdoutClosed),
        _ => error,
    }
}

/// Whether `error` came of writing to a standard output whose reader has
/// gone, which is no failure of the command.
pub fn closed(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .and_then(io::Error::get_ref)
            .is_some_and(|inner| inner.is::<StdoutClosed>())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_marked_broken_pipe_is_a_closed_output() {
        let ours = anyhow::Error::from(marked(io::ErrorKind::BrokenPipe.into()));
        assert!(closed(&ours));
        assert!(closed(&ours.context("listing the tools")));
        // An upstream server's pipe, unmarked: still an error.
        let theirs = anyhow::Error::from(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(!closed(&theirs));
        let other = anyhow::Error::from(marked(io::ErrorKind::PermissionDenied.into()));
        assert!(!closed(&other));
    }
}
