"""A replayed agent session against the GitHub fake, 80 ms per request:
list issues, read one and its comments, list pull requests, read one's
discussions and diffs, comment (a write), read again. Run once with
speculation off and once on, each against a fresh fake, through
`toolhost serve` and the Python MCP client.

It prints the tool wait (the sum of the call latencies the client saw)
off against on, the requests each fake answered (extra requests in %), and
the stale answers: every read is compared with what the fake holds when
it answers, so a prefetched result from before a write counts. Stale
answers and prefetched writes must be 0.

    replay.py --toolhost PATH --plugin github.wasm [--think-s 0.3] [--json]
    replay.py ... --check   # only assert no stale answer, no prefetched write

`--check` is what the test runs: it times nothing.
"""

import argparse
import json
import time

from fake import call, check, provider_session, structured
from driver import run  # noqa: I001 (fake puts tests/mcp on the path)
from github_fake import OWNER, REPO, github
import anyio

parser = argparse.ArgumentParser()
parser.add_argument("--toolhost", required=True)
parser.add_argument("--plugin", required=True)
parser.add_argument("--delay-s", type=float, default=0.08, help="latency of every fake request")
parser.add_argument("--think-s", type=float, default=0.3, help="the agent's time between calls (the model)")
parser.add_argument("--check", action="store_true", help="assert 0 stale and no prefetched write; print no times")
parser.add_argument("--json", action="store_true")
opts = parser.parse_args()

# The session: (tool, args); `None` args are filled from an earlier result.
SESSION = [
    ("get_issues", {"limit": 2}),
    ("get_issue", "first issue"),
    ("get_issue_comments", "first issue"),
    ("get_merge_requests", {}),
    ("get_merge_request_discussions", {"key": "pr#7"}),
    ("get_merge_request_diffs", {"key": "pr#7"}),
    ("add_issue_comment", "comment on the first issue"),
    ("get_issue_comments", "first issue"),
    ("create_merge_request_comment", {"key": "pr#7", "body": "Rebased on main; please look again."}),
    ("get_merge_request_discussions", {"key": "pr#7"}),
    ("get_issue", "first issue"),
]
WRITES = {"add_issue_comment", "create_merge_request_comment"}


def truth(fake, tool, args):
    """What a fresh read of `tool(args)` answers, from the fake's state."""
    n = int(args.get("key", "#0").rsplit("#", 1)[1])
    if tool == "get_issues":
        open_issues = sorted((i for i in fake.issues.values() if i["state"] == "open" and "pull_request" not in i),
                             key=lambda i: -i["number"])
        return [f"#{i['number']}" for i in open_issues[:args["limit"]]]
    if tool == "get_issue":
        i = fake.issues[n]
        return (i["title"], i["state"], i["comments"])
    if tool == "get_issue_comments":
        return [c["body"] for c in fake.comments[n]]
    if tool == "get_merge_requests":
        return [f"pr#{p['number']}" for p in sorted(fake.pulls.values(), key=lambda p: -p["number"])
                if p["state"] == "open"]
    if tool == "get_merge_request_discussions":
        return (len(fake.comments[n]) + sum(1 for r in fake.reviews[n] if r["body"])
                + len(fake.review_comments[n]))
    if tool == "get_merge_request_diffs":
        return [f["filename"] for f in fake.files[n]]
    raise AssertionError(f"no truth for {tool}")


def answered(tool, value):
    """The same view of the plugin's answer."""
    if tool == "get_issues":
        return [i["key"] for i in value["issues"]]
    if tool == "get_issue":
        return (value["title"], value["state"], value["comments"])
    if tool == "get_issue_comments":
        return [c["body"] for c in value["comments"]]
    if tool == "get_merge_requests":
        return [m["key"] for m in value["merge_requests"]]
    if tool == "get_merge_request_discussions":
        return sum(len(d["notes"]) for d in value["discussions"])
    if tool == "get_merge_request_diffs":
        return [f["path"] for f in value["files"]]
    raise AssertionError(f"no view of {tool}")


async def replay(speculation):
    fake = github(delay_s=opts.delay_s)
    extra = '[speculation]\nhosts = ["127.0.0.1"]' if speculation else "[speculation]\nenabled = false"
    waited, stale, first, each = 0.0, [], None, []
    async with provider_session(opts.toolhost, opts.plugin, "github", fake, {"owner": OWNER, "repo": REPO},
                                extra_toml=extra) as client:
        fake.clear()
        for tool, args in SESSION:
            if args == "first issue":
                args = {"key": first}
            elif args == "comment on the first issue":
                args = {"key": first, "body": "Reproduced on 2.4 as well."}
            start = time.perf_counter()
            result = await call(client, tool, args)
            took = time.perf_counter() - start
            waited += took
            each.append(round(took * 1000))
            value = structured(result)
            if tool == "get_issues":
                first = value["issues"][0]["key"]
            if tool not in WRITES and answered(tool, value) != truth(fake, tool, args):
                stale.append((tool, args, answered(tool, value), truth(fake, tool, args)))
            await anyio.sleep(opts.think_s)
        writes_sent = [(s.method, s.path) for s in fake.requests() if s.method != "GET"]
        requests = len(fake.requests())
    fake.stop()
    prefetched_writes = len(writes_sent) - sum(1 for tool, _ in SESSION if tool in WRITES)
    return {"speculation": speculation, "tool_wait_ms": round(waited * 1000), "requests": requests,
            "stale": stale, "prefetched_writes": prefetched_writes, "each_ms": each}


async def main():
    off = await replay(False)
    on = await replay(True)
    for r in (off, on):
        check(not r["stale"], f"stale answers with speculation {'on' if r['speculation'] else 'off'}: {r['stale']}")
        check(r["prefetched_writes"] == 0, f"a write was prefetched: {r}")
    if opts.check:
        print("ok: replay (0 stale, no prefetched write)")
        return
    extra = (on["requests"] - off["requests"]) / off["requests"] * 100
    figures = {
        "calls": len(SESSION),
        "delay_ms": round(opts.delay_s * 1000),
        "think_ms": round(opts.think_s * 1000),
        "tool_wait_ms": {"off": off["tool_wait_ms"], "on": on["tool_wait_ms"]},
        "wait_ratio_on_off": round(on["tool_wait_ms"] / off["tool_wait_ms"], 3),
        "call_ms": {"off": off["each_ms"], "on": on["each_ms"]},
        "requests": {"off": off["requests"], "on": on["requests"]},
        "extra_requests_pct": round(extra, 1),
        "stale": 0,
        "prefetched_writes": 0,
    }
    if opts.json:
        print(json.dumps(figures))
        return
    print(f"GitHub replay: {len(SESSION)} calls, {figures['delay_ms']} ms per request, "
          f"{figures['think_ms']} ms between calls")
    print(f"  tool wait   off {off['tool_wait_ms']} ms   on {on['tool_wait_ms']} ms   "
          f"(on/off {figures['wait_ratio_on_off']})")
    print(f"  requests    off {off['requests']}   on {on['requests']}   (extra {figures['extra_requests_pct']}%)")
    print("  stale answers 0, prefetched writes 0")


run(main)
