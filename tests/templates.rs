//! `toolhost new` output builds with one command (`make`) in each language
//! and passes `toolhost check` as generated. The tools come from the
//! repository's `make toolchains` (passed to the generated Makefiles the way
//! a user would override them). The Rust plugin builds on `toolhost-sdk` as
//! `cargo package` makes it for a vendor outside the repository.

use std::path::{Path, PathBuf};
use std::process::Command;

use toolhost_cli::check;
use toolhost_cli::scaffold::{Lang, scaffold};
use toolhost_tests::{needs, runtime};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// Scaffold `name` in `lang`, build it with `make VARS...`, check it.
async fn scaffold_build_check(name: &str, lang: Lang, vars: &[String], setup: impl FnOnce(&Path)) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = scaffold(tmp.path(), name, lang, None).unwrap();
    setup(&dir);
    let out = Command::new("make")
        .arg("-C")
        .arg(&dir)
        .args(vars)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "make failed for {lang:?}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let (rt, logs) = runtime();
    let report = check::check(&rt, &dir.join(format!("{name}.wasm")), None)
        .await
        .unwrap_or_else(|e| panic!("{lang:?}: {e}"));
    let failed: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.verdict == check::Verdict::Fail)
        .collect();
    assert!(failed.is_empty(), "{lang:?}: {failed:?}");
    assert_eq!(report.categories, ["issue_tracker"], "{lang:?}");
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.check == "enrich-schema create_issue" && f.detail == "1 changes"),
        "{lang:?}: the template adds `label` to create_issue: {:?}",
        report.findings
    );
    assert!(logs.has(name, "log", &format!("{name}: loaded")), "{lang:?}");
}

/// `toolhost-sdk` as a vendor gets it: packaged by `cargo package` (which
/// must accept the crate, its WIT inside it) and unpacked under `into`.
fn packaged_sdk(into: &Path) -> PathBuf {
    let target = into.join("target");
    let out = Command::new(env!("CARGO"))
        .current_dir(repo())
        .args([
            "package",
            "-p",
            "toolhost-sdk",
            "--locked",
            "--no-verify",
            "--allow-dirty",
            "--target-dir",
        ])
        .arg(&target)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo package -p toolhost-sdk failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut crates: Vec<PathBuf> = std::fs::read_dir(target.join("package"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "crate"))
        .collect();
    assert_eq!(crates.len(), 1, "{crates:?}");
    let krate = crates.pop().unwrap();
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(&krate)
        .arg("-C")
        .arg(into)
        .status()
        .unwrap();
    assert!(status.success(), "cannot unpack {}", krate.display());
    let unpacked = into.join(krate.file_stem().unwrap());
    // The contract the SDK carries is wit/0.3, file for file.
    for entry in std::fs::read_dir(repo().join("wit/0.3")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap();
        let packaged = std::fs::read_to_string(unpacked.join("wit").join(name))
            .unwrap_or_else(|e| panic!("the packaged SDK has no wit/{}: {e}", name.display()));
        assert_eq!(
            packaged,
            std::fs::read_to_string(&path).unwrap(),
            "wit/{}",
            name.display()
        );
    }
    unpacked
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_template_builds_on_the_packaged_sdk_and_passes_check() {
    let sdk_dir = tempfile::tempdir().unwrap();
    let sdk = packaged_sdk(sdk_dir.path());
    // A shared target directory keeps the SDK's dependencies compiled
    // between runs.
    let target = format!(
        "CARGO_TARGET_DIR={}",
        repo().join("build/template-target").display()
    );
    scaffold_build_check("tpl-rust", Lang::Rust, &[target], |dir| {
        // The template's requirement, kept, with the packaged crate as its
        // source: a version the package does not meet fails the build.
        let manifest = dir.join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).unwrap();
        let requirement = "toolhost-sdk = \"0.3\"";
        assert!(text.contains(requirement), "{text}");
        let patched = text.replace(
            requirement,
            &format!(
                "toolhost-sdk = {{ version = \"0.3\", path = {:?} }}",
                sdk.display().to_string()
            ),
        );
        std::fs::write(&manifest, patched).unwrap();
        // The guest workspace's lock: the dependency versions already in
        // cargo's cache (cargo drops the entries the plugin does not use).
        std::fs::copy(repo().join("guest-plugins/Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn js_template_builds_and_passes_check() {
    needs!(Node);
    // The same pinned componentize-js as the reference plugin, not a download.
    let modules = repo().join("guest-plugins/reference-js/node_modules");
    scaffold_build_check("tpl-js", Lang::Js, &[], |dir| {
        std::os::unix::fs::symlink(&modules, dir.join("node_modules")).unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_template_builds_and_passes_check() {
    needs!(Python);
    let tool = format!(
        "COMPONENTIZE_PY={}",
        repo().join("build/venv/bin/componentize-py").display()
    );
    scaffold_build_check("tpl-python", Lang::Python, &[tool], |_| {}).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn c_template_builds_and_passes_check() {
    needs!(LangPlugins);
    let r = repo();
    let vars = [
        format!("WIT_BINDGEN={}", r.join("build/tools/bin/wit-bindgen").display()),
        format!(
            "ZIG_CC={} -m ziglang cc",
            r.join("build/venv/bin/python").display()
        ),
        format!("WASM_TOOLS={}", r.join("build/venv/bin/wasm-tools").display()),
    ];
    scaffold_build_check("tpl-c", Lang::C, &vars, |_| {}).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn go_template_builds_and_passes_check() {
    needs!(LangPlugins);
    // The Go runtime package and the WASI adapter `make toolchains` put in
    // place: no Go module proxy, no download.
    let r = repo();
    let vars = [
        format!("WIT_BINDGEN={}", r.join("build/tools/bin/wit-bindgen").display()),
        format!("GO={}", r.join("build/venv/bin/go").display()),
        format!("WASM_TOOLS={}", r.join("build/venv/bin/wasm-tools").display()),
        format!(
            "ADAPTER={}",
            r.join("guest-plugins/reference-js/node_modules/@bytecodealliance/jco/lib/wasi_snapshot_preview1.reactor.wasm")
                .display()
        ),
        format!("GO_PKG={}", r.join("build/tools/go-pkg").display()),
    ];
    scaffold_build_check("tpl-go", Lang::Go, &vars, |_| {}).await;
}
