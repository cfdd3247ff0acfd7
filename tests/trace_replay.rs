//! The trace replay of public agent trajectories (`replay --traces`): the
//! converter still makes every committed trace from its transcription, every
//! trace parses and is cited, the replay applies the agent's edits between
//! calls, and with speculation on no answer is stale, on real sessions whose
//! reads follow listings and whose files change under them. The task trees
//! come from `make replay-trees`, the converter's Python from `make venv`.

use std::path::Path;

use toolhost_tests::needs;
use toolhost_tests::traces::{Replay, Step, Trace, Workspace, replay, traces_dir, trees_dir};

fn all() -> Vec<Trace> {
    Trace::load_all(&traces_dir()).expect("every committed trace parses")
}

#[test]
fn every_trace_parses_and_is_cited() {
    let traces = all();
    assert!(traces.len() >= 2, "traces: {}", traces.len());
    let sources = std::fs::read_to_string(traces_dir().join("SOURCES.md")).expect("SOURCES.md");
    for t in &traces {
        assert!(t.calls() > 0, "{}: no call", t.id);
        assert!(
            t.verified.checked > 0,
            "{}: nothing the agent saw was checked",
            t.id
        );
        let matched = format!("{} of {}", t.verified.matched, t.verified.checked);
        for cited in [
            &t.id,
            &t.source.repository,
            &t.source.commit,
            &t.source.model,
            &matched,
        ] {
            assert!(
                sources.contains(cited.as_str()),
                "{}: SOURCES.md does not say {cited}",
                t.id
            );
        }
        let raw = traces_dir().join("raw").join(format!("{}.json", t.id));
        assert!(raw.is_file(), "{}: no transcription {}", t.id, raw.display());
    }
}

#[test]
fn the_converter_makes_every_committed_trace() {
    needs!(Python, ReplayTrees);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = repo.join("build/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `make venv` first",
        python.display()
    );
    let out = std::process::Command::new(python)
        .arg(traces_dir().join("convert.py"))
        .arg("--check")
        .arg("--trees")
        .arg(trees_dir())
        .output()
        .expect("running convert.py");
    assert!(
        out.status.success(),
        "convert.py --check: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_malformed_step_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    let source = r#"{"repository":"r","path":"p","commit":"c","agent":"a","model":"m","task":"t"}"#;
    let body = format!(
        r#"{{"id":"bad","source":{source},"tree":"t","verified":{{"checked":0,"matched":0}},"skipped":{{}},"steps":[{{"tool":"read","args":{{"path":"x"}}}},{{"tool":"write","args":{{}}}}]}}"#
    );
    std::fs::write(&path, body).unwrap();
    let err = format!("{:#}", Trace::load(&path).unwrap_err());
    assert!(
        err.contains("bad.json: step 1") && err.contains("`write`"),
        "{err}"
    );
}

/// Reads as recorded, and made whole-file so that prefetched reads are
/// served, among them re-reads of a file the agent's `sed -i` changed: at a
/// scale where those files are old enough for their stamps to be trusted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replayed_sessions_get_no_stale_answer() {
    needs!(ReplayTrees);
    let traces = all();
    let runs = [
        ("django__django-11099", false),
        ("pydicom__pydicom-1458", false),
        ("psf__requests-1766", true),
        ("django__django-11276", true),
        ("django__django-13741", false),
    ];
    let mut served = 0;
    for (id, whole_reads) in runs {
        let trace = traces.iter().find(|t| t.id == id).expect(id);
        let edits = trace
            .steps
            .iter()
            .filter(|s| !matches!(s, Step::Call { .. }))
            .count() as u64;
        let how = Replay {
            speculate: true,
            scale: 0.5,
            seed: 1,
            whole_reads,
        };
        let work = Workspace::new(trace, &trees_dir()).expect("the task tree (make replay-trees)");
        let got = replay(trace, work, how).await.expect("replay");
        assert_eq!(got.calls, trace.calls() as u64, "{id}");
        assert_eq!(got.edits, edits, "{id}");
        assert_eq!(got.stale, 0, "{id}: stale answers: {got:?}");
        assert!(got.reads > 0 && got.backend_calls > 0, "{id}: {got:?}");
        assert!(got.host.is_some(), "{id}: speculation was on");
        served += got.served;
    }
    assert!(served > 0, "no answer came from a prefetch, so none was checked");
}
