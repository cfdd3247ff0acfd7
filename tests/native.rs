//! The native tools through the pipeline: results, and every way out of the
//! tool root (`..`, absolute paths, symlinked files and directories) refused,
//! for reading and for writing.

use std::sync::Arc;

use serde_json::{Value, json};
use toolhost::ToolError;
use toolhost::Toolhost;
use toolhost::WebSettings;
use toolhost::internals::Sources;
use toolhost::internals::{NativeTools, Root};
use toolhost_tests::call;

struct Fixture {
    _outside: tempfile::TempDir,
    root: tempfile::TempDir,
    host: Toolhost,
}

/// A root with `notes.txt`, `src/lib.rs`, an ignored file, and links to a
/// directory and a file outside it holding the word `SECRET`.
async fn fixture(web: WebSettings) -> Fixture {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "SECRET outside\n").unwrap();
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::write(r.join("notes.txt"), "one\ntwo needle\nthree\nfour needle\nfive\n").unwrap();
    std::fs::create_dir(r.join("src")).unwrap();
    std::fs::write(r.join("src/lib.rs"), "fn needle() {}\n").unwrap();
    std::fs::write(r.join(".gitignore"), "ignored.txt\n").unwrap();
    std::fs::create_dir(r.join(".git")).unwrap();
    std::fs::write(r.join("ignored.txt"), "needle\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), r.join("outdir")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), r.join("outfile.txt")).unwrap();
    let host = writable_host(r, web).await;
    Fixture {
        _outside: outside,
        root,
        host,
    }
}

async fn ok(host: &Toolhost, tool: &str, args: Value) -> Value {
    let out = call(host, tool, args.clone()).await.unwrap();
    assert!(!out.is_error, "{tool} {args}: {}", out.text());
    out.structured().unwrap()
}

/// The call ran and the tool refused it with a message containing `text`.
async fn refused(host: &Toolhost, tool: &str, args: Value, text: &str) {
    let out = call(host, tool, args.clone()).await.unwrap();
    assert!(out.is_error, "{tool} {args} was not refused: {}", out.text());
    assert!(out.text().contains(text), "{tool} {args}: {}", out.text());
}

#[tokio::test]
async fn the_native_tools_are_listed_with_the_value_model_argument_names() {
    let f = fixture(WebSettings::default()).await;
    let listing = f.host.list_tools();
    let names: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["read", "glob", "grep", "ls", "web_fetch", "write", "edit"]
    );
    let read = &listing.tools[0];
    assert_eq!(read.schema.required(), ["path"]);
}

#[tokio::test]
async fn read_returns_the_lines_asked_for() {
    let f = fixture(WebSettings::default()).await;
    let got = ok(
        &f.host,
        "read",
        json!({"path": "notes.txt", "offset": 2, "limit": 2}),
    )
    .await;
    assert_eq!(
        got,
        json!({"path": "notes.txt", "content": "two needle\nthree", "lines": [2, 3], "total_lines": 5})
    );
    // Coerced: "2" is taken for the integer offset.
    let got = ok(
        &f.host,
        "read",
        json!({"path": "./src/../notes.txt", "offset": "5"}),
    )
    .await;
    assert_eq!(got["content"], "five");
    refused(&f.host, "read", json!({"path": "missing.txt"}), "no such file").await;
}

#[tokio::test]
async fn glob_grep_and_ls_see_the_root_only() {
    let f = fixture(WebSettings::default()).await;
    let got = ok(&f.host, "glob", json!({"pattern": "**/*.{txt,rs}"})).await;
    assert_eq!(got["paths"], json!(["notes.txt", "src/lib.rs"]));
    let got = ok(
        &f.host,
        "grep",
        json!({"pattern": "NEEDLE|SECRET", "ignore_case": true}),
    )
    .await;
    let matches: Vec<(String, u64)> = got["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap().to_owned(),
                m["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        matches,
        [
            ("notes.txt".into(), 2),
            ("notes.txt".into(), 4),
            ("src/lib.rs".into(), 1)
        ]
    );
    let got = ok(&f.host, "grep", json!({"pattern": "needle", "path": "src"})).await;
    assert_eq!(got["matches"][0]["text"], "fn needle() {}");
    let got = ok(&f.host, "ls", json!({})).await;
    let entries: Vec<(&str, &str)> = got["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["type"].as_str().unwrap()))
        .collect();
    assert!(
        entries.contains(&("src", "dir")) && entries.contains(&("outdir", "symlink")),
        "{entries:?}"
    );
}

fn paths(found: &Value, key: &str) -> Vec<String> {
    let items = found[key].as_array().unwrap().iter();
    let mut paths: Vec<String> = items
        .map(|v| v.get("path").unwrap_or(v).as_str().unwrap().to_owned())
        .collect();
    paths.dedup();
    paths
}

#[tokio::test]
async fn grep_and_glob_read_a_pattern_alike_relative_to_path() {
    let f = fixture(WebSettings::default()).await;
    let src = f.root.path().join("src");
    std::fs::create_dir_all(src.join("x/deep")).unwrap();
    for file in ["x/a.py", "x/deep/b.py", "c.py"] {
        std::fs::write(src.join(file), "needle = 1\n").unwrap();
    }
    for (path, pattern) in [
        ("src", "x/*.py"),
        ("src", "*.py"),
        ("./src/x", "*.py"),
        ("src", "x/**/b.py"),
        ("", "src/x/*.py"),
    ] {
        let listed = ok(&f.host, "glob", json!({"pattern": pattern, "path": path})).await;
        let found = ok(
            &f.host,
            "grep",
            json!({"pattern": "needle", "glob": pattern, "path": path}),
        )
        .await;
        assert_eq!(
            paths(&found, "matches"),
            paths(&listed, "paths"),
            "{path} {pattern}"
        );
        assert!(!paths(&listed, "paths").is_empty(), "{path} {pattern}");
    }
    let found = ok(
        &f.host,
        "grep",
        json!({"pattern": "needle", "path": "src", "glob": "x/*.py"}),
    )
    .await;
    assert_eq!(paths(&found, "matches"), ["src/x/a.py", "src/x/deep/b.py"]);
    // A file searched alone is matched by its own name.
    let found = ok(
        &f.host,
        "grep",
        json!({"pattern": "needle", "path": "src/c.py", "glob": "c.py"}),
    )
    .await;
    assert_eq!(paths(&found, "matches"), ["src/c.py"]);
}

#[tokio::test]
async fn every_escape_from_the_root_is_refused() {
    let f = fixture(WebSettings::default()).await;
    let outside_abs = f._outside.path().join("secret.txt").display().to_string();
    let inside_abs = f.root.path().join("notes.txt").display().to_string();
    for path in [
        "../secret.txt",
        "src/../../secret.txt",
        "/etc/passwd",
        outside_abs.as_str(),
        "outfile.txt",
        "outdir/secret.txt",
    ] {
        refused(&f.host, "read", json!({"path": path}), "outside the tool root").await;
    }
    for (tool, args) in [
        ("ls", json!({"path": ".."})),
        ("ls", json!({"path": "outdir"})),
        ("glob", json!({"pattern": "*", "path": "outdir"})),
        ("grep", json!({"pattern": "SECRET", "path": "outdir"})),
        ("grep", json!({"pattern": "SECRET", "path": "/"})),
    ] {
        refused(&f.host, tool, args, "outside the tool root").await;
    }
    // An absolute path inside the root is fine.
    ok(&f.host, "read", json!({"path": inside_abs})).await;
}

#[tokio::test]
async fn web_fetch_reaches_allowed_hosts_only_and_caps_the_body() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // `/page` answers; `/to-allowed` and `/to-other` redirect to it on an
    // allowed and on a disallowed host name.
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = [0u8; 2048];
            let n = socket.read(&mut buf).await.unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]);
            let path = request.split_whitespace().nth(1).unwrap_or("/");
            let response = match path {
                "/to-allowed" => format!(
                    "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{port}/page\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                ),
                "/to-other" => format!(
                    "HTTP/1.1 302 Found\r\nlocation: http://localhost:{port}/page\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                ),
                _ => {
                    let body = "x".repeat(100);
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                }
            };
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    let web = WebSettings {
        allowed_hosts: vec!["127.0.0.1".into()],
        max_bytes: 10,
        ..WebSettings::default()
    };
    let f = fixture(web).await;
    let got = ok(
        &f.host,
        "web_fetch",
        json!({"url": format!("http://127.0.0.1:{port}/page")}),
    )
    .await;
    assert_eq!(got["content"], "xxxxxxxxxx");
    assert_eq!(got["truncated"], true);
    refused(
        &f.host,
        "web_fetch",
        json!({"url": format!("http://localhost:{port}/page")}),
        "not allowed",
    )
    .await;
    refused(
        &f.host,
        "web_fetch",
        json!({"url": "file:///etc/passwd"}),
        "only http",
    )
    .await;
    let followed = ok(
        &f.host,
        "web_fetch",
        json!({"url": format!("http://127.0.0.1:{port}/to-allowed")}),
    )
    .await;
    assert_eq!(followed["content"], "xxxxxxxxxx");
    let out = call(
        &f.host,
        "web_fetch",
        json!({"url": format!("http://127.0.0.1:{port}/to-other")}),
    )
    .await
    .unwrap();
    assert!(
        out.is_error,
        "a redirect to a host not allowed was followed: {}",
        out.text()
    );
    // An allowed host where nothing listens: the failure says why.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    refused(
        &f.host,
        "web_fetch",
        json!({"url": format!("http://{closed}/page")}),
        "Connection refused",
    )
    .await;
}

#[tokio::test]
async fn write_and_edit_stay_inside_the_root() {
    let f = fixture(WebSettings::default()).await;
    let r = f.root.path();
    let wrote = ok(
        &f.host,
        "write",
        json!({"path": "new/dir/a.txt", "content": "x y x\n"}),
    )
    .await;
    assert_eq!(wrote["created"], true);
    assert_eq!(
        std::fs::read_to_string(r.join("new/dir/a.txt")).unwrap(),
        "x y x\n"
    );
    refused(
        &f.host,
        "edit",
        json!({"path": "new/dir/a.txt", "old_string": "x", "new_string": "z"}),
        "found 2 times",
    )
    .await;
    refused(
        &f.host,
        "edit",
        json!({"path": "new/dir/a.txt", "old_string": "w", "new_string": "z"}),
        "not found",
    )
    .await;
    let edited = ok(
        &f.host,
        "edit",
        json!({"path": "new/dir/a.txt", "old_string": "x", "new_string": "z", "replace_all": true}),
    )
    .await;
    assert_eq!(edited["replacements"], 2);
    assert_eq!(
        std::fs::read_to_string(r.join("new/dir/a.txt")).unwrap(),
        "z y z\n"
    );
    for path in [
        "../escape.txt",
        "/tmp/escape.txt",
        "outdir/planted.txt",
        "outfile.txt",
    ] {
        refused(
            &f.host,
            "write",
            json!({"path": path, "content": "pwned"}),
            "outside the tool root",
        )
        .await;
    }
    assert!(!f._outside.path().join("planted.txt").exists());
    assert_eq!(
        std::fs::read_to_string(f._outside.path().join("secret.txt")).unwrap(),
        "SECRET outside\n"
    );
}

#[tokio::test]
async fn write_tools_are_served_only_when_the_root_is_writable() {
    let dir = tempfile::tempdir().unwrap();
    let native = NativeTools::new(Root::new(dir.path()).unwrap(), WebSettings::default()).unwrap();
    let host = Toolhost::new(Sources {
        native: Some(Arc::new(native)),
        ..Sources::default()
    })
    .await
    .unwrap();
    let err = call(&host, "write", json!({"path": "a", "content": "b"}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::NotFound(_)), "{err:?}");
    assert!(!dir.path().join("a").exists());
}

/// A thread swaps `sub` (a directory in the root) with a symlink to a
/// directory outside, back and forth, while read, ls, glob, grep, write and
/// edit work through it: nothing outside is ever read, listed or written.
#[tokio::test(flavor = "multi_thread")]
async fn a_directory_swapped_for_a_symlink_never_leads_outside() {
    use std::sync::atomic::{AtomicBool, Ordering};

    const MARKER: &str = "OUTSIDE-MARKER-7f3a";
    const ROUNDS: usize = 150;
    let outside = tempfile::tempdir().unwrap();
    let o = outside.path().to_owned();
    std::fs::write(o.join("marker.txt"), format!("{MARKER}\n")).unwrap();
    std::fs::write(o.join("keep.txt"), format!("{MARKER} keep\n")).unwrap();
    std::fs::write(o.join("outside-only.txt"), format!("{MARKER}\n")).unwrap();
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_owned();
    std::fs::create_dir(r.join("sub")).unwrap();
    std::fs::write(r.join("sub/marker.txt"), "inside\n").unwrap();
    std::fs::write(r.join("sub/keep.txt"), "inside keep\n").unwrap();
    let host = writable_host(&r, WebSettings::default()).await;

    // `sub` and `sub.link` (a symlink out) trade places atomically, so
    // `sub` always exists: as the directory or as the way out.
    std::os::unix::fs::symlink(&o, r.join("sub.link")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, r) = (stop.clone(), r.clone());
        std::thread::spawn(move || {
            use rustix::fs::{CWD, RenameFlags, renameat_with};
            let (sub, link) = (r.join("sub"), r.join("sub.link"));
            let mut swaps = 0;
            while !stop.load(Ordering::SeqCst) && swaps < 10_000_000 {
                renameat_with(CWD, &sub, CWD, &link, RenameFlags::EXCHANGE).unwrap();
                swaps += 1;
            }
            // Back to the directory, if it ended swapped.
            if swaps % 2 == 1 {
                renameat_with(CWD, &sub, CWD, &link, RenameFlags::EXCHANGE).unwrap();
            }
            swaps
        })
    };
    let calls = [
        ("read", json!({"path": "sub/marker.txt"})),
        ("read", json!({"path": "sub/keep.txt"})),
        ("ls", json!({"path": "sub"})),
        ("glob", json!({"pattern": "**/*.txt"})),
        ("glob", json!({"pattern": "*", "path": "sub"})),
        ("grep", json!({"pattern": "MARKER|inside"})),
        ("grep", json!({"pattern": "MARKER", "path": "sub"})),
        ("grep", json!({"pattern": "MARKER", "path": "sub/marker.txt"})),
        ("write", json!({"path": "sub/new.txt", "content": "written\n"})),
        (
            "write",
            json!({"path": "sub/keep.txt", "content": "inside keep\n"}),
        ),
        (
            "edit",
            json!({"path": "sub/keep.txt", "old_string": "keep", "new_string": "keep"}),
        ),
    ];
    let mut answered = 0;
    for _ in 0..ROUNDS {
        for (tool, args) in &calls {
            let Ok(out) = call(&host, tool, args.clone()).await else {
                continue;
            };
            answered += 1;
            let seen = format!("{} {:?}", out.text(), out.structured());
            assert!(
                !seen.contains(MARKER) && !seen.contains("outside-only"),
                "{tool} {args} reached outside the root: {seen}"
            );
        }
    }
    stop.store(true, Ordering::SeqCst);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0 && answered > 0);
    let mut names: Vec<String> = std::fs::read_dir(&o)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["keep.txt", "marker.txt", "outside-only.txt"],
        "a file was created outside the root"
    );
    assert_eq!(
        std::fs::read_to_string(o.join("keep.txt")).unwrap(),
        format!("{MARKER} keep\n"),
        "a file outside the root was changed"
    );
    assert_eq!(
        std::fs::read_to_string(r.join("sub/new.txt")).unwrap(),
        "written\n"
    );
}

/// A host serving the native tools, `write` and `edit` included, on `root`.
async fn writable_host(root: &std::path::Path, web: WebSettings) -> Toolhost {
    let native = NativeTools::new(Root::new(root).unwrap(), web)
        .unwrap()
        .writable(true);
    Toolhost::new(Sources {
        native: Some(Arc::new(native)),
        ..Sources::default()
    })
    .await
    .unwrap()
}

/// How long a check of a hostile tree may take before it counts as hung:
/// generous, since it only has to tell an answer from a thread stuck for good.
const HUNG: std::time::Duration = std::time::Duration::from_secs(120);

/// Run `check` on a runtime of its own in a thread, and fail if it has not
/// finished within [`HUNG`]: a call that blocks forever (a named pipe's open
/// waits for a writer) fails the test instead of hanging the run.
fn answers_within_bounds<F>(what: &str, check: impl FnOnce() -> F + Send + 'static)
where
    F: std::future::Future<Output = ()>,
{
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.block_on(check())));
        let _ = done.send(outcome);
    });
    match finished.recv_timeout(HUNG) {
        Ok(Ok(())) => {}
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("{what}: no answer within {HUNG:?}; a file tool is stuck"),
    }
}

/// A named pipe (nothing ever writes to it) as the file named, as a file in
/// a walked tree and as a directory's `.gitignore`, through every file tool,
/// and 64 reads of it at once: each is answered (refused, naming the path,
/// where it names the pipe), and a plain read still answers after.
#[test]
fn a_named_pipe_never_holds_a_file_tool() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_owned();
    std::fs::create_dir(r.join("sub")).unwrap();
    std::fs::write(r.join("notes.txt"), "a needle\n").unwrap();
    std::fs::write(r.join("sub/code.rs"), "needle()\n").unwrap();
    let mode = rustix::fs::Mode::from_raw_mode(0o644);
    for pipe in ["pipe.txt", "sub/.gitignore"] {
        rustix::fs::mkfifoat(rustix::fs::CWD, r.join(pipe), mode).unwrap();
    }
    answers_within_bounds("the file tools on a named pipe", move || async move {
        let host = writable_host(&r, WebSettings::default()).await;
        for (tool, args) in [
            ("read", json!({"path": "pipe.txt"})),
            ("grep", json!({"pattern": "needle", "path": "pipe.txt"})),
            (
                "edit",
                json!({"path": "pipe.txt", "old_string": "a", "new_string": "b"}),
            ),
            ("write", json!({"path": "pipe.txt", "content": "replaced\n"})),
        ] {
            refused(
                &host,
                tool,
                args,
                "`pipe.txt` is a named pipe, not a regular file",
            )
            .await;
        }
        refused(&host, "ls", json!({"path": "pipe.txt"}), "pipe.txt").await;
        let kind = std::fs::symlink_metadata(r.join("pipe.txt")).unwrap().file_type();
        assert!(
            std::os::unix::fs::FileTypeExt::is_fifo(&kind),
            "the pipe was replaced"
        );
        let listed = ok(&host, "glob", json!({"pattern": "**/*"})).await;
        assert_eq!(listed["paths"], json!(["notes.txt", "sub/code.rs"]));
        let found = ok(&host, "grep", json!({"pattern": "needle"})).await;
        assert_eq!(paths(&found, "matches"), ["notes.txt", "sub/code.rs"]);
        let reads = (0..64).map(|_| call(&host, "read", json!({"path": "pipe.txt"})));
        for out in futures::future::join_all(reads).await {
            assert!(out.unwrap().is_error);
        }
        let got = ok(&host, "read", json!({"path": "notes.txt"})).await;
        assert_eq!(got["content"], "a needle");
    });
}

/// A chain of `depth` directories `d/d/…/d` below `top` with `bottom.txt`
/// (holding `needle`) at its end; built and removed one level at a time
/// with short paths, since the whole path is longer than the system allows.
struct Chain {
    top: std::path::PathBuf,
}

impl Chain {
    fn new(top: &std::path::Path, depth: usize) -> Self {
        std::fs::create_dir(top.join("d")).unwrap();
        std::fs::write(top.join("d/bottom.txt"), "needle\n").unwrap();
        for _ in 1..depth {
            std::fs::create_dir(top.join("n")).unwrap();
            std::fs::rename(top.join("d"), top.join("n/d")).unwrap();
            std::fs::rename(top.join("n"), top.join("d")).unwrap();
        }
        Self { top: top.to_owned() }
    }
}

impl Drop for Chain {
    fn drop(&mut self) {
        let (d, n) = (self.top.join("d"), self.top.join("n"));
        while std::fs::rename(d.join("d"), &n).is_ok() {
            let _ = std::fs::remove_dir(&d);
            let _ = std::fs::rename(&n, &d);
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// glob and grep over a chain of 6,000 nested directories answer with what
/// they found above the depth cap and say they stopped; no stack overflow.
#[tokio::test]
async fn a_6000_deep_directory_chain_is_walked_to_a_bounded_depth() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("top.txt"), "needle\n").unwrap();
    let _chain = Chain::new(root.path(), 6000);
    let host = writable_host(root.path(), WebSettings::default()).await;
    let out = call(&host, "glob", json!({"pattern": "**/*.txt"})).await.unwrap();
    assert!(!out.is_error, "{}", out.text());
    let listed = out.structured().unwrap();
    assert_eq!(listed["paths"], json!(["top.txt"]));
    assert_eq!(listed["truncated"], true);
    assert!(out.text().contains("levels"), "{}", out.text());
    let out = call(&host, "grep", json!({"pattern": "needle"})).await.unwrap();
    let found = out.structured().unwrap();
    assert_eq!(paths(&found, "matches"), ["top.txt"]);
    assert_eq!(found["truncated"], true);
    assert!(out.text().contains("levels"), "{}", out.text());
    // Asked to start deep down, the walk still answers.
    let deep = vec!["d"; 60].join("/");
    let listed = ok(&host, "glob", json!({"pattern": "**/*.txt", "path": deep})).await;
    assert_eq!(listed["truncated"], true);
}

/// grep over a file of one 40 MiB line holds at most a bounded line: the
/// file is skipped past it and grep says so, the other files' matches are
/// answered, and a limit past the cap is held to it.
#[tokio::test]
async fn grep_never_holds_a_giant_line_whole() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let mut giant = b"needle before\n".to_vec();
    giant.resize(giant.len() + (40 << 20), b'x');
    giant.extend_from_slice(b" needle after\nneedle past\n");
    std::fs::write(r.join("giant.txt"), &giant).unwrap();
    drop(giant);
    std::fs::write(r.join("small.txt"), "a needle\n").unwrap();
    std::fs::write(r.join("many.log"), "needle\n".repeat(5000)).unwrap();
    let host = writable_host(r, WebSettings::default()).await;
    let out = call(&host, "grep", json!({"pattern": "needle", "glob": "*.txt"}))
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text());
    let found = out.structured().unwrap();
    let lines: Vec<(&str, u64, &str)> = found["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap(),
                m["line"].as_u64().unwrap(),
                m["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        lines,
        [("giant.txt", 1, "needle before"), ("small.txt", 1, "a needle")]
    );
    assert_eq!(found["skipped"][0]["path"], "giant.txt");
    let reason = found["skipped"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("1 MiB"), "{reason}");
    assert!(
        out.text().contains("giant.txt") && out.text().contains("1 MiB"),
        "{}",
        out.text()
    );
    let many = ok(
        &host,
        "grep",
        json!({"pattern": "needle", "path": "many.log", "limit": 100000}),
    )
    .await;
    assert_eq!(many["matches"].as_array().unwrap().len(), 1000);
    assert_eq!(many["truncated"], true);
}

/// `ls` of a directory of 60,000 files answers the first 1,000 by name and
/// says it stopped, in its text and its structured result.
#[tokio::test]
async fn ls_of_60000_files_is_capped_and_says_so() {
    let root = tempfile::tempdir().unwrap();
    let big = root.path().join("big");
    std::fs::create_dir(&big).unwrap();
    for i in 0..60_000 {
        std::fs::File::create(big.join(format!("f{i:05}"))).unwrap();
    }
    let host = writable_host(root.path(), WebSettings::default()).await;
    let out = call(&host, "ls", json!({"path": "big"})).await.unwrap();
    assert!(!out.is_error, "{}", out.text());
    let listed = out.structured().unwrap();
    let names: Vec<&str> = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 1000);
    assert_eq!((names[0], names[999]), ("f00000", "f00999"));
    assert_eq!(listed["truncated"], true);
    assert!(
        out.text().contains("1000 of 60000"),
        "{}",
        &out.text()[out.text().len().saturating_sub(200)..]
    );
    let small = ok(&host, "ls", json!({})).await;
    assert_eq!(small["truncated"], false);
}

/// `edit` and `write` hold a file to the size `read` reads: a file over it
/// is not loaded for an edit, and neither an edit nor a write makes one.
#[tokio::test]
async fn edit_and_write_are_bounded_like_read() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let mut over = "x".repeat((16 << 20) + 1);
    std::fs::write(r.join("over.txt"), &over).unwrap();
    std::fs::write(r.join("small.txt"), "x".repeat(1000)).unwrap();
    let host = writable_host(r, WebSettings::default()).await;
    refused(
        &host,
        "edit",
        json!({"path": "over.txt", "old_string": "x", "new_string": "y"}),
        "16 MiB",
    )
    .await;
    // 1,000 replacements of 20 KiB each would make a 20 MB file.
    refused(
        &host,
        "edit",
        json!({"path": "small.txt", "old_string": "x", "new_string": "y".repeat(20 << 10), "replace_all": true}),
        "16 MiB",
    )
    .await;
    assert_eq!(std::fs::metadata(r.join("small.txt")).unwrap().len(), 1000);
    over.push('\n');
    refused(
        &host,
        "write",
        json!({"path": "new.txt", "content": over}),
        "16 MiB",
    )
    .await;
    assert!(!r.join("new.txt").exists());
}
