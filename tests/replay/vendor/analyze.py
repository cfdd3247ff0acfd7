#!/usr/bin/env python3
"""Measure what a speculating host could predict in the vendor traces.

Reads traces written by convert.py (JSONL, one trajectory a line) and
reports, per server and overall:

- trajectories and calls, reads vs writes (by tool name, see KIND below);
- result shapes: structuredContent, JSON as text, plain text, embedded
  resources, errors;
- value-flow predictable calls: a call is predictable when one of its
  argument values (a leaf of `args`: a string of 3+ characters, or an
  integer other than 0/1) appears in the result of one of the 3 calls
  before it. "novel" counts only values that the task text and every
  earlier call's arguments do not already hold, i.e. values the agent can
  only have learnt from a result (owner/repo names, told in the task,
  are not novel). Where the value was found:
    `sc.PATH`        a leaf of structuredContent,
    `text[K].PATH`   a leaf of JSON parsed out of content item K's text,
    `text[K]~`       a substring of item K's text (not JSON, or truncated),
    `res[K]~`        a substring of embedded resource K's text;
  PATH has list indices as [*]. Strings are compared with dashes dropped
  and case folded, so that Notion's dashed and undashed ids match.
- exact repeats: a call with the same tool and arguments as an earlier
  one in the trajectory (and of those, how many had no write in between);
- the most frequent chains among predictable calls: previous tool ->
  tool, argument path, source path.

    python3 tests/replay/vendor/analyze.py [FILE.jsonl ...] [--json] [--top N]

Without files it reads the committed subset (github.jsonl, notion.jsonl
beside this script). Figures over the full set: convert with `--all --cap 0
--out build/replay/vendor` and pass those files.
"""

import argparse
import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WINDOW = 3  # a result may feed any of the next WINDOW calls

# Reads and writes by tool name. GitHub's server (github/github-mcp-server)
# names reads get_/list_/search_ (and marks them readOnlyHint); the Notion
# server (makenotion/notion-mcp-server, tools generated from the API's
# OpenAPI spec) names them after the endpoint: GETs are API-get-/
# API-retrieve-, and two POSTs are reads (search, database query).
READ = re.compile(
    r"^(get_|list_|search_|download_)"
    r"|^API-(get-|retrieve-|post-search$|post-database-query$)"
)


def kind(tool):
    return "read" if READ.search(tool) else "write"


def load(paths):
    out = []
    for p in paths:
        with open(p) as f:
            for line in f:
                if line.strip():
                    out.append(json.loads(line))
    return out


def norm(v):
    """The form values are compared in: strings case-folded without dashes."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not v.is_integer():
            return ("n", v)
        v = int(v)
        return None if v in (0, 1) else ("n", v)
    if isinstance(v, str):
        s = v.strip()
        if len(s) < 3:
            return None
        return ("s", s.replace("-", "").casefold())
    return None


def leaves(v, path=""):
    """(path, value) for every scalar leaf; list indices become [*]."""
    if isinstance(v, dict):
        for k, x in v.items():
            yield from leaves(x, f"{path}.{k}" if path else k)
    elif isinstance(v, list):
        for x in v:
            yield from leaves(x, f"{path}[*]")
    else:
        yield path, v


def arg_values(args):
    """{normalized value: argument path} for a call's argument leaves."""
    out = {}
    if isinstance(args, (dict, list)):
        for p, v in leaves(args):
            n = norm(v)
            if n is not None:
                out.setdefault(n, p or "$")
    return out


def parse_json_text(text):
    try:
        j = json.loads(text)
    except (ValueError, TypeError):
        return None
    return j if isinstance(j, (dict, list)) else None


class ResultIndex:
    """Where each value occurs in one call's result."""

    def __init__(self, result):
        self.exact = {}  # normalized value -> first source path
        self.texts = []  # (label, folded text without dashes) for substring search
        if not result:
            return
        sc = result.get("structuredContent")
        if sc is not None:
            self._add(sc, "sc")
        for k, item in enumerate(result.get("content") or []):
            if item.get("type") == "text":
                t = item.get("text") or ""
                j = parse_json_text(t)
                if j is not None:
                    self._add(j, f"text[{k}]")
                self.texts.append((f"text[{k}]~", t.replace("-", "").casefold()))
            elif item.get("type") == "resource":
                t = (item.get("resource") or {}).get("text") or ""
                self.texts.append((f"res[{k}]~", t.replace("-", "").casefold()))

    def _add(self, v, prefix):
        for p, x in leaves(v):
            n = norm(x)
            if n is not None and n not in self.exact:
                sep = "" if p.startswith("[") else "."
                self.exact[n] = f"{prefix}{sep}{p}" if p else prefix

    def find(self, n):
        """The source path of normalized value n in this result, or None."""
        if n in self.exact:
            return self.exact[n]
        needle = str(n[1])
        # Substrings: numbers and short strings match by chance too easily.
        if n[0] == "n" or len(needle) < 6:
            return None
        for label, t in self.texts:
            if needle in t:
                return label
        return None


def analyze(trajs, top):
    per = collections.defaultdict(collections.Counter)
    chains = collections.Counter()
    chain_traj = collections.defaultdict(set)
    tools = collections.defaultdict(collections.Counter)
    for t in trajs:
        srv = t["server"]
        S = per[srv]
        S["trajectories"] += 1
        prompt = (t.get("prompt") or "").replace("-", "").casefold()
        calls = t["calls"]
        idx = [ResultIndex(c.get("result")) for c in calls]
        seen_args = set()  # normalized argument values of earlier calls
        earlier = {}  # canonical (tool, args) -> seq of its last occurrence
        last_write = -1
        for i, c in enumerate(calls):
            k = kind(c["tool"])
            tools[srv][(c["tool"], k)] += 1
            S["calls"] += 1
            S[k + "s"] += 1
            # Result shape.
            r = c.get("result")
            if r is None:
                S["no_result"] += 1
            else:
                if r.get("structuredContent") is not None:
                    S["structured"] += 1
                items = r.get("content") or []
                texts = [x for x in items if x.get("type") == "text"]
                if any(x.get("type") == "resource" for x in items):
                    S["resource"] += 1
                if texts and parse_json_text(texts[0].get("text")) is not None:
                    S["json_text"] += 1
                elif texts and (texts[0].get("text") or "").lstrip()[:1] in ("{", "[") and c.get("truncated"):
                    S["json_text"] += 1  # JSON cut by truncation
                    S["json_text_truncated"] += 1
                elif texts:
                    S["plain_text"] += 1
                if c.get("truncated"):
                    S["truncated"] += 1
            if c.get("is_error"):
                S["errors"] += 1
                S["errors_" + (c.get("error_from") or "?")] += 1
            # Exact repeat of an earlier call.
            key = json.dumps([c["tool"], c.get("args")], sort_keys=True)
            if key in earlier:
                S["repeats"] += 1
                S["repeats_" + k] += 1
                if k == "read" and last_write < earlier[key]:
                    S["repeats_read_no_write_between"] += 1
            earlier[key] = i
            # Value flow from the previous WINDOW results.
            vals = arg_values(c.get("args"))
            hit = novel_hit = None
            for n, apath in vals.items():
                for j in range(i - 1, max(-1, i - 1 - WINDOW), -1):
                    if calls[j].get("is_error"):
                        continue
                    src = idx[j].find(n)
                    if src is None:
                        continue
                    h = (j, apath, src, n)
                    hit = hit or h
                    is_novel = n not in seen_args and str(n[1]) not in prompt
                    if is_novel and novel_hit is None:
                        novel_hit = h
                    break
                if novel_hit:
                    break
            if hit:
                S["flow"] += 1
            if novel_hit:
                S["flow_novel"] += 1
                S["flow_novel_" + k] += 1
                j, apath, src, _ = novel_hit
                S[f"flow_novel_d{i - j}"] += 1
                ch = (srv, calls[j]["tool"], c["tool"], apath, src)
                chains[ch] += 1
                chain_traj[ch].add(t["id"])
            seen_args.update(vals)
            if k == "write":
                last_write = i
    total = collections.Counter()
    for S in per.values():
        total.update(S)
    per = dict(per)
    per["all"] = total
    top_chains = [
        {"server": ch[0], "from": ch[1], "to": ch[2], "arg": ch[3], "source": ch[4],
         "calls": n, "trajectories": len(chain_traj[ch])}
        for ch, n in chains.most_common(top)
    ]
    tool_rows = {
        srv: [{"tool": t, "kind": k, "calls": n} for (t, k), n in sorted(c.items(), key=lambda x: -x[1])]
        for srv, c in tools.items()
    }
    return {"servers": {s: dict(v) for s, v in per.items()}, "top_chains": top_chains, "tools": tool_rows}


def pct(a, b):
    return f"{100 * a / b:5.1f}%" if b else "   -  "


def print_table(rep):
    servers = rep["servers"]
    cols = [s for s in ("github", "notion", "all") if s in servers]
    rows = [
        ("trajectories", "trajectories", None),
        ("calls", "calls", None),
        ("reads", "reads", "calls"),
        ("writes", "writes", "calls"),
        ("errors (any)", "errors", "calls"),
        ("  by isError", "errors_isError", "calls"),
        ("  by error text", "errors_text", "calls"),
        ("  harness (MCPMark client)", "errors_harness", "calls"),
        ("result: structuredContent", "structured", "calls"),
        ("result: JSON as text", "json_text", "calls"),
        ("  of which truncated JSON", "json_text_truncated", "calls"),
        ("result: plain text", "plain_text", "calls"),
        ("result: embedded resource", "resource", "calls"),
        ("results truncated", "truncated", "calls"),
        (f"value flow (any, next {WINDOW})", "flow", "calls"),
        ("value flow, novel value", "flow_novel", "calls"),
        ("  novel, into a read", "flow_novel_read", "reads"),
        ("  novel, into a write", "flow_novel_write", "writes"),
        ("  from the previous call", "flow_novel_d1", "flow_novel"),
        ("  from 2 calls back", "flow_novel_d2", "flow_novel"),
        ("  from 3 calls back", "flow_novel_d3", "flow_novel"),
        ("exact repeats", "repeats", "calls"),
        ("  repeated reads", "repeats_read", "reads"),
        ("  reads, no write between", "repeats_read_no_write_between", "reads"),
    ]
    w = 34
    print(f"{'':{w}}" + "".join(f"{c:>18}" for c in cols))
    for label, key, of in rows:
        line = f"{label:{w}}"
        for c in cols:
            S = servers[c]
            n = S.get(key, 0)
            line += f"{n:>10} {pct(n, S.get(of, 0)) if of else '':>7}"
        print(line)
    print(f"\n(percentages of the row's base: calls, reads, writes or novel-flow calls)")
    print("\nTop chains among novel value-flow calls (previous tool -> tool, argument <- result path):")
    for i, ch in enumerate(rep["top_chains"], 1):
        print(f"{i:3}. [{ch['server']}] {ch['from']} -> {ch['to']}  {ch['arg']} <- {ch['source']}"
              f"  ({ch['calls']} calls, {ch['trajectories']} trajectories)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--top", type=int, default=15, help="chains to list")
    opts = ap.parse_args()
    files = opts.files or [os.path.join(HERE, f"{s}.jsonl") for s in ("github", "notion")]
    rep = analyze(load(files), opts.top)
    rep["files"] = files
    if opts.json:
        json.dump(rep, sys.stdout, indent=1)
        print()
    else:
        print_table(rep)


if __name__ == "__main__":
    main()
