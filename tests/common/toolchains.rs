//! What some tests need beyond Rust and its `wasm32-wasip2` target, each
//! installed or built by a `make` target, and what a test does without it:
//! it is skipped with one line naming what it needs and the target that
//! provides it, so that `cargo test` on a clone with Rust alone passes.
//! With `TOOLHOST_TEST_ALL=1` (set by `make test`, and so by CI) nothing is
//! skipped: a missing one fails the test with the same line.
//!
//! A test states its needs first: `needs!(Python, Upstream);`.

use std::io::Write;
use std::path::{Path, PathBuf};

/// One thing beyond Rust that a test needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// The Python venv: the MCP SDK the drivers use, componentize-py,
    /// wasm-tools, zig and go (`make venv`).
    Python,
    /// componentize-js for the JavaScript plugins (`make toolchains`).
    Node,
    /// The reference plugins in JavaScript, Python, C and Go, and the
    /// JavaScript tool plugin (`make lang-plugins`).
    LangPlugins,
    /// The upstream MCP servers from npm (`make upstream`).
    Upstream,
    /// `redis-server` (`make redis`).
    Redis,
    /// `docker-registry`, Distribution's OCI registry (`make docker-registry`).
    Registry,
    /// The task trees of the public agent trajectories (`make replay-trees`).
    ReplayTrees,
    /// The bundled plugins in `build/plugins`, what `toolhost` serves with
    /// no plugin directory of its own (`make bundled`).
    Bundled,
}

impl Needs {
    /// The `make` target that provides it.
    fn target(self) -> &'static str {
        match self {
            Needs::Python => "venv",
            Needs::Node => "toolchains",
            Needs::LangPlugins => "lang-plugins",
            Needs::Upstream => "upstream",
            Needs::Redis => "redis",
            Needs::Registry => "docker-registry",
            Needs::ReplayTrees => "replay-trees",
            Needs::Bundled => "bundled",
        }
    }

    /// Whether it is here: the stamp its target leaves when it is done.
    fn is_here(self) -> bool {
        let repo = repo();
        match self {
            Needs::Python => repo.join("build/venv/.installed").is_file(),
            Needs::Node => repo
                .join("guest-plugins/reference-js/node_modules/.installed")
                .is_file(),
            Needs::LangPlugins => [
                "build/reference/reference-go.wasm",
                "build/plugins-lang/tool-js.wasm",
            ]
            .iter()
            .all(|p| repo.join(p).is_file()),
            Needs::Upstream => repo.join("tests/upstream/node_modules/.installed").is_file(),
            Needs::Redis => on_path("redis-server") && on_path("redis-cli"),
            Needs::Registry => on_path("docker-registry"),
            Needs::ReplayTrees => repo.join("build/replay/trees/.unpacked").is_file(),
            Needs::Bundled => repo.join("build/plugins").is_dir(),
        }
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Whether every one of `needs` is here. If one is not, the test is
/// skipped (one line on stderr) and this is false; with `TOOLHOST_TEST_ALL=1`
/// it panics instead.
pub fn available(needs: &[Needs]) -> bool {
    let missing: Vec<Needs> = needs.iter().copied().filter(|n| !n.is_here()).collect();
    if missing.is_empty() {
        return true;
    }
    let what = missing
        .iter()
        .map(|n| format!("{n:?} (`make {}`)", n.target()))
        .collect::<Vec<_>>()
        .join(", ");
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    if std::env::var_os("TOOLHOST_TEST_ALL").is_some_and(|v| v == "1") {
        panic!("{test} needs {what}, and TOOLHOST_TEST_ALL=1 skips nothing");
    }
    // Past the test harness's capture (which takes only `eprintln!`), so
    // the line is seen whether or not the test passes.
    let _ = writeln!(std::io::stderr(), "skipped: {test} needs {what}");
    false
}

/// Skip the test (return from it) unless everything named is here; see
/// [`available`].
#[macro_export]
macro_rules! needs {
    ($($need:ident),+ $(,)?) => {
        if !$crate::toolchains::available(&[$($crate::toolchains::Needs::$need),+]) {
            return;
        }
    };
}
