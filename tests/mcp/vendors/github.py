"""GitHub end to end: `toolhost serve` with github.wasm alone (no `[bind]`)
against the loopback fake of GitHub's API (github_fake.py), through the
Python MCP client. Every tool's request is checked exactly, with the token
the host injected; every result and error is checked; a rate limit is
retried within the call's budget; the list → issue → comments chain is
prefetched and never a write.

    github.py --toolhost PATH --plugin github.wasm
"""

import argparse

from fake import call, check, provider_session, structured, text
from driver import run
from github_fake import OWNER, REPO, github

parser = argparse.ArgumentParser()
parser.add_argument("--toolhost", required=True)
parser.add_argument("--plugin", required=True)
opts = parser.parse_args()

REPO_PATH = f"/repos/{OWNER}/{REPO}"


async def main():
    fake = github()
    async with provider_session(opts.toolhost, opts.plugin, "github", fake,
                                {"owner": OWNER, "repo": REPO}) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        check({"get_issues", "get_issue", "get_issue_comments"} <= names, f"served: {sorted(names)}")

        # get_issues: the documented query, pull requests left out, Link pages followed.
        result = await call(client, "get_issues", {"limit": 5, "offset": 0})
        fake.expect("GET", f"{REPO_PATH}/issues", query={"state": "open", "per_page": "5", "page": "1"})
        issues = structured(result)["issues"]
        check([i["key"] for i in issues] == ["#45", "#44", "#43", "#42", "#41"], f"issues: {issues}")
        check("5 open issue(s) in acme/widgets" in text(result), text(result))

        fake.clear()
        # An offset inside a page: that page and the next, by its Link header.
        result = await call(client, "get_issues", {"limit": 10, "offset": 5, "labels": ["bug"]})
        pages = [s.query for s in fake.requests("GET", f"{REPO_PATH}/issues")]
        check(pages == [{"state": "open", "labels": "bug", "per_page": "10", "page": str(p)} for p in (1, 2)],
              f"pages asked: {pages}")
        keys = [i["key"] for i in structured(result)["issues"]]
        check(keys == [f"#{n}" for n in range(30, 0, -3)], keys)

        result = await call(client, "get_issues", {"limit": 50, "state": "all"})
        keys = [i["key"] for i in structured(result)["issues"]]
        check("#7" not in keys and len(keys) == 44, f"pull request #7 left out, 44 issues: {keys}")

        # get_issue and its errors.
        result = await call(client, "get_issue", {"key": "#12"})
        fake.expect("GET", f"{REPO_PATH}/issues/12", query={})
        check(structured(result)["title"] == "Issue 12", structured(result))
        result = await call(client, "get_issue", {"key": "#999"}, error=True)
        check("GitHub get_issue: not found" in text(result), text(result))

        result = await call(client, "get_issue_comments", {"key": "#12"})
        fake.expect("GET", f"{REPO_PATH}/issues/12/comments", query={"per_page": "30", "page": "1"})
        check([c["body"] for c in structured(result)["comments"]] == ["Comment 0 on 12", "Comment 1 on 12"],
              structured(result))

        # A rate limit with a short Retry-After is waited out by the host.
        fake.clear()
        fake.rate_limit("GET", f"{REPO_PATH}/issues/(\\d+)", times=1, retry_after="1")
        result = await call(client, "get_issue", {"key": "#13"})
        check(len(fake.requests("GET", f"{REPO_PATH}/issues/13")) == 2, "429 then a retry")
        # One longer than the call's budget is an error saying so.
        fake.rate_limit("GET", f"{REPO_PATH}/issues/(\\d+)", times=1, retry_after="3600")
        result = await call(client, "get_issue", {"key": "#14"}, error=True)
        check("rate limited" in text(result) and "3600 s" in text(result), text(result))
    fake.stop()
    print("ok: github")


run(main)
