//! Compiling a plugin component to native code: in this process, or in a
//! worker process that is killed past a deadline.
//!
//! Cranelift cannot be interrupted, and its register allocator takes
//! super-linear time on some shapes of code: a 1.9 MB component of one
//! loop holding 40,000 locals was still compiling after ten minutes, with
//! the host serving nothing meanwhile. Wasmtime does not count that as a
//! flaw of its own, and advises hosts that compile code from strangers to
//! compile it in a separate process. A [`Compiler::Worker`] is such a
//! process: this program run again ([`run_worker`]), handed the
//! component's bytes, answering its compiled code. Past its deadline
//! ([`COMPILE_DEADLINE`] by default) it is killed and the plugin refused,
//! naming why; the rest load. Its memory is capped at [`WORKER_MEMORY`].
//!
//! The worker builds its engine with the host's code settings
//! (`engine::compile_engine`), so the code it answers is for the host's
//! engine; wasmtime checks that when the code is loaded, and refuses code
//! of another version or configuration.
//! Owns how code is compiled; not where it is kept (`cache`).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::bounds::MAX_COMPONENT_BYTES;

/// Longest a worker may take to compile one component. The largest real
/// plugins (a Python runtime, 18 MB) compile in seconds.
pub const COMPILE_DEADLINE: Duration = Duration::from_secs(120);

/// The data a worker may hold: a compile of a language runtime's 18 MB
/// takes half a GiB.
pub const WORKER_MEMORY: u64 = 4 << 30;

/// Largest compiled code a worker may answer: native code is a few times
/// the size of its WebAssembly.
const MAX_COMPILED_BYTES: u64 = 8 * MAX_COMPONENT_BYTES;

/// A worker's compile that was stopped at its deadline.
#[derive(Debug, thiserror::Error)]
#[error(
    "its compile took over {} s, and was stopped: a component shaped to take the compiler that long is refused",
    .0.as_secs()
)]
pub struct CompileStopped(pub Duration);

/// How plugins are compiled.
#[derive(Debug, Clone, Default)]
pub enum Compiler {
    /// In this process, on the loading thread: what a library embedding
    /// gets unless it names a worker. A component that takes the register
    /// allocator minutes holds that thread (and the load) for as long.
    #[default]
    InProcess,
    /// In a process of `program` run with `args`, which calls
    /// [`run_worker`] (the `toolhost` command line: `toolhost
    /// __compile-plugin`), killed past `deadline`.
    Worker {
        /// The program, usually this one (`std::env::current_exe`).
        program: PathBuf,
        /// Its arguments, which make it call [`run_worker`].
        args: Vec<String>,
        /// How long one compile may take ([`COMPILE_DEADLINE`]).
        deadline: Duration,
    },
}

impl Compiler {
    /// `bytes` compiled for `engine`.
    pub(super) fn compile(&self, engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Component> {
        match self {
            Compiler::InProcess => Component::new(engine, bytes),
            Compiler::Worker {
                program,
                args,
                deadline,
            } => {
                let compiled = in_worker(program, args, bytes, *deadline)?;
                // SAFETY: the bytes are what this program, run as a worker,
                // serialized from a component it compiled just now; they came
                // over its pipe, never through a file another could write.
                // wasmtime checks that they are for this engine.
                unsafe { Component::deserialize(engine, &compiled) }
            }
        }
    }
}

/// The worker's side: the component on standard input, its compiled code
/// on standard output; why it failed on standard error, exiting non-zero.
/// Its data is capped at [`WORKER_MEMORY`] first, so a compile that grows
/// without bound fails here, not on the host.
pub fn run_worker() -> std::process::ExitCode {
    let cap = rustix::process::Rlimit {
        current: Some(WORKER_MEMORY),
        maximum: Some(WORKER_MEMORY),
    };
    let compiled = rustix::process::setrlimit(rustix::process::Resource::Data, cap)
        .map_err(|e| wasmtime::Error::msg(format!("cannot cap its memory: {e}")))
        .and_then(|()| {
            let mut bytes = Vec::new();
            std::io::stdin()
                .take(MAX_COMPONENT_BYTES + 1)
                .read_to_end(&mut bytes)?;
            if bytes.len() as u64 > MAX_COMPONENT_BYTES {
                return Err(wasmtime::Error::msg("the component is over the cap"));
            }
            let engine = super::engine::compile_engine()?;
            Component::new(&engine, &bytes)?.serialize()
        });
    match compiled.and_then(|code| Ok(std::io::stdout().lock().write_all(&code)?)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `bytes` compiled by a worker `program args`, given `deadline`.
fn in_worker(
    program: &std::path::Path,
    args: &[String],
    bytes: &[u8],
    deadline: Duration,
) -> wasmtime::Result<Vec<u8>> {
    // With no environment: the host's holds the secrets its plugins are
    // granted, and a compiler needs none of them.
    let mut child = Command::new(program)
        .args(args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            wasmtime::Error::msg(format!("cannot start its compiler ({}): {e}", program.display()))
        })?;
    let (mut stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let started = Instant::now();
    // Each pipe on its own thread, so that a worker writing while it reads
    // never waits on us; they end when the worker's ends of the pipes close.
    let outcome = std::thread::scope(|scope| {
        scope.spawn(move || stdin.as_mut().map(|stdin| stdin.write_all(bytes)));
        let code = scope.spawn(move || read_capped(stdout, MAX_COMPILED_BYTES));
        let why = scope.spawn(move || read_capped(stderr, crate::bounds::MAX_ERROR_TEXT as u64));
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if started.elapsed() < deadline => std::thread::sleep(Duration::from_millis(10)),
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break Err(Stop::Deadline);
                }
                Err(e) => {
                    let _ = child.kill();
                    break Err(Stop::Unwaited(format!(
                        "its compiler could not be waited for: {e}"
                    )));
                }
            }
        };
        let code = code.join().unwrap_or_default();
        let why = why.join().unwrap_or_default();
        (status, code, why)
    });
    match outcome {
        (Err(Stop::Deadline), _, _) => Err(wasmtime::Error::new(CompileStopped(deadline))),
        (Err(Stop::Unwaited(why)), _, _) => Err(wasmtime::Error::msg(why)),
        (Ok(status), Some(code), _) if status.success() => Ok(code),
        (Ok(_), None, _) => Err(wasmtime::Error::msg(format!(
            "its compiled code is over {} MiB",
            MAX_COMPILED_BYTES >> 20
        ))),
        (Ok(status), _, why) => {
            let why = why
                .map(|w| String::from_utf8_lossy(&w).trim().to_owned())
                .unwrap_or_default();
            Err(wasmtime::Error::msg(match why.is_empty() {
                true => format!("its compiler failed ({status})"),
                false => why,
            }))
        }
    }
}

/// Why a worker was not waited for to its end.
enum Stop {
    Deadline,
    Unwaited(String),
}

/// All of `pipe`, or `None` if it is over `cap` bytes (the rest is read
/// and dropped, so the writer is not left blocked).
fn read_capped(pipe: Option<impl Read>, cap: u64) -> Option<Vec<u8>> {
    let mut pipe = pipe?;
    let mut bytes = Vec::new();
    (&mut pipe).take(cap + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > cap {
        let _ = std::io::copy(&mut pipe, &mut std::io::sink());
        return None;
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str, deadline: Duration) -> Compiler {
        Compiler::Worker {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            deadline,
        }
    }

    /// A worker that fails is named by what it said, or by its status; one
    /// past its deadline is stopped; one answering what is no compiled code
    /// is refused by wasmtime, not run. It is given no environment.
    #[test]
    fn a_worker_that_fails_hangs_or_answers_garbage_is_refused() {
        let engine = super::super::engine::new_engine().unwrap();
        let second = Duration::from_secs(1);
        let error = |compiler: Compiler| compiler.compile(&engine, b"\0asm").expect_err("refused");

        let said = error(shell("cat > /dev/null; echo 'no such thing' >&2; exit 3", second));
        assert_eq!(format!("{said:#}"), "no such thing");
        // None of the host's environment (where plugins' secrets are).
        assert!(std::env::var_os("HOME").is_some());
        let environment = error(shell(
            "cat > /dev/null; echo \"HOME=${HOME:-unset}\" >&2; exit 1",
            second,
        ));
        assert_eq!(format!("{environment:#}"), "HOME=unset");
        let status = error(shell("cat > /dev/null; exit 3", second));
        assert!(
            format!("{status:#}").contains("its compiler failed (exit status: 3)"),
            "{status:#}"
        );
        let hung = error(shell("exec sleep 30", second));
        assert!(hung.downcast_ref::<CompileStopped>().is_some(), "{hung:#}");
        let garbage = error(shell("cat; echo more", second));
        assert!(!format!("{garbage:#}").is_empty());
        let missing = error(Compiler::Worker {
            program: "/nonexistent/toolhost".into(),
            args: Vec::new(),
            deadline: second,
        });
        assert!(
            format!("{missing:#}").starts_with("cannot start its compiler (/nonexistent/toolhost)"),
            "{missing:#}"
        );
    }
}
