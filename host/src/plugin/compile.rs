//! Compiling a plugin component to native code: in this process, or in a
//! worker process that is stopped past its CPU or wall time.
//!
//! Cranelift cannot be interrupted, and its register allocator takes
//! super-linear time on some shapes of code: a 1.9 MB component of one
//! loop holding 40,000 locals was still compiling after ten minutes, with
//! the host serving nothing meanwhile. Wasmtime does not count that as a
//! flaw of its own, and advises hosts that compile code from strangers to
//! compile it in a separate process. A [`Compiler::Worker`] is such a
//! process: this program run again ([`run_worker`]), handed the
//! component's bytes, answering its compiled code. It is stopped past its
//! CPU time ([`COMPILE_CPU`] by default: counted in CPU, not in wall time,
//! so a legitimate compile slowed by a busy machine is not refused), or
//! past its wall time if it stops using CPU; the plugin is refused, naming
//! why, and the rest load. Its data is capped at [`WORKER_MEMORY`]. The
//! kernel holds it to both (`prlimit`), set by the host as it starts it.
//! At most [`COMPILE_WORKERS`] run at once; the rest wait their turn.
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

/// The CPU time a worker may spend compiling one component, over all its
/// threads. The largest real plugins, whole language runtimes, take 14 s
/// of it (the Python reference plugin, 18 MB, on 2 cores).
pub const COMPILE_CPU: Duration = Duration::from_secs(120);

/// The wall time a worker may take, for one that stops using CPU: five
/// times [`COMPILE_CPU`], as six language runtimes compiled at once on 2
/// busy cores took 51 s of wall time each.
pub const COMPILE_WALL: Duration = Duration::from_secs(600);

/// The data a worker may hold: a compile of a language runtime's 18 MB
/// takes half a GiB.
pub const WORKER_MEMORY: u64 = 4 << 30;

/// How many workers compile at once in this process; more wait their
/// turn. Each already compiles on every core, so more add no speed, only
/// their memory: a directory of strangers' plugins is compiled within two
/// workers' [`WORKER_MEMORY`], however many it holds. (Fifteen plugins,
/// four of them language runtimes, compiled in the same 19 s two at a
/// time as all at once, the workers' memory at its peak 0.8 GB against
/// 1.2 GB.)
pub const COMPILE_WORKERS: usize = 2;

/// Largest compiled code a worker may answer: native code is a few times
/// the size of its WebAssembly.
const MAX_COMPILED_BYTES: u64 = 8 * MAX_COMPONENT_BYTES;

/// A worker's compile that was stopped past its CPU or wall time.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "its compile took over {0}, and was stopped: a component shaped to take the compiler that long is refused"
)]
pub struct CompileStopped(String);

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
    /// __compile-plugin`), stopped past `cpu` or `wall`.
    Worker {
        /// The program, usually this one (`std::env::current_exe`).
        program: PathBuf,
        /// Its arguments, which make it call [`run_worker`].
        args: Vec<String>,
        /// The CPU time one compile may take ([`COMPILE_CPU`]), in whole
        /// seconds.
        cpu: Duration,
        /// The wall time one compile may take ([`COMPILE_WALL`]).
        wall: Duration,
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
                cpu,
                wall,
            } => {
                let compiled = {
                    let _turn = WORKERS.take();
                    in_worker(program, args, bytes, *cpu, *wall)?
                };
                // SAFETY: the bytes are what this program, run as a worker,
                // serialized from a component it compiled just now; they came
                // over its pipe, never through a file another could write.
                // wasmtime checks that they are for this engine.
                unsafe { Component::deserialize(engine, &compiled) }
            }
        }
    }
}

/// The turns of [`COMPILE_WORKERS`], taken on the loading threads
/// (`spawn_blocking`), which may wait.
static WORKERS: Turns = Turns::new(COMPILE_WORKERS);

/// A counting semaphore for blocking threads.
struct Turns {
    free: std::sync::Mutex<usize>,
    freed: std::sync::Condvar,
}

impl Turns {
    const fn new(n: usize) -> Self {
        Self {
            free: std::sync::Mutex::new(n),
            freed: std::sync::Condvar::new(),
        }
    }

    /// A turn, held until the guard drops; waits for one to be free.
    fn take(&self) -> Turn<'_> {
        let free = self
            .free
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut free = self
            .freed
            .wait_while(free, |free| *free == 0)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *free -= 1;
        Turn(self)
    }
}

/// A turn taken, given back as it drops.
struct Turn<'a>(&'a Turns);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        *self
            .0
            .free
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        self.0.freed.notify_one();
    }
}

/// The worker's side: the component on standard input, its compiled code
/// on standard output; why it failed on standard error, exiting non-zero.
/// The host that started it caps its CPU time and data.
pub fn run_worker() -> std::process::ExitCode {
    let compiled = (|| {
        let mut bytes = Vec::new();
        std::io::stdin()
            .take(MAX_COMPONENT_BYTES + 1)
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > MAX_COMPONENT_BYTES {
            return Err(wasmtime::Error::msg("the component is over the cap"));
        }
        let engine = super::engine::compile_engine()?;
        Component::new(&engine, &bytes)?.serialize()
    })();
    match compiled.and_then(|code| Ok(std::io::stdout().lock().write_all(&code)?)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Hold the process `pid` to `cpu` of CPU time (`SIGXCPU` past it, then
/// `SIGKILL` a second on), [`WORKER_MEMORY`] of data, and no core dump.
fn cap(pid: u32, cpu: Duration) -> std::io::Result<()> {
    use rustix::process::{Pid, Resource, Rlimit, prlimit};
    let pid = Pid::from_raw(pid.cast_signed()).ok_or_else(|| std::io::Error::other("no process id"))?;
    let limit = |current: u64, maximum: u64| Rlimit {
        current: Some(current),
        maximum: Some(maximum),
    };
    let seconds = cpu.as_secs().max(1);
    prlimit(Some(pid), Resource::Cpu, limit(seconds, seconds + 1))?;
    prlimit(Some(pid), Resource::Data, limit(WORKER_MEMORY, WORKER_MEMORY))?;
    prlimit(Some(pid), Resource::Core, limit(0, 0))?;
    Ok(())
}

/// `bytes` compiled by a worker `program args`, given `cpu` and `wall`.
fn in_worker(
    program: &std::path::Path,
    args: &[String],
    bytes: &[u8],
    cpu: Duration,
    wall: Duration,
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
    // Capped before it is handed the component, the only input it works on.
    if let Err(e) = cap(child.id(), cpu) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(wasmtime::Error::msg(format!("cannot cap its compiler: {e}")));
    }
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
                Ok(None) if started.elapsed() < wall => std::thread::sleep(Duration::from_millis(10)),
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break Err(Stop::Wall);
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
    use std::os::unix::process::ExitStatusExt;
    match outcome {
        (Err(Stop::Wall), _, _) => Err(wasmtime::Error::new(CompileStopped(format!(
            "{} s",
            wall.as_secs()
        )))),
        (Ok(status), _, _) if status.signal() == Some(rustix::process::Signal::XCPU.as_raw()) => Err(
            wasmtime::Error::new(CompileStopped(format!("{} s of CPU", cpu.as_secs().max(1)))),
        ),
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
    Wall,
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

    fn shell(script: &str, limit: Duration) -> Compiler {
        Compiler::Worker {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            cpu: limit,
            wall: limit * 2,
        }
    }

    /// A worker that fails is named by what it said, or by its status; one
    /// past its CPU time is stopped by the kernel, one that uses none past
    /// its wall time by the host; one answering what is no compiled code is
    /// refused by wasmtime, not run. It is given no environment.
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
        let spinning = error(shell("while :; do :; done", second));
        assert_eq!(
            spinning
                .downcast_ref::<CompileStopped>()
                .map(ToString::to_string)
                .as_deref(),
            Some(
                "its compile took over 1 s of CPU, and was stopped: a component shaped to take the compiler that long is refused"
            )
        );
        let hung = error(shell("exec sleep 30", second));
        assert!(
            format!("{hung:#}").starts_with("its compile took over 2 s, and"),
            "{hung:#}"
        );
        let garbage = error(shell("cat; echo more", second));
        assert!(
            format!("{garbage:#}").starts_with("failed to parse precompiled artifact"),
            "{garbage:#}"
        );
        let missing = error(Compiler::Worker {
            program: "/nonexistent/toolhost".into(),
            args: Vec::new(),
            cpu: second,
            wall: second,
        });
        assert!(
            format!("{missing:#}").starts_with("cannot start its compiler (/nonexistent/toolhost)"),
            "{missing:#}"
        );
    }

    /// However many plugins load at once, at most [`COMPILE_WORKERS`]
    /// workers run; the rest wait their turn.
    #[test]
    fn workers_compile_a_few_at_a_time() {
        let engine = super::super::engine::new_engine().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (running, counts) = (dir.path().join("running"), dir.path().join("counts"));
        std::fs::create_dir(&running).unwrap();
        // Each marks itself running, notes how many are, and lingers.
        let script = format!(
            "cat > /dev/null; touch '{r}'/$$; ls '{r}' | wc -l >> '{c}'; sleep 0.2; rm '{r}'/$$; exit 1",
            r = running.display(),
            c = counts.display(),
        );
        std::thread::scope(|scope| {
            for _ in 0..6 {
                scope.spawn(|| shell(&script, Duration::from_secs(10)).compile(&engine, b"\0asm"));
            }
        });
        let counts: Vec<usize> = std::fs::read_to_string(&counts)
            .unwrap()
            .lines()
            .map(|n| n.trim().parse().unwrap())
            .collect();
        assert_eq!(counts.len(), 6, "{counts:?}");
        assert!(counts.iter().all(|&n| n <= COMPILE_WORKERS), "{counts:?}");
    }
}
