//! One `toolhost serve --http` child process, for the tests and the
//! benches: started from a command the caller prepared, its stderr kept
//! line by line, its address read from the line announcing it within a
//! bound, killed when dropped. A server that exits or never announces
//! itself is an error carrying what it printed, never a hang.

use std::io::BufRead;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a server may take to start serving.
const START_LIMIT: Duration = Duration::from_secs(120);

/// What toolhost prints once it serves, before the URL.
const ANNOUNCED: &str = "toolhost: serving MCP at ";

pub struct Served {
    child: Child,
    /// The endpoint, `http://ADDR/mcp`.
    pub url: String,
    /// The address it announced (`0.0.0.0:PORT` when bound to every
    /// interface).
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

/// The server exited, or did not announce itself in time.
#[derive(Debug)]
pub struct NotServing {
    pub exited: bool,
    /// Everything it wrote to stderr.
    pub log: String,
}

impl std::fmt::Display for NotServing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = if self.exited {
            "exited".to_owned()
        } else {
            format!("did not serve within {START_LIMIT:?}")
        };
        write!(f, "toolhost {why}:\n{}", self.log)
    }
}

impl std::error::Error for NotServing {}

impl Served {
    /// Spawn `command` (a `toolhost ... serve --http ADDR ...`) with stdin
    /// and stdout closed, and wait until it announces its address.
    pub fn start(mut command: Command) -> Result<Self, NotServing> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| NotServing {
                exited: true,
                log: format!("cannot start {:?}: {e}", command.get_program()),
            })?;
        let stderr = child.stderr.take().expect("piped");
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let sink = log.clone();
        let reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix(ANNOUNCED) {
                    let _ = url_tx.send(url.trim().to_owned());
                }
                sink.lock().unwrap().push(line);
            }
        });
        let text = |log: &Mutex<Vec<String>>| log.lock().unwrap().join("\n");
        let announced = url_rx.recv_timeout(START_LIMIT);
        let parsed = announced.as_ref().ok().and_then(|url| {
            let addr = url.strip_prefix("http://")?.strip_suffix("/mcp")?;
            addr.parse().ok()
        });
        match (announced, parsed) {
            (Ok(url), Some(addr)) => Ok(Self {
                child,
                url,
                addr,
                log,
            }),
            (Ok(url), None) => {
                let _ = child.kill();
                Err(NotServing {
                    exited: false,
                    log: format!(
                        "announced an address that is not http://ADDR/mcp: {url}\n{}",
                        text(&log)
                    ),
                })
            }
            (Err(e), _) => {
                let exited = matches!(e, std::sync::mpsc::RecvTimeoutError::Disconnected);
                let _ = child.kill();
                let _ = child.wait();
                // Its stderr is closed now: the reader has every line.
                let _ = reader.join();
                Err(NotServing {
                    exited,
                    log: text(&log),
                })
            }
        }
    }

    /// Everything it wrote to stderr so far.
    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// The lines it wrote to stderr up to the first containing `needle`
    /// (that one included), waiting for it within the start bound; panics
    /// with everything it wrote if it never comes.
    pub fn wait_for(&self, needle: &str) -> Vec<String> {
        let deadline = std::time::Instant::now() + START_LIMIT;
        loop {
            {
                let log = self.log.lock().unwrap();
                if let Some(at) = log.iter().position(|l| l.contains(needle)) {
                    return log[..=at].to_vec();
                }
            }
            assert!(
                std::time::Instant::now() < deadline,
                "toolhost never wrote `{needle}` within {START_LIMIT:?}:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Ask it to end as a service manager does (`SIGTERM`), and wait for
    /// it to exit, up to `within`: its exit status, or `None` if it is
    /// still running.
    pub fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).expect("a child's pid is positive");
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("signalling the server");
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("waiting for the server") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Kill it (SIGKILL: no graceful shutdown).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.kill();
    }
}
