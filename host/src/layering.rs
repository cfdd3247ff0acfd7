//! The check that the crate's top-level modules depend on each other in
//! one direction: it reads `host/src`, takes every `crate::X` (and, in a
//! top-level module's own file, `super::X`, `super` being the crate root)
//! outside comments and string literals as an edge from the module whose
//! file it is in to `X`, and fails naming a cycle if the graph has one.
//! Owns this check only; what the layers are is in `lib.rs`'s crate doc
//! and `docs/architecture.md`. It reads the sources and writes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("host/src is readable") {
        let path = entry.expect("host/src is readable").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `source` with comments (doc comments included), string and character
/// literals blanked out, so a path named in prose is not a dependency.
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &source[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            i += end;
        } else if rest.starts_with("/*") {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (0usize, 0usize);
            while j < rest.len() {
                if rest[j..].starts_with("/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with("*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            i += j;
            out.push(' ');
        } else if let Some(len) = raw_string(rest) {
            i += len;
            out.push_str("\"\"");
        } else if rest.starts_with('"') {
            let mut j = 1;
            while j < rest.len() && rest.as_bytes()[j] != b'"' {
                j += if rest.as_bytes()[j] == b'\\' { 2 } else { 1 };
            }
            i += (j + 1).min(rest.len());
            out.push_str("\"\"");
        } else if let Some(len) = char_literal(rest) {
            i += len;
            out.push_str("' '");
        } else {
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The length of the raw string literal (`r"…"`, `r#"…"#`, `br"…"`)
/// `rest` starts with, if it starts with one.
fn raw_string(rest: &str) -> Option<usize> {
    let after_r = rest.strip_prefix("br").or_else(|| rest.strip_prefix('r'))?;
    let hashes = after_r.len() - after_r.trim_start_matches('#').len();
    let body = after_r[hashes..].strip_prefix('"')?;
    let close = format!("\"{}", "#".repeat(hashes));
    let end = body.find(&close)?;
    Some(rest.len() - body.len() + end + close.len())
}

/// The length of the character literal `rest` starts with (`'a'`,
/// `'\n'`, `'\''`), if it starts with one rather than a lifetime.
fn char_literal(rest: &str) -> Option<usize> {
    let body = rest.strip_prefix('\'')?;
    let mut chars = body.char_indices();
    let (_, first) = chars.next()?;
    let after = if first == '\\' {
        let (_, escaped) = chars.next()?;
        if escaped == 'u' {
            return body
                .find('}')
                .and_then(|end| body[end + 1..].starts_with('\'').then_some(end + 3));
        }
        2
    } else {
        first.len_utf8()
    };
    body[after..].starts_with('\'').then_some(after + 2)
}

/// The identifiers that follow `prefix` in `code` (`crate::` gives `X` of
/// every `crate::X`, `crate::{X, Y}` giving both).
fn named_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices(prefix) {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = code[at + prefix.len()..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            // The first segment of each path in the group.
            let mut depth = 0usize;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && !c.is_whitespace() => {
                        found.insert(ident(&group[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(rest));
        }
    }
    found.remove("");
    found
}

/// The top-level module a file of `src` belongs to, and whether it is that
/// module's own file (`X.rs` or `X/mod.rs`, where `super` is the root).
fn module_of(src: &Path, file: &Path) -> (String, bool) {
    let relative = file.strip_prefix(src).expect("under src");
    let mut parts = relative.iter().map(|p| p.to_string_lossy().into_owned());
    let first = parts.next().expect("a file");
    let rest: Vec<String> = parts.collect();
    let top = first.trim_end_matches(".rs").to_owned();
    let own = rest.is_empty() || rest == ["mod.rs"];
    (top, own)
}

/// The graph of top-level modules of `src`: each to those it names.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f).0).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let (module, own) = module_of(src, file);
        if module == "lib" {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(file).expect("a readable source"));
        let mut named = named_after(&code, "crate::");
        if own {
            named.extend(named_after(&code, "super::"));
        }
        let deps = edges.entry(module.clone()).or_default();
        deps.extend(named.into_iter().filter(|n| *n != module && modules.contains(n)));
    }
    edges
}

/// A cycle of `edges`, as the modules on it with the first repeated last.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let start = path
                    .iter()
                    .position(|n| n == node)
                    .expect("an open node is on the path");
                let mut cycle = path[start..].to_vec();
                cycle.push(node.to_owned());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(node.to_owned(), Mark::Open);
        path.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, marks, path) {
                return Some(cycle);
            }
        }
        path.pop();
        marks.insert(node.to_owned(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut marks, &mut Vec::new()))
}

#[test]
fn top_level_modules_depend_on_each_other_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = graph(&src);
    if let Some(cycle) = find_cycle(&edges) {
        let graph: Vec<String> = edges
            .iter()
            .map(|(m, deps)| format!("{m} -> {}", deps.iter().cloned().collect::<Vec<_>>().join(" ")))
            .collect();
        panic!(
            "the top-level modules have a cycle: {}\n\nthe graph:\n{}",
            cycle.join(" -> "),
            graph.join("\n")
        );
    }
}

#[test]
fn the_check_reads_paths_and_skips_prose() {
    let code = code_only(
        "//! see crate::a\n/* crate::b /* nested */ crate::c */\nuse crate::{d::X, e};\nlet s = \"crate::f\"; let r = r#\"crate::g\"#; let c = '\"'; fn f<'a>() {}\nsuper::h::y();",
    );
    assert_eq!(
        named_after(&code, "crate::"),
        BTreeSet::from(["d".to_owned(), "e".to_owned()])
    );
    assert_eq!(named_after(&code, "super::"), BTreeSet::from(["h".to_owned()]));
    let edges = BTreeMap::from([
        ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
        ("b".to_owned(), BTreeSet::from(["c".to_owned()])),
        ("c".to_owned(), BTreeSet::from(["a".to_owned()])),
    ]);
    assert_eq!(
        find_cycle(&edges),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    let acyclic = BTreeMap::from([("a".to_owned(), BTreeSet::from(["b".to_owned()]))]);
    assert_eq!(find_cycle(&acyclic), None);
}
