#!/usr/bin/env python3
"""Convert published MCPMark agent runs on vendor MCP servers into traces.

The source (see SOURCES.md) is eval-sys/mcpmark-community-experiments at a
pinned commit: for each vendor server, `mcp_servers/SERVER/official/run-N/
TASK/{meta.json,messages.json}`, one MCPMark run of one task by one model.
`messages.json` is the agent loop's OpenAI "Responses"-style item list:

    {"role": "user", "content": TASK}
    {"type": "message", "role": "assistant", "content": [...]}
    {"type": "function_call", "call_id", "name", "arguments": JSON-TEXT}
    {"type": "function_call_output", "call_id", "output": TEXT}

where `output` is what MCPMark's MCP client turned the server's
CallToolResult into, in one of three forms (all three occur):

    "item"   one content item as JSON: {"type":"text","text":...}
    "items"  a JSON list of content items (text + embedded resource),
             e.g. GitHub's get_file_contents
    "result" one text item whose text is the whole CallToolResult as JSON:
             {"meta", "content": [...], "structuredContent", "isError"}
             (the runs of 2025-09-02 onward)

This writes one JSON line per trajectory, per server (OUT/github.jsonl,
OUT/notion.jsonl):

    {"id": "github/run-1/harmony__fix_conflict", "server": "github",
     "source": {"repo", "commit", "path", "messages_sha256"},
     "model", "task", "run", "success", "started", "ended",
     "agent_execution_time_s", "turn_count",
     "prompt",                  # the task text (the first user message)
     "calls": [{
        "seq": 0,               # order of the call in the trajectory
        "turn": 0,              # model turn; calls of one turn were issued together
        "tool": "list_pull_requests", "server": "github",
        "args": {...},          # the arguments as the model sent them
                                # (null and "args_text" kept if not JSON)
        "result": {"content": [ITEM, ...], "structuredContent": null|{...}},
        "result_form": "item"|"items"|"result",
        "is_error": false,
        "error_from": null|"isError"|"text"|"harness",
        "truncated": null|{"content/0/text": [ORIGINAL_CHARS, "json"|"head"]},
        "think_ms": null}]}     # no per-call timestamps in the source

Content items keep the server's fields, less the `annotations` and `meta`
keys when they are null (MCPMark's client writes them on every item).

Truncation: results are kept whole up to --cap characters per string. A
longer string at `text` (text items) or `resource/text`, `resource/blob`
(embedded resources) is cut, and the call's `truncated` maps its JSON
pointer (relative to `result`) to [original length, how]:
  "json"  a JSON text whose string leaves longer than 200 characters were
          cut to 200 + "…[+N]" (N characters cut) and which was written
          back compactly: it still parses, ids/numbers/paths stay whole;
  "head"  only the first --cap characters kept (JSON that stays too long
          after that, or plain text): it may no longer parse, and
          analyze.py then scans the text for values.
Nothing else is cut. `--cap 0` keeps every result whole.

Errors: `is_error` is true when the server said so (`isError`, form
"result"), or when the text is an error by its shape: the Notion API's
error object (`{"object":"error","status":4xx,...}`, which this Notion
server returns without isError), GitHub's `failed to ...`, `missing
required parameter ...`, or a transport error (`Error: read ECONNRESET`).
`Error: Object of type AnyUrl is not JSON serializable` is MCPMark's own
client failing to serialize an embedded resource: `error_from: "harness"`.

Scrubbing: every e-mail address (commit authors, noreply addresses, page
text) is replaced by `redacted-HASH@example.invalid`, HASH the first 10 hex
digits of the address's sha256, so that the same address stays the same
value across calls. The sources carry no tokens (checked: no ghp_,
github_pat_, ntn_, secret_ or sk- keys; the `sk-` hits are Notion URL slugs).

    python3 tests/replay/vendor/convert.py --src DIR            # the committed subset
    python3 tests/replay/vendor/convert.py --src DIR --all --cap 0 --out build/replay/vendor

DIR is a checkout (or `git archive` extract) of the source repository at
the pinned commit; each file used is checked against raw/MANIFEST.tsv.
"""

import argparse
import hashlib
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = "eval-sys/mcpmark-community-experiments"
COMMIT = "92db83e36c6da2691141a0698f137665aa0116fe"
SERVERS = ("github", "notion")  # the `official` implementation of each
DEFAULT_CAP = 16384  # characters kept per result string in the committed subset
DEFAULT_RUNS = ("run-1",)  # the committed subset: every task's first run

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")

# Text results that are errors by their shape (the server set no isError).
GITHUB_ERROR = re.compile(
    r"^(failed to |Failed to |missing required parameter|No update parameters provided"
    r"|Error: read |Error: connect |MCP error|Input validation error)"
)
HARNESS_ERROR = re.compile(r"^Error: Object of type \w+ is not JSON serializable")


def scrub(s):
    """Replace e-mail addresses by stable placeholders (see the module doc).

    A JSON-escaped `<` before an address (`\\u003cname@host`) is kept out of
    the match's meaning: the `u003c` stays in front of the placeholder."""

    def repl(m):
        addr = m.group(0)
        prefix = ""
        if addr.startswith("u003c"):
            prefix, addr = "u003c", addr[5:]
        h = hashlib.sha256(addr.lower().encode()).hexdigest()[:10]
        return f"{prefix}redacted-{h}@example.invalid"

    return EMAIL.sub(repl, s)


def scrub_value(v):
    """scrub() through a parsed JSON value."""
    if isinstance(v, str):
        return scrub(v)
    if isinstance(v, list):
        return [scrub_value(x) for x in v]
    if isinstance(v, dict):
        return {k: scrub_value(x) for k, x in v.items()}
    return v


def parse_output(output):
    """Split a function_call_output into (form, content items, structuredContent, isError|None)."""
    try:
        j = json.loads(output)
    except ValueError:
        # Not seen in this source, but keep it: a bare text result.
        return "text", [{"type": "text", "text": output}], None, None
    if isinstance(j, list):
        return "items", j, None, None
    if isinstance(j, dict) and j.get("type") == "text":
        # Form "result": the item's text is the whole CallToolResult.
        t = j.get("text", "")
        # (GitHub's create_or_update_file answers {"content": {file}, "commit": ...}
        # as plain text: a CallToolResult has a list of items and an isError key.)
        if t.startswith('{"meta"') or t.startswith('{"content"'):
            try:
                r = json.loads(t)
            except ValueError:
                r = None
            if (
                isinstance(r, dict)
                and isinstance(r.get("content"), list)
                and "isError" in r
                and set(r) <= {"meta", "content", "structuredContent", "isError"}
            ):
                return "result", r.get("content") or [], r.get("structuredContent"), r.get("isError")
        return "item", [j], None, None
    return "item", [j], None, None


def clean_item(item):
    """Drop the client's null `annotations`/`meta` keys from a content item (and its resource)."""
    out = {k: v for k, v in item.items() if not (k in ("annotations", "meta") and v is None)}
    if isinstance(out.get("resource"), dict):
        out["resource"] = {k: v for k, v in out["resource"].items() if not (k == "meta" and v is None)}
    return out


LEAF_CAP = 200  # characters kept per long string inside a JSON text that is shrunk


def shrink_json(text, cap):
    """Shrink a JSON text under cap by cutting its long string leaves, or None.

    Every string leaf longer than LEAF_CAP keeps its first LEAF_CAP
    characters followed by "…[+N]" (N: characters cut); ids, numbers, names
    and paths, which are short, stay whole, so the text still parses and
    still carries the values later calls take. Re-serialized compactly
    (keys in the server's order; non-ASCII as is)."""
    try:
        j = json.loads(text)
    except ValueError:
        return None
    if not isinstance(j, (dict, list)):
        return None

    def cut(v):
        if isinstance(v, str) and len(v) > LEAF_CAP:
            return v[:LEAF_CAP] + f"…[+{len(v) - LEAF_CAP}]"
        if isinstance(v, list):
            return [cut(x) for x in v]
        if isinstance(v, dict):
            return {k: cut(x) for k, x in v.items()}
        return v

    out = json.dumps(cut(j), ensure_ascii=False, separators=(",", ":"))
    return out if len(out) <= cap else None


def truncate(content, cap):
    """Cut long strings in content items in place; return {pointer: [original length, how]} or None.

    how is "json" when a JSON text was shrunk by shrink_json (it still
    parses), "head" when only the first cap characters were kept."""
    if not cap:
        return None
    cut = {}
    for i, item in enumerate(content):
        for holder, key, ptr in (
            (item, "text", f"content/{i}/text"),
            (item.get("resource") or {}, "text", f"content/{i}/resource/text"),
            (item.get("resource") or {}, "blob", f"content/{i}/resource/blob"),
        ):
            s = holder.get(key)
            if isinstance(s, str) and len(s) > cap:
                shrunk = shrink_json(s, cap) if key == "text" else None
                if shrunk is not None:
                    cut[ptr] = [len(s), "json"]
                    holder[key] = shrunk
                else:
                    cut[ptr] = [len(s), "head"]
                    holder[key] = s[:cap]
    return cut or None


def text_error(server, text):
    """Classify a result text: None (no error), "text" (an error) or "harness"."""
    t = text.lstrip()
    if HARNESS_ERROR.match(t):
        return "harness"
    if GITHUB_ERROR.match(t):
        return "text"
    if t.startswith("{") and '"object":"error"' in t[:200].replace(" ", ""):
        return "text"  # the Notion API's error object
    return None


def convert_trajectory(server, run, task, meta, messages, cap, source):
    calls = []
    by_id = {}
    # The task as the user gave it (the first user message), to tell values
    # the agent could only have learnt from a result from those it was told.
    prompt = next((scrub(m["content"]) for m in messages if m.get("role") == "user"
                   and isinstance(m.get("content"), str)), None)
    turn = -1
    prev_type = None
    for item in messages:
        typ = item.get("type")
        if typ == "function_call":
            if prev_type != "function_call":
                turn += 1
            args_text = item.get("arguments") or "{}"
            try:
                args = json.loads(args_text)
                args_text = None
            except ValueError:
                args = None
            call = {
                "seq": len(calls),
                "turn": turn,
                "tool": item["name"],
                "server": server,
                "args": scrub_value(args),
            }
            if args_text is not None:
                call["args_text"] = scrub(args_text)
            calls.append(call)
            by_id[item["call_id"]] = call
        elif typ == "function_call_output":
            call = by_id.get(item["call_id"])
            if call is None:
                continue  # an output without its call: not seen in this source
            form, content, structured, is_error = parse_output(item["output"])
            content = [clean_item(scrub_value(c)) for c in content]
            structured = scrub_value(structured)
            err_from = "isError" if is_error else None
            if not err_from:
                texts = [c.get("text", "") for c in content if c.get("type") == "text"]
                if texts:
                    err_from = text_error(server, texts[0])
            call["result"] = {"content": content, "structuredContent": structured}
            call["result_form"] = form
            call["is_error"] = err_from is not None
            call["error_from"] = err_from
            call["truncated"] = truncate(content, cap)
            call["think_ms"] = None
        prev_type = typ
    for call in calls:  # a call whose output never came (the run was cut off)
        call.setdefault("result", None)
        call.setdefault("result_form", None)
        call.setdefault("is_error", None)
        call.setdefault("error_from", None)
        call.setdefault("truncated", None)
        call.setdefault("think_ms", None)
    return {
        "id": f"{server}/{run}/{task}",
        "server": server,
        "source": source,
        "model": meta.get("model_name"),
        "task": task,
        "run": run,
        "success": (meta.get("execution_result") or {}).get("success"),
        "started": (meta.get("time") or {}).get("start"),
        "ended": (meta.get("time") or {}).get("end"),
        "agent_execution_time_s": meta.get("agent_execution_time"),
        "turn_count": meta.get("turn_count"),
        "prompt": prompt,
        "calls": calls,
    }


def load_manifest():
    """raw/MANIFEST.tsv: path, sha256, bytes of every source file used."""
    path = os.path.join(HERE, "raw", "MANIFEST.tsv")
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                p, sha, size = line.rstrip("\n").split("\t")[:3]
                out[p] = sha
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="the source repository's files at the pinned commit")
    ap.add_argument("--out", default=HERE, help="where github.jsonl and notion.jsonl go")
    ap.add_argument("--cap", type=int, default=DEFAULT_CAP, help="characters kept per result string (0: all)")
    ap.add_argument("--all", action="store_true", help="every run, not only " + ",".join(DEFAULT_RUNS))
    ap.add_argument("--runs", help="only these runs, comma-separated (run-2,run-3,run-4: runs-2-4/)")
    ap.add_argument("--write-manifest", action="store_true", help="(re)write raw/MANIFEST.tsv from --src")
    opts = ap.parse_args()

    manifest = {} if opts.write_manifest else load_manifest()
    rows = []
    os.makedirs(opts.out, exist_ok=True)
    for server in SERVERS:
        base = os.path.join("mcp_servers", server, "official")
        trajectories = []
        for run in sorted(os.listdir(os.path.join(opts.src, base))):
            runs = opts.runs.split(",") if opts.runs else DEFAULT_RUNS
            if not run.startswith("run-") or not (opts.all or run in runs or opts.write_manifest):
                continue
            for task in sorted(os.listdir(os.path.join(opts.src, base, run))):
                rel = os.path.join(base, run, task)
                mpath = os.path.join(opts.src, rel, "messages.json")
                if not os.path.exists(mpath):
                    continue
                raw = open(mpath, "rb").read()
                sha = hashlib.sha256(raw).hexdigest()
                relm = rel + "/messages.json"
                if manifest and manifest.get(relm) != sha:
                    sys.exit(f"{relm}: sha256 {sha} is not the pinned one ({manifest.get(relm)})")
                rows.append((relm, sha, len(raw)))
                meta = json.load(open(os.path.join(opts.src, rel, "meta.json")))
                source = {"repo": REPO, "commit": COMMIT, "path": rel, "messages_sha256": sha}
                trajectories.append(
                    convert_trajectory(server, run, task, meta, json.loads(raw), opts.cap, source)
                )
        if opts.write_manifest:
            continue
        out = os.path.join(opts.out, f"{server}.jsonl")
        with open(out, "w") as f:
            for t in trajectories:
                f.write(json.dumps(t, ensure_ascii=False, sort_keys=False, separators=(",", ":")) + "\n")
        n = sum(len(t["calls"]) for t in trajectories)
        print(f"{out}: {len(trajectories)} trajectories, {n} calls, {os.path.getsize(out)} bytes")
    if opts.write_manifest:
        path = os.path.join(HERE, "raw", "MANIFEST.tsv")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(f"# {REPO} @ {COMMIT}: path\tsha256\tbytes\n")
            for r in rows:
                f.write("\t".join(map(str, r)) + "\n")
        print(f"{path}: {len(rows)} files")


if __name__ == "__main__":
    main()
