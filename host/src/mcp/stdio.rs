//! stdin and stdout as the stdio transport reads and writes them.
//!
//! tokio's `stdin()` and `stdout()` do every read and write on its blocking
//! thread pool, because a terminal or a file cannot be polled. Each message
//! then waits on thread hand-offs both ways, which was most of what a
//! proxied call cost. An MCP client starts its server with pipes (Python,
//! Rust) or a socket pair (Node's child processes); both can be polled, so
//! they are made non-blocking and driven by tokio's reactor directly.
//! Anything else (a terminal, a regular file) keeps tokio's types.
//!
//! Non-blocking mode belongs to the open file, which the client created for
//! this process; it is not restored at exit.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

pub type Reader = Box<dyn AsyncRead + Send + Unpin>;
pub type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// The process's stdin and stdout for the MCP stdio transport. Must be
/// called inside the tokio runtime.
pub fn streams() -> (Reader, Writer) {
    let reader = duplicate(io::stdin().as_fd())
        .and_then(|fd| match kind(&fd)? {
            Kind::Fifo => Some(Box::new(pipe::Receiver::from_owned_fd(fd).ok()?) as Reader),
            Kind::Socket => Some(Box::new(socket(fd)?) as Reader),
        })
        .unwrap_or_else(|| Box::new(tokio::io::stdin()));
    let writer = duplicate(io::stdout().as_fd())
        .and_then(|fd| match kind(&fd)? {
            Kind::Fifo => Some(Box::new(pipe::Sender::from_owned_fd(fd).ok()?) as Writer),
            Kind::Socket => Some(Box::new(socket(fd)?) as Writer),
        })
        .unwrap_or_else(|| Box::new(tokio::io::stdout()));
    (reader, writer)
}

enum Kind {
    Fifo,
    Socket,
}

fn duplicate(fd: std::os::fd::BorrowedFd<'_>) -> Option<OwnedFd> {
    fd.try_clone_to_owned().ok()
}

/// Whether `fd` can be polled: a pipe or a socket.
fn kind(fd: &OwnedFd) -> Option<Kind> {
    let file = File::from(fd.try_clone().ok()?);
    let kind = file.metadata().ok()?.file_type();
    if kind.is_fifo() {
        Some(Kind::Fifo)
    } else if kind.is_socket() {
        Some(Kind::Socket)
    } else {
        None
    }
}

fn socket(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(fd);
    stream.set_nonblocking(true).ok()?;
    tokio::net::UnixStream::from_std(stream).ok()
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixStream;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn pipes_and_sockets_are_polled_and_files_are_not() {
        let (read_end, write_end) = pipe_pair();
        assert!(matches!(kind(&read_end), Some(Kind::Fifo)));
        let mut receiver = pipe::Receiver::from_owned_fd(read_end).unwrap();
        let mut sender = pipe::Sender::from_owned_fd(write_end).unwrap();
        sender.write_all(b"{}\n").await.unwrap();
        let mut got = [0u8; 3];
        receiver.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"{}\n");

        let (a, _b) = UnixStream::pair().unwrap();
        assert!(matches!(kind(&OwnedFd::from(a)), Some(Kind::Socket)));
        let file = tempfile::tempfile().unwrap();
        assert!(kind(&OwnedFd::from(file)).is_none());
    }

    fn pipe_pair() -> (OwnedFd, OwnedFd) {
        let (r, w) = std::io::pipe().unwrap();
        (OwnedFd::from(r), OwnedFd::from(w))
    }
}
