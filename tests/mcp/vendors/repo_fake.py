"""A small git repository the GitHub and GitLab fakes both serve, each in
its own API's shapes (github_fake.py, gitlab_fake.py): four commits on two
branches, each with its message, author, date, parents, and the files it
changes with their patches; the tree at any commit follows from them.

    main:       c1 "Initial commit" ← c2 "Add parser" ← c3 "Parse empty input"
    feature-x:  c3 ← c4 "Faster parse"

c3 adds a text file over the tools' 100 KiB bound (`docs/big.txt`) and a
binary one (`assets/logo.png`), so truncation and binary content are
exercised. Refs are branch names, full SHAs or SHA prefixes of 7 or more."""

import hashlib

BIG = "".join(f"line {n:05d} of a large text file\n" for n in range(4000))  # 128,000 bytes
LOGO = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"


def sha(message):
    return hashlib.sha1(message.encode()).hexdigest()


def _commit(message, parent, author, date, changes):
    """`changes`: path -> (status, content or None for removed, patch)."""
    return {"sha": sha(message), "message": message, "parents": [parent["sha"]] if parent else [],
            "author": author, "date": date, "changes": changes}


C1 = _commit("Initial commit", None, ("octocat", "Mona Octocat"), "2026-10-01T09:00:00Z", {
    "README.md": ("added", "# widgets\n", "@@ -0,0 +1 @@\n+# widgets"),
    "src/lib.rs": ("added", "pub mod parse;\n", "@@ -0,0 +1 @@\n+pub mod parse;"),
})
C2 = _commit("Add parser\n\nA first parser for widget specs.", C1, ("hubot", "Hubot"), "2026-10-05T09:00:00Z", {
    "src/parse.rs": ("added", "pub fn parse(s: &str) -> Vec<&str> {\n    s.split(',').collect()\n}\n",
                     "@@ -0,0 +1,3 @@\n+pub fn parse(s: &str) -> Vec<&str> {\n+    s.split(',').collect()\n+}"),
    "README.md": ("modified", "# widgets\n\nParses widget specs.\n", "@@ -1 +1,3 @@\n # widgets\n+\n+Parses widget specs."),
})
C3 = _commit("Parse empty input\n\nFixes #12", C2, ("octocat", "Mona Octocat"), "2026-10-09T09:00:00Z", {
    "src/parse.rs": ("modified",
                     "pub fn parse(s: &str) -> Vec<&str> {\n    if s.is_empty() {\n        return Vec::new(); // parse_empty\n"
                     "    }\n    s.split(',').collect()\n}\n",
                     "@@ -1,3 +1,6 @@\n pub fn parse(s: &str) -> Vec<&str> {\n+    if s.is_empty() {\n"
                     "+        return Vec::new(); // parse_empty\n+    }\n     s.split(',').collect()\n }"),
    "docs/big.txt": ("added", BIG, "@@ -0,0 +1,4000 @@\n" + "".join(f"+{l}\n" for l in BIG.splitlines())),
    "assets/logo.png": ("added", LOGO, None),
})
C4 = _commit("Faster parse", C3, ("hubot", "Hubot"), "2026-10-12T09:00:00Z", {
    "src/parse.rs": ("modified", "pub fn parse(s: &str) -> Vec<&str> {\n    s.split(',').filter(|p| !p.is_empty()).collect()"
                                 " // parse_empty\n}\n",
                     "@@ -1,6 +1,3 @@\n pub fn parse(s: &str) -> Vec<&str> {\n-    if s.is_empty() {\n"
                     "-        return Vec::new(); // parse_empty\n-    }\n-    s.split(',').collect()\n"
                     "+    s.split(',').filter(|p| !p.is_empty()).collect() // parse_empty\n }"),
})
COMMITS = {c["sha"]: c for c in (C1, C2, C3, C4)}
BRANCHES = {"main": C3["sha"], "feature-x": C4["sha"]}
DEFAULT = "main"


def resolve(ref):
    """The commit a ref names, or None."""
    ref = ref or DEFAULT
    if ref in BRANCHES:
        return COMMITS[BRANCHES[ref]]
    found = [c for s, c in COMMITS.items() if len(ref) >= 7 and s.startswith(ref)]
    return found[0] if len(found) == 1 else None


def history(commit):
    """The commit and its ancestors, newest first (first parents)."""
    out = []
    while commit:
        out.append(commit)
        commit = COMMITS[commit["parents"][0]] if commit["parents"] else None
    return out


def tree(commit):
    """path -> content (str or bytes) at `commit`."""
    files = {}
    for c in reversed(history(commit)):
        for path, (status, content, _) in c["changes"].items():
            if content is None:
                files.pop(path, None)
            else:
                files[path] = content
    return files


def size(content):
    return len(content.encode() if isinstance(content, str) else content)


def raw(content):
    return content.encode() if isinstance(content, str) else content


def entries(files, directory):
    """The immediate children of `directory` ('' for the root) as
    (name, path, kind 'file'|'dir', size), sorted by name; None if it is no
    directory."""
    prefix = f"{directory}/" if directory else ""
    children = {}
    for path, content in files.items():
        if not path.startswith(prefix):
            continue
        name, _, rest = path[len(prefix):].partition("/")
        children[name] = ("dir", 0) if rest else ("file", size(content))
    if not children:
        return None
    return [(n, prefix + n, kind, sz) for n, (kind, sz) in sorted(children.items())]


def log(ref, path=None, since=None, until=None, author=None):
    """Commits reachable from `ref`, newest first, filtered; None for an unknown ref."""
    head = resolve(ref)
    if head is None:
        return None
    return [c for c in history(head)
            if (path is None or any(p == path or p.startswith(path + "/") for p in c["changes"]))
            and (since is None or c["date"] > since) and (until is None or c["date"] < until)
            and (author is None or author in c["author"])]


def grep(files, text):
    """(path, line number, line) of each text line holding `text`, by path."""
    return [(path, n, line) for path, content in sorted(files.items()) if isinstance(content, str)
            for n, line in enumerate(content.splitlines(), 1) if text in line]
