//! Builds the Rust guest plugins the tests load (the `guest-plugins`
//! workspace, for `wasm32-wasip2`, release), as `make plugins` does, so
//! that `cargo test` on a fresh clone with Rust and that target needs
//! nothing else. With `TOOLHOST_GUEST_DIR` set, the tests load the plugins
//! built there instead and nothing is built here.
//!
//! Plugins in other languages need their own toolchains: `make lang-plugins`
//! builds them, and the tests that need them skip without them.

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    println!("cargo:rerun-if-env-changed=TOOLHOST_GUEST_DIR");
    if std::env::var_os("TOOLHOST_GUEST_DIR").is_some() {
        return;
    }
    let repo = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo")).join("..");
    let guests = repo.join("guest-plugins");
    for input in inputs(&repo, &guests) {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    let cargo = std::env::var("CARGO").expect("set by cargo");
    let out = Command::new(cargo)
        .current_dir(&guests)
        .args(["build", "--release", "--locked", "--target", TARGET])
        // Where the tests look for them, whatever target directory this
        // build was given: an inherited CARGO_TARGET_DIR would also be the
        // one this build holds locked, and the nested build would wait on
        // it for ever.
        .arg("--target-dir")
        .arg(guests.join("target"))
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        // This build's flags are for the host, not for wasm.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo to build the guest plugins");
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let hint = if stderr.contains(TARGET) && stderr.contains("rustup target add") {
            format!("the Rust target {TARGET} is missing: `rustup target add {TARGET}`")
        } else {
            "see cargo's output above".to_owned()
        };
        panic!(
            "building the guest plugins in {} failed: {hint}\n{stderr}",
            guests.display()
        );
    }
}

/// What the guest plugins are built from: every member crate's manifest and
/// sources (not the workspace's `target/`), the SDK and the WIT contract.
fn inputs(repo: &Path, guests: &Path) -> Vec<PathBuf> {
    let mut inputs = vec![
        guests.join("Cargo.toml"),
        guests.join("Cargo.lock"),
        repo.join("sdk"),
        repo.join("wit"),
    ];
    for dir in [guests.to_owned(), guests.join("fixtures")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let krate = entry.path();
            if krate.join("Cargo.toml").is_file() {
                inputs.push(krate.join("Cargo.toml"));
                inputs.push(krate.join("src"));
            }
        }
    }
    inputs
}
