#!/usr/bin/env python3
"""Convert the transcribed agent trajectories in raw/ into replay traces.

Each raw/NAME.json holds one public trajectory's commands, verbatim and in
order (bash for mini-swe-agent, SWE-agent's own commands for SWE-agent),
with excerpts of what the agent saw. This maps every step onto toolhost's
native tools, or onto a file edit applied between calls, against the task
repository's tree (build/replay/trees/TREE, from `make replay-trees`), and
writes NAME.json beside this script:

    {"id", "source", "tree", "verified": {"checked", "matched", "mismatches"},
     "skipped": {"command": n}, "steps": [
        {"tool": "read"|"grep"|"glob"|"ls", "args": {...}},
        {"edit": PATH, "hunks": [[first_line, lines_removed, "new text"]]},
        {"write": PATH, "content": TEXT},
        {"delete": PATH}]}

Mapping (the agent's shell is stateless: each step starts at the repo root):
- cat F, sed -n 'A,Bp' F, nl -ba F | sed -n 'A,Bp', cat F | sed -n 'A,Bp',
  head/tail -n N F
  and SWE-agent's open/goto/scroll_* (the 100-line window it showed)
  -> read {path, offset, limit};
- grep/rg PATTERN [PATH] (BRE or -E or -F, -i, --include) and SWE-agent's
  search_dir/search_file -> grep {pattern (as a Rust regex), path, glob,
  ignore_case}; `cat F | grep P` -> grep on F;
- find DIR -name N, SWE-agent's find_file N [DIR], `ls -R | grep X`
  -> glob {pattern: "**/N", path};
- ls [DIR] -> ls {path};
- sed -i and perl -i (run by the real program on a scratch copy),
  cat > F <<EOF, SWE-agent's create/edit (only edits its observation says
  were applied), git checkout F (back to the tree's F), rm -> the file's
  new content as line hunks, a write or a delete.
A command of several lines runs line by line, comment lines skipped; a
here-document fed to a program (python3 - <<'PY') is input, not commands.
Anything else (running Python, tests, git) is counted in "skipped".
Paths stay as the agent wrote them ("./x", "x/../y"), except the agent's
absolute cwd prefix, which is made relative.

Verification: every excerpt the agent saw ("saw": a line of a file or an
output line naming a file; "saw_lines": line N of the open file; "saw_at":
line N of a named file) is checked against the tree as it stands at that
step, edits applied; mismatches are listed in the trace.

    python3 tests/replay/traces/convert.py [--trees build/replay/trees] [--check]
"""

import argparse
import difflib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WINDOW = 100  # SWE-agent's editor window


class Tree:
    """The task repository at the trajectory's start, with the agent's edits."""

    def __init__(self, root):
        self.root = root
        self.changed = {}  # rel path -> text, or None when deleted

    def text(self, rel):
        rel = os.path.normpath(rel)
        if rel in self.changed:
            return self.changed[rel]
        path = os.path.join(self.root, rel)
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            return f.read()

    def set(self, rel, text):
        self.changed[os.path.normpath(rel)] = text

    def exists(self, rel):
        return self.text(rel) is not None

    def files(self):
        """Every file now in the tree (for checking a listing line)."""
        out = set()
        for dirpath, _, names in os.walk(self.root):
            for n in names:
                out.add(os.path.relpath(os.path.join(dirpath, n), self.root))
        for rel, text in self.changed.items():
            (out.add if text is not None else out.discard)(rel)
        return out


def hunks(old, new):
    """Line hunks turning `old` into `new`: [first line (1-based), lines removed, text]."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append([i1 + 1, i2 - i1, "".join(b[j1:j2])])
    # Applied from the last to the first, each hunk's line numbers still hold.
    return out[::-1]


def bre_to_regex(p):
    """A POSIX basic regular expression (grep's default) as a Rust regex."""
    out, i, n = [], 0, len(p)
    while i < n:
        c = p[i]
        if c == "\\" and i + 1 < n:
            d = p[i + 1]
            i += 2
            if d in "(){}|+?":
                out.append(d)
            elif d in "<>":
                out.append(r"\b")
            elif d in "wWsSbB":
                out.append("\\" + d)
            elif d.isalnum():
                out.append(d)
            else:
                out.append("\\" + d)
            continue
        if c == "[":
            j = bracket_end(p, i)
            out.append(bracket(p[i:j]))
            i = j
            continue
        if c in "(){}|+?":
            out.append("\\" + c)
        elif c == "^" and i != 0:
            out.append(r"\^")
        elif c == "$" and i != n - 1:
            out.append(r"\$")
        elif c == "*" and i == 0:
            out.append(r"\*")
        else:
            out.append(c)
        i += 1
    return "".join(out)


def ere_to_regex(p):
    """A POSIX extended regular expression (grep -E) as a Rust regex."""
    out, i = [], 0
    while i < len(p):
        if p[i] == "[":
            j = bracket_end(p, i)
            out.append(bracket(p[i:j]))
            i = j
        elif p[i] == "\\" and i + 1 < len(p):
            out.append(p[i : i + 2])
            i += 2
        else:
            out.append(p[i])
            i += 1
    return "".join(out)


def bracket_end(p, i):
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    if j < len(p) and p[j] == "]":
        j += 1
    while j < len(p) and p[j] != "]":
        if p[j] == "[" and j + 1 < len(p) and p[j + 1] in ":.=":
            end = p.find(p[j + 1] + "]", j + 2)
            j = end + 2 if end >= 0 else j + 1
        else:
            j += 1
    return min(j + 1, len(p))


def bracket(b):
    """A POSIX bracket expression, whose backslashes are literal, for Rust."""
    inner = b[1:-1] if b.endswith("]") else b[1:]
    neg = inner.startswith("^")
    if neg:
        inner = inner[1:]
    body = inner.replace("\\", "\\\\").replace("[", "\\[").replace("&&", "&\\&")
    body = re.sub(r"\\\[:(\w+):\]", r"[:\1:]", body)
    if body.startswith("]"):
        body = "\\]" + body[1:]
    return "[" + ("^" if neg else "") + body + "]"


def split_top(cmd, seps):
    """Split a shell command at top-level separators (outside quotes)."""
    parts, cur, i, quote = [], [], 0, None
    while i < len(cmd):
        c = cmd[i]
        if quote:
            cur.append(c)
            if c == quote:
                quote = None
            elif c == "\\" and quote == '"' and i + 1 < len(cmd):
                cur.append(cmd[i + 1])
                i += 1
        elif c in "'\"":
            quote = c
            cur.append(c)
        elif c == "\\" and i + 1 < len(cmd):
            cur.append(cmd[i : i + 2])
            i += 1
        else:
            for sep in seps:
                if cmd.startswith(sep, i):
                    parts.append("".join(cur).strip())
                    cur = []
                    i += len(sep) - 1
                    break
            else:
                cur.append(c)
        i += 1
    parts.append("".join(cur).strip())
    return [p for p in parts if p]


def strip_here_documents(cmd):
    """The command without the bodies of its here-documents (`python3 - <<'PY'`
    ... `PY`): they are a program's input, not commands."""
    out, end = [], None
    for line in cmd.split("\n"):
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        out.append(line)
        m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if m:
            end = m.group(1)
    return "\n".join(out)


class Converter:
    def __init__(self, raw, tree):
        self.raw = raw
        self.tree = tree
        self.cwd = raw["cwd"].rstrip("/") + "/"
        self.steps = []
        self.skipped = {}
        self.checked = 0
        self.mismatches = []
        self.open_file = None  # SWE-agent's editor

    # -- paths and output --------------------------------------------------
    def path(self, p, here=""):
        if p.startswith(self.cwd):
            p = p[len(self.cwd) :]
        elif p == self.cwd.rstrip("/"):
            p = "."
        if here and not os.path.isabs(p):
            p = os.path.join(here, p)
        return p

    def call(self, tool, **args):
        self.steps.append({"tool": tool, "args": {k: v for k, v in args.items() if v is not None}})

    def skip(self, word):
        self.skipped[word] = self.skipped.get(word, 0) + 1

    def write(self, rel, text):
        old = self.tree.text(rel)
        self.tree.set(rel, text)
        if old is None:
            self.steps.append({"write": rel, "content": text})
        elif old != text:
            self.steps.append({"edit": rel, "hunks": hunks(old, text)})

    def delete(self, rel):
        if self.tree.exists(rel):
            self.tree.set(rel, None)
            self.steps.append({"delete": rel})

    # -- verification ------------------------------------------------------
    def check(self, step, n):
        for seen in step.get("saw", []):
            self.checked += 1
            if not self.seen_in_tree(seen):
                self.mismatches.append({"step": n, "saw": seen})
        for line, seen in step.get("saw_lines", {}).items():
            self.checked += 1
            lines = (self.tree.text(self.open_file) or "").splitlines()
            k = int(line)
            if not (0 < k <= len(lines) and lines[k - 1] == seen):
                self.mismatches.append({"step": n, "line": k, "saw": seen})
        for path, lines in step.get("saw_at", {}).items():
            text = (self.tree.text(self.path(path)) or "").splitlines()
            for line, seen in lines.items():
                self.checked += 1
                k = int(line)
                if not (0 < k <= len(text) and text[k - 1] == seen):
                    self.mismatches.append({"step": n, "path": path, "line": k, "saw": seen})
        if "total" in step:
            self.checked += 1
            total = len((self.tree.text(self.open_file) or "").splitlines())
            if total != step["total"]:
                self.mismatches.append({"step": n, "total_lines": step["total"], "tree": total})

    def seen_in_tree(self, seen):
        """An output line: `path:text` (grep), a path (find), a file's line (cat)."""
        as_path = self.path(seen)
        if self.tree.exists(as_path):
            return True
        if "/" not in seen and any(os.path.basename(f) == seen for f in self.tree.files()):
            return True
        m = re.match(r"^([^:]+):(\d+:)?(.*)$", seen)
        if m and self.tree.exists(self.path(m.group(1))):
            return m.group(3) in self.tree.text(self.path(m.group(1))).splitlines()
        touched = [self.steps_path(s) for s in self.steps[-3:]]
        return any(p and seen in (self.tree.text(p) or "").splitlines() for p in touched)

    @staticmethod
    def steps_path(s):
        return s.get("args", {}).get("path") if "tool" in s else None

    # -- bash (mini-swe-agent) ---------------------------------------------
    def bash(self, cmd):
        heredoc = re.match(
            r"^cat\s+<<\s*'?(\w+)'?\s*>\s*(\S+)([^\n]*)\n(.*?)\n\1[ \t]*(?:\n(.*))?$", cmd, re.S
        )
        if heredoc:
            self.write(self.path(heredoc.group(2)), heredoc.group(4) + "\n")
            # What follows the here-document on its first line (`&& python
            # f`), then the lines after it, run next, as the shell would.
            rest = heredoc.group(3).strip()
            for word in ("&&", "||", ";"):
                rest = rest[len(word) :].strip() if rest.startswith(word) else rest
            for more in (rest, heredoc.group(5)):
                if more:
                    self.bash(more)
            return
        cmd = strip_here_documents(cmd)
        # A line that starts with an operator is a syntax error: the shell
        # runs what came before it and nothing from there on.
        lines = cmd.split("\n")
        for i, line in enumerate(lines):
            if i > 0 and re.match(r"^\s*(&&|\|\||\||;)", line):
                cmd = "\n".join(lines[:i])
                self.skip("syntax error")
                break
        here = ""
        # A command of several lines runs each line in turn; a line that is
        # only a comment runs nothing.
        for segment in split_top(cmd, ["&&", "||", ";", "\n"]):
            if segment.startswith("#"):
                continue
            words = shlex.split(split_top(segment, ["|"])[0]) if segment else []
            if words and words[0] == "cd" and len(words) == 2:
                here = os.path.normpath(os.path.join(here, self.path(words[1])))
                continue
            self.pipeline(split_top(segment, ["|"]), here)

    def pipeline(self, stages, here):
        argv = [shlex.split(s) for s in stages]
        first = argv[0]
        prog = first[0]
        if prog == "cat" and len(first) == 2 and len(argv) == 1:
            self.call("read", path=self.path(first[1], here))
        elif prog == "cat" and len(first) == 2 and argv[1][0] in ("grep", "rg"):
            self.grep(argv[1] + [first[1]], here)
        elif prog == "cat" and len(first) == 2 and argv[1][0] in ("head", "tail"):
            self.head_tail(argv[1] + [first[1]], here)
        elif prog == "cat" and len(first) == 2 and argv[1][0] == "sed" and "-n" in argv[1]:
            self.sed_print(argv[1][1:] + [first[1]], here)
        elif prog == "nl" and len(argv) == 2 and argv[1][0] == "sed":
            self.sed_print(argv[1][1:] + [first[-1]], here)
        elif prog == "sed" and "-i" in first:
            self.edit_in_place(first, here)
        elif prog == "perl" and any(re.match(r"^-[a-zA-Z0-9]*i", a) for a in first[1:]):
            self.edit_in_place(first, here)
        elif prog == "sed" and "-n" in first:
            self.sed_print(first[1:], here)
        elif prog in ("head", "tail"):
            self.head_tail(first, here)
        elif prog in ("grep", "rg", "egrep"):
            self.grep(first, here)
        elif prog == "find":
            self.find(first, argv[1:], here)
        elif prog == "ls":
            self.ls(first, argv[1:], here)
        elif prog == "git" and first[1:2] == ["checkout"]:
            self.restore(first[2:], here)
        elif prog == "rm":
            for p in first[1:]:
                if not p.startswith("-"):
                    self.delete(self.path(p, here))
        else:
            self.skip(prog)

    def restore(self, args, here):
        """`git checkout [--] F`: F back as the task's tree holds it."""
        paths = [p for p in args if not p.startswith("-")]
        if not paths:
            self.skip("git")
        for p in paths:
            rel = os.path.normpath(self.path(p, here))
            if rel not in self.tree.changed:
                continue
            current = self.tree.changed.pop(rel)
            original = self.tree.text(rel)
            self.tree.changed[rel] = current
            if original is not None:
                self.write(rel, original)

    def sed_print(self, args, here):
        script = next(a for a in args if a != "-n")
        path = self.path(args[-1], here)
        m = re.match(r"^(\d+)(?:,(\d+))?p$", script)
        if not m:
            self.skip("sed")
            return
        a = int(m.group(1))
        b = int(m.group(2) or a)
        self.call("read", path=path, offset=a, limit=b - a + 1)

    def head_tail(self, argv, here):
        n, files, i = 10, [], 1
        while i < len(argv):
            a = argv[i]
            if a == "-n":
                n = int(argv[i + 1].lstrip("+-"))
                i += 1
            elif re.match(r"^-n?\d+$", a):
                n = int(a.lstrip("-n"))
            else:
                files.append(a)
            i += 1
        for f in files:
            path = self.path(f, here)
            if argv[0] == "head":
                self.call("read", path=path, limit=n)
            else:
                total = len((self.tree.text(path) or "").splitlines())
                self.call("read", path=path, offset=max(1, total - n + 1), limit=n)

    def edit_in_place(self, argv, here):
        """`sed -i` or `perl -i`, run for real on a scratch copy of each file."""
        files = [self.path(a, here) for a in argv[1:] if self.tree.exists(self.path(a, here))]
        for rel in files:
            with tempfile.TemporaryDirectory() as scratch:
                copy = os.path.join(scratch, "f")
                with open(copy, "w", encoding="utf-8", newline="") as f:
                    f.write(self.tree.text(rel))
                args = [a if self.path(a, here) != rel else copy for a in argv[1:]]
                # The real program, given the agent's arguments as its shell
                # split them: no shell runs.
                subprocess.run([argv[0]] + args, check=True)
                with open(copy, encoding="utf-8", newline="") as f:
                    self.write(rel, f.read())

    def grep(self, argv, here):
        flags, rest, include, given = set(), [], None, []
        i = 1
        # GNU grep takes options anywhere before a `--`, after the pattern too.
        while i < len(argv):
            a = argv[i]
            if a == "--":
                rest.extend(argv[i + 1 :])
                break
            if a.startswith("--include="):
                include = a.split("=", 1)[1]
            elif a in ("-A", "-B", "-C", "-m", "--include"):
                if a == "--include":
                    include = argv[i + 1]
                i += 1
            elif a.startswith("--"):
                pass
            elif a.startswith("-") and len(a) > 1:
                cluster = a[1:].rstrip("0123456789")
                flags.update(cluster)
                # A trailing -A/-B/-C/-m takes the next word as its count;
                # -e takes the pattern.
                if cluster[-1:] in ("A", "B", "C", "m") and cluster == a[1:]:
                    i += 1
                elif cluster[-1:] == "e":
                    given.append(argv[i + 1])
                    i += 1
            else:
                rest.append(a)
            i += 1
        # Patterns given with -e (any number: a line matching any of them
        # matches) leave every other word a path.
        if given:
            raws, paths = given, rest or ["."]
        elif rest:
            raws, paths = rest[:1], rest[1:] or ["."]
        else:
            self.skip("grep")
            return
        if argv[0] == "rg" or "E" in flags or argv[0] == "egrep" or "P" in flags:
            patterns = [ere_to_regex(r) for r in raws]
        elif "F" in flags:
            patterns = [re.escape(r) for r in raws]
        else:
            patterns = [bre_to_regex(r) for r in raws]
        pattern = patterns[0] if len(patterns) == 1 else "|".join(f"(?:{p})" for p in patterns)
        for p in paths:
            self.call(
                "grep",
                pattern=pattern,
                path=self.path(p, here),
                glob=("**/" + include) if include else None,
                ignore_case=True if "i" in flags else None,
            )

    def find(self, argv, filters, here):
        start = argv[1] if len(argv) > 1 and not argv[1].startswith("-") else "."
        name = None
        for flag in ("-name", "-iname", "-path"):
            if flag in argv:
                name = argv[argv.index(flag) + 1]
        if name is None:
            name = "*"
        pattern = name if name.startswith("*/") or "/" in name else "**/" + name
        self.call("glob", pattern=pattern, path=self.path(start, here))

    def ls(self, argv, filters, here):
        opts = "".join(a[1:] for a in argv[1:] if a.startswith("-"))
        dirs = [a for a in argv[1:] if not a.startswith("-")] or ["."]
        for d in dirs:
            path = self.path(d, here)
            if "R" in opts:
                word = None
                if filters and filters[0][0] == "grep":
                    word = next((w for w in filters[0][1:] if not w.startswith("-")), None)
                self.call("glob", pattern="**/*" + (word + "*" if word else ""), path=path)
            else:
                self.call("ls", path=path)

    # -- SWE-agent ---------------------------------------------------------
    def swe_agent(self, step):
        cmd = step["cmd"]
        head, _, body = cmd.partition("\n")
        words = shlex.split(head)
        if not words:
            return
        verb = words[0]
        if verb == "open":
            self.open_file = self.path(words[1])
            self.window(step)
        elif verb in ("goto", "scroll_down", "scroll_up"):
            self.window(step)
        elif verb == "create":
            self.open_file = self.path(words[1])
            self.write(self.open_file, "")
        elif verb == "edit":
            if step.get("applied", True):
                a, b = (int(x) for x in words[1].split(":"))
                text = body.rsplit("\nend_of_edit", 1)[0]
                lines = (self.tree.text(self.open_file) or "").splitlines(keepends=True)
                new = [line + "\n" for line in text.split("\n")]
                self.write(self.open_file, "".join(lines[: a - 1] + new + lines[b:]))
        elif verb == "find_file":
            where = self.path(words[2]) if len(words) > 2 else None
            self.call("glob", pattern="**/" + words[1], path=where)
        elif verb == "search_dir":
            where = self.path(words[2]) if len(words) > 2 else None
            self.call("grep", pattern=re.escape(words[1]), path=where)
        elif verb == "search_file":
            where = self.path(words[2]) if len(words) > 2 else self.open_file
            self.call("grep", pattern=re.escape(words[1]), path=where)
        elif verb == "submit":
            self.skip("submit")
        else:
            self.bash(cmd)

    def window(self, step):
        first, last = step["lines"]
        self.call("read", path=self.open_file, offset=first, limit=min(WINDOW, last - first + 1))

    def run(self):
        for n, step in enumerate(self.raw["steps"]):
            if self.raw["format"] == "swe-agent":
                self.swe_agent(step)
            else:
                self.bash(step["cmd"])
            self.check(step, n)
        return {
            "id": self.raw["id"],
            "source": self.raw["source"],
            "tree": self.raw["tree"],
            "verified": {
                "checked": self.checked,
                "matched": self.checked - len(self.mismatches),
                "mismatches": self.mismatches,
            },
            "skipped": dict(sorted(self.skipped.items())),
            "steps": self.steps,
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trees", default=os.path.join(HERE, "..", "..", "..", "build", "replay", "trees"))
    ap.add_argument("--check", action="store_true", help="convert, and fail if a committed trace differs")
    args = ap.parse_args()
    stale = []
    raw_dir = os.path.join(HERE, "raw")
    for name in sorted(os.listdir(raw_dir)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(raw_dir, name)) as f:
            raw = json.load(f)
        raw["id"] = name[: -len(".json")]
        root = os.path.join(args.trees, raw["tree"])
        if not os.path.isdir(root):
            sys.exit(f"{name}: no tree {root}: run `make replay-trees` first")
        trace = Converter(raw, Tree(root)).run()
        text = json.dumps(trace, indent=None, separators=(",", ":")) + "\n"
        out = os.path.join(HERE, name)
        if args.check:
            committed = open(out).read() if os.path.exists(out) else None
            if committed != text:
                stale.append(name)
        else:
            with open(out, "w") as f:
                f.write(text)
        v = trace["verified"]
        calls = sum(1 for s in trace["steps"] if "tool" in s)
        print(f"{raw['id']}: {calls} calls, {len(trace['steps']) - calls} edits, "
              f"observations {v['matched']}/{v['checked']} matched the tree")
        for m in v["mismatches"]:
            print(f"  mismatch: {m}")
    if stale:
        sys.exit(f"not what convert.py makes of raw/ now: {', '.join(stale)}")


if __name__ == "__main__":
    main()
