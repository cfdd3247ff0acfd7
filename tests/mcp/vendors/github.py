"""GitHub end to end: `toolhost serve` with github.wasm alone (no `[bind]`)
against the loopback fake of GitHub's API (github_fake.py), through the
Python MCP client. Every tool's request is checked exactly, with the token
the host injected; every result and error is checked (401 and 403 name the
secret, 404, 422 with GitHub's validation message); a 429 and a secondary
rate limit (403 with Retry-After) are retried within the call's budget and
one too long to wait is an error; then, with speculation on, the chains
list issues → issue → comments and pull requests → discussions and diffs
are prefetched, never a write, and a read after a write is never stale.

    github.py --toolhost PATH --plugin github.wasm
"""

import argparse

from fake import SPECULATION, call, check, provider_session, structured, text
from driver import run, wait_until  # noqa: I001 (fake puts tests/mcp on the path)
from github_fake import HEAD_SHA, OWNER, REPO, github
import repo_fake as git

parser = argparse.ArgumentParser()
parser.add_argument("--toolhost", required=True)
parser.add_argument("--plugin", required=True)
opts = parser.parse_args()

REPO_PATH = f"/repos/{OWNER}/{REPO}"
CONFIG = {"owner": OWNER, "repo": REPO}
TOOLS = {
    "get_issues", "get_issue", "get_issue_comments", "get_available_statuses", "get_users", "create_issue",
    "update_issue", "add_issue_comment", "get_merge_requests", "get_merge_request",
    "get_merge_request_discussions", "get_merge_request_diffs", "get_pipeline", "get_job_logs",
    "create_merge_request", "create_merge_request_comment", "update_merge_request", "run_pipeline_job",
    "get_repository_file", "get_commits", "get_commit", "get_branches", "search_code",
}


async def issues(client, fake):
    result = await call(client, "get_issues", {"limit": 5, "offset": 0})
    # Page 1 holds pull request #46, left out: page 2 fills the five.
    query = {"state": "open", "sort": "updated", "direction": "desc", "per_page": "5"}
    check([s.query for s in fake.requests()] == [{**query, "page": "1"}, {**query, "page": "2"}], fake.requests())
    fake.expect("GET", f"{REPO_PATH}/issues", query={**query, "page": "2"})
    found = structured(result)["issues"]
    check([i["key"] for i in found] == ["#45", "#44", "#43", "#42", "#41"], f"issues: {found}")
    check("5 open issue(s) in acme/widgets" in text(result), text(result))

    fake.clear()
    # An offset inside a page: that page and the next, by its Link header.
    result = await call(client, "get_issues", {"limit": 10, "offset": 5, "labels": ["bug"], "sort": "updated_at"})
    pages = [s.query for s in fake.requests("GET", f"{REPO_PATH}/issues")]
    want = {"state": "open", "labels": "bug", "sort": "updated", "direction": "desc", "per_page": "10"}
    check(pages == [{**want, "page": str(p)} for p in (1, 2)], f"pages asked: {pages}")
    keys = [i["key"] for i in structured(result)["issues"]]
    check(keys == [f"#{n}" for n in range(30, 0, -3)], keys)

    result = await call(client, "get_issues", {"limit": 50, "state": "all"})
    keys = [i["key"] for i in structured(result)["issues"]]
    check(not {"#7", "#46", "#47"} & set(keys) and len(keys) == 44, f"pull requests left out, 44 issues: {keys}")
    result = await call(client, "get_issues", {"limit": 2, "assignee": "hubot", "sort": "created_at",
                                               "sort_order": "asc"})
    fake.expect("GET", f"{REPO_PATH}/issues", query={"state": "open", "assignee": "hubot", "sort": "created",
                                                     "direction": "asc", "per_page": "2", "page": "1"})
    check([i["key"] for i in structured(result)["issues"]] == ["#1", "#3"], structured(result))

    # Free text: the search API, kept to this repository's issues.
    result = await call(client, "get_issues", {"search": "Issue 4", "state": "closed", "limit": 3})
    fake.expect("GET", "/search/issues", query={
        "q": f"Issue 4 repo:{OWNER}/{REPO} is:issue state:closed", "sort": "updated", "order": "desc",
        "per_page": "3", "page": "1"})
    check(structured(result)["issues"] == [], structured(result))
    result = await call(client, "get_issues", {"search": "issue 4", "labels": ["bug"], "limit": 3})
    check(fake.last().query["q"] == f'issue 4 repo:{OWNER}/{REPO} is:issue state:open label:"bug"', fake.last())
    check([i["key"] for i in structured(result)["issues"]] == ["#45", "#42", "#24"], structured(result))

    result = await call(client, "get_issue", {"key": "#12", "includeComments": True})
    # The issue and its comments are fetched at once (`http::fetch_all`), in either order.
    check(sorted(s.path for s in fake.requests()[-2:]) == [f"{REPO_PATH}/issues/12", f"{REPO_PATH}/issues/12/comments"],
          fake.requests()[-2:])
    value = structured(result)
    check((value["title"], value["body"], value["key"]) == ("Issue 12", "Body of 12", "#12"), value)
    check(len(value["comment_list"]) == 2, value)
    result = await call(client, "get_issue", {"key": "#999"}, error=True)
    check("GitHub get_issue: not found" in text(result), text(result))
    result = await call(client, "get_issue", {"key": "abc"}, error=True)
    check("`key` must be like `#42`" in text(result), text(result))

    result = await call(client, "get_issue_comments", {"key": "#12", "limit": 1, "offset": 1})
    fake.expect("GET", f"{REPO_PATH}/issues/12/comments", query={"per_page": "1", "page": "2"})
    check([c["body"] for c in structured(result)["comments"]] == ["Comment 1 on 12"], structured(result))

    fake.clear()
    result = await call(client, "get_available_statuses", {})
    check([s["name"] for s in structured(result)["statuses"]] == ["open", "closed"] and not fake.requests(),
          "open and closed, no request")

    result = await call(client, "get_users", {"search": "hub", "limit": 5})
    fake.expect("GET", "/search/users", query={"q": "hub", "per_page": "5", "page": "1"})
    check([u["login"] for u in structured(result)["users"]] == ["hubot"], structured(result))
    result = await call(client, "get_users", {"userId": "monalisa"})
    fake.expect("GET", "/users/monalisa", query={})
    check(structured(result)["users"][0]["name"] == "Monalisa", structured(result))
    result = await call(client, "get_users", {})
    fake.expect("GET", f"{REPO_PATH}/assignees", query={"per_page": "50", "page": "1"})
    check([u["login"] for u in structured(result)["users"]] == ["hubot", "octocat"], structured(result))

    result = await call(client, "create_issue", {"title": "Crash on empty input", "description": "Steps: ...",
                                                 "labels": ["bug"], "assignees": ["hubot"]})
    fake.expect("POST", f"{REPO_PATH}/issues", body={"title": "Crash on empty input", "body": "Steps: ...",
                                                    "labels": ["bug"], "assignees": ["hubot"]})
    created = structured(result)
    check(created["key"] == "#48" and created["labels"] == ["bug"], created)
    check("created #48" in text(result), text(result))

    result = await call(client, "update_issue", {"key": "#48", "state": "closed", "title": "Crash (fixed)",
                                                 "labels": []})
    fake.expect("PATCH", f"{REPO_PATH}/issues/48", body={"title": "Crash (fixed)", "state": "closed", "labels": []})
    check((structured(result)["state"], structured(result)["labels"]) == ("closed", []), structured(result))
    result = await call(client, "update_issue", {"key": "#48"}, error=True)
    check("nothing to change" in text(result), text(result))
    # A workflow status may only name a state.
    result = await call(client, "update_issue", {"key": "#48", "status": "open"})
    fake.expect("PATCH", f"{REPO_PATH}/issues/48", body={"state": "open"})
    result = await call(client, "update_issue", {"key": "#48", "status": "in review"}, error=True)
    check("no workflow status `in review`" in text(result), text(result))
    await call(client, "update_issue", {"key": "#48", "state": "closed"})

    result = await call(client, "add_issue_comment", {"key": "#48", "body": "Fixed in pr#7"})
    fake.expect("POST", f"{REPO_PATH}/issues/48/comments", body={"body": "Fixed in pr#7"})
    check(structured(result)["body"] == "Fixed in pr#7" and structured(result)["key"] == "#48", structured(result))


async def pulls(client, fake):
    result = await call(client, "get_merge_requests", {})
    fake.expect("GET", f"{REPO_PATH}/pulls", query={"state": "open", "per_page": "20", "page": "1"})
    mrs = structured(result)["merge_requests"]
    check([m["key"] for m in mrs] == ["pr#46", "pr#7"], mrs)
    check((mrs[1]["source_branch"], mrs[1]["target_branch"], mrs[1]["reviewers"]) == ("feature-x", "main",
                                                                                       ["monalisa"]), mrs[1])
    result = await call(client, "get_merge_requests", {"state": "merged"})
    fake.expect("GET", f"{REPO_PATH}/pulls", query={"state": "closed", "per_page": "20", "page": "1"})
    check([(m["key"], m["state"]) for m in structured(result)["merge_requests"]] == [("pr#47", "merged")],
          structured(result))
    result = await call(client, "get_merge_requests", {"state": "all", "author": "octocat", "labels": [],
                                                       "source_branch": "feature-x", "target_branch": "main"})
    fake.expect("GET", f"{REPO_PATH}/pulls", query={"state": "all", "head": f"{OWNER}:feature-x", "base": "main",
                                                    "per_page": "20", "page": "1"})
    check([m["key"] for m in structured(result)["merge_requests"]] == ["pr#7"], structured(result))
    result = await call(client, "get_merge_requests", {"state": "all", "labels": ["ui"]})
    check([m["key"] for m in structured(result)["merge_requests"]] == ["pr#46"], structured(result))

    result = await call(client, "get_merge_request", {"key": "pr#7"})
    fake.expect("GET", f"{REPO_PATH}/pulls/7", query={})
    value = structured(result)
    check((value["key"], value["head_sha"], value["state"], value["body"]) == ("pr#7", HEAD_SHA, "open",
                                                                             "Body of 7"), value)
    result = await call(client, "get_merge_request", {"key": "pr#999"}, error=True)
    check("GitHub get_merge_request: not found (GET /repos/acme/widgets/pulls/999)" in text(result), text(result))

    fake.clear()
    result = await call(client, "get_merge_request_discussions", {"key": "pr#7"})
    check([(s.path, s.query) for s in fake.requests()] == [
        (f"{REPO_PATH}/issues/7/comments", {"per_page": "100", "page": "1"}),
        (f"{REPO_PATH}/pulls/7/reviews", {"per_page": "100", "page": "1"}),
        (f"{REPO_PATH}/pulls/7/comments", {"per_page": "100", "page": "1"}),
    ], fake.requests())
    found = structured(result)["discussions"]
    check([d["kind"] for d in found] == ["review_thread", "review"], found)
    thread = found[0]
    check((thread["id"], thread["path"], thread["line"], thread["side"]) == ("90", "src/parse.rs", 41, "RIGHT"),
          thread)
    check([n["body"] for n in thread["notes"]] == ["Why unwrap here?", "Input is checked above."], thread)
    check(found[1]["state"] == "CHANGES_REQUESTED", found[1])
    result = await call(client, "get_merge_request_discussions", {"key": "pr#7", "offset": 1, "limit": 5})
    check([d["kind"] for d in structured(result)["discussions"]] == ["review"], structured(result))

    result = await call(client, "get_merge_request_diffs", {"key": "pr#7"})
    fake.expect("GET", f"{REPO_PATH}/pulls/7/files", query={"per_page": "100", "page": "1"})
    files = structured(result)["files"]
    check([(f["path"], f["old_path"], f["status"]) for f in files] == [
        ("src/parse.rs", "src/parse.rs", "modified"), ("docs/parse.md", "docs/old.md", "renamed")], files)
    check(files[0]["diff"].startswith("@@ -38,4"), files[0])

    fake.clear()
    result = await call(client, "create_merge_request", {
        "title": "Parse empty input", "description": "Fixes #48", "source_branch": "empty-input",
        "target_branch": "main", "draft": True, "labels": ["bug"], "assignees": ["octocat"],
        "reviewers": ["monalisa"]})
    check([(s.method, s.path, s.body) for s in fake.requests()] == [
        ("POST", f"{REPO_PATH}/pulls", {"title": "Parse empty input", "head": "empty-input", "base": "main",
                                        "body": "Fixes #48", "draft": True}),
        ("PATCH", f"{REPO_PATH}/issues/49", {"labels": ["bug"], "assignees": ["octocat"]}),
        ("POST", f"{REPO_PATH}/pulls/49/requested_reviewers", {"reviewers": ["monalisa"]}),
    ], fake.requests())
    check((structured(result)["key"], structured(result)["reviewers"]) == ("pr#49", ["monalisa"]),
          structured(result))
    # 422: GitHub's validation message reaches the model.
    result = await call(client, "create_merge_request", {"title": "Again", "source_branch": "feature-x",
                                                         "target_branch": "main"}, error=True)
    check("invalid arguments (422)" in text(result)
          and "A pull request already exists for acme:feature-x." in text(result), text(result))

    fake.clear()
    result = await call(client, "update_merge_request", {"key": "pr#49", "title": "Parse empty input safely",
                                                         "state": "closed", "target_branch": "develop",
                                                         "labels": ["bug", "parser"], "reviewers": ["hubot"]})
    check([(s.method, s.path, s.body) for s in fake.requests()] == [
        ("PATCH", f"{REPO_PATH}/issues/49", {"labels": ["bug", "parser"]}),
        ("GET", f"{REPO_PATH}/pulls/49", None),
        ("DELETE", f"{REPO_PATH}/pulls/49/requested_reviewers", {"reviewers": ["monalisa"]}),
        ("POST", f"{REPO_PATH}/pulls/49/requested_reviewers", {"reviewers": ["hubot"]}),
        ("PATCH", f"{REPO_PATH}/pulls/49", {"title": "Parse empty input safely", "state": "closed",
                                            "base": "develop"}),
    ], fake.requests())
    value = structured(result)
    result = await call(client, "update_merge_request", {"key": "pr#49", "draft": False}, error=True)
    check("cannot change draft state" in text(result), text(result))
    check((value["title"], value["state"], value["target_branch"], value["labels"], value["reviewers"]) ==
          ("Parse empty input safely", "closed", "develop", ["bug", "parser"], ["hubot"]), value)

    # Comments: inline (the head commit looked up), a reply, a general one.
    fake.clear()
    result = await call(client, "create_merge_request_comment", {"key": "pr#7", "body": "Nit: rename",
                                                                 "file_path": "src/parse.rs", "line": 40,
                                                                 "line_type": "old"})
    check([(s.method, s.path) for s in fake.requests()] == [("GET", f"{REPO_PATH}/pulls/7"),
                                                            ("POST", f"{REPO_PATH}/pulls/7/comments")],
          fake.requests())
    fake.expect("POST", f"{REPO_PATH}/pulls/7/comments", body={
        "body": "Nit: rename", "commit_id": HEAD_SHA, "path": "src/parse.rs", "line": 40, "side": "LEFT"})
    check((structured(result)["kind"], structured(result)["side"]) == ("inline", "LEFT"), structured(result))
    result = await call(client, "create_merge_request_comment", {"key": "pr#7", "body": "Agreed",
                                                                 "discussion_id": "90"})
    fake.expect("POST", f"{REPO_PATH}/pulls/7/comments/90/replies", body={"body": "Agreed"})
    result = await call(client, "create_merge_request_comment", {"key": "pr#7", "body": "Ship it",
                                                                 "file_path": "README.md", "line": 1,
                                                                 "commit_sha": HEAD_SHA}, error=True)
    check("pull_request_review_thread.path could not be resolved" in text(result), text(result))
    result = await call(client, "create_merge_request_comment", {"key": "pr#7", "body": "Ship it"})
    fake.expect("POST", f"{REPO_PATH}/issues/7/comments", body={"body": "Ship it"})
    result = await call(client, "get_merge_request_discussions", {"key": "pr#7"})
    found = structured(result)["discussions"]
    check([len(d["notes"]) for d in found if d["id"] == "90"] == [3], found)
    check(found[-1]["kind"] == "comment" and found[-1]["notes"][0]["body"] == "Ship it", found)


async def actions(client, fake):
    fake.clear()
    result = await call(client, "get_pipeline", {"mrKey": "pr#7"})
    asked = [(s.path, s.query) for s in fake.requests()]
    # The jobs of both runs are asked at once (`fetch_all`), in either order.
    jobs = {(f"{REPO_PATH}/actions/runs/{run}/jobs", "100") for run in (3001, 3002)}
    check(asked[:2] == [
        (f"{REPO_PATH}/pulls/7", {}),
        (f"{REPO_PATH}/actions/runs", {"head_sha": HEAD_SHA, "per_page": "100"}),
    ] and {(p, q.get("per_page")) for p, q in asked[2:4]} == jobs and asked[4:] == [
        (f"{REPO_PATH}/actions/jobs/4001/logs", {}),
        ("/blob/job-logs/4001", {"sig": "abc"}),
    ], asked)
    value = structured(result)
    check((value["status"], value["sha"], [r["name"] for r in value["runs"]]) == ("failed", HEAD_SHA,
                                                                                  ["CI", "Lint"]), value)
    test_job = value["runs"][0]["jobs"][0]
    check((test_job["id"], test_job["failed_steps"]) == ("4001", ["Test"]), test_job)
    check(any("panicked at src/parse.rs:41:9" in line for line in test_job["error_lines"]), test_job)
    check("error_lines" not in value["runs"][0]["jobs"][1], "only failed jobs' logs are read")

    fake.clear()
    result = await call(client, "get_pipeline", {"includeFailedLogs": False})
    check([(s.path, s.query) for s in fake.requests()] == [
        (REPO_PATH, {}),
        (f"{REPO_PATH}/actions/runs", {"branch": "main", "per_page": "100"}),
        (f"{REPO_PATH}/actions/runs/3003/jobs", {"per_page": "100"}),
    ], [(s.path, s.query) for s in fake.requests()])
    check((structured(result)["status"], len(structured(result)["runs"])) == ("running", 1), structured(result))
    result = await call(client, "get_pipeline", {"branch": "nowhere"})
    check(structured(result)["status"] == "none" and "no workflow runs" in text(result), text(result))

    result = await call(client, "get_job_logs", {"jobId": "4001", "pattern": "FAILED", "context": 1})
    check([(s.path, s.query) for s in fake.requests()[-2:]] == [(f"{REPO_PATH}/actions/jobs/4001/logs", {}),
                                                                 ("/blob/job-logs/4001", {"sig": "abc"})],
          "the log's redirect followed")
    value = structured(result)
    check((value["mode"], value["matches"], [l["n"] for l in value["lines"]]) == ("search", 2, [4, 5, 6, 7, 8]),
          value)
    result = await call(client, "get_job_logs", {"jobId": "4001", "offset": 6, "limit": 1})
    check([l["text"] for l in structured(result)["lines"]] == [
        "2026-11-20T10:00:07.0000000Z test result: FAILED. 11 passed; 1 failed"], structured(result))
    result = await call(client, "get_job_logs", {"jobId": "4001"})
    check(structured(result)["mode"] == "summary" and structured(result)["error_lines"] >= 3, structured(result))
    result = await call(client, "get_job_logs", {"jobId": "4001", "full": True})
    check(len(structured(result)["lines"]) == 8, structured(result))
    result = await call(client, "get_job_logs", {"jobId": "77"}, error=True)
    check("not found" in text(result), text(result))
    result = await call(client, "get_job_logs", {"jobId": "../x"}, error=True)
    check("`jobId` must be a job id" in text(result), text(result))

    result = await call(client, "run_pipeline_job", {"jobId": "4001"})
    fake.expect("POST", f"{REPO_PATH}/actions/jobs/4001/rerun", body={})
    check(structured(result) == {"jobId": "4001", "status": "queued"}, structured(result))
    result = await call(client, "get_pipeline", {"mrKey": "pr#7"})
    check(structured(result)["status"] == "running", structured(result))


async def repository(client, fake):
    """Files and directories at a ref, commits, branches, code search; the
    chains agents follow (directory → file, commits → commit → parent)."""
    fake.clear()
    result = await call(client, "get_repository_file", {})
    fake.expect("GET", f"{REPO_PATH}/contents", query={})
    value = structured(result)
    check(value["type"] == "dir" and [(e["path"], e["type"]) for e in value["entries"]] == [
        ("README.md", "file"), ("assets", "dir"), ("docs", "dir"), ("src", "dir")], value)
    result = await call(client, "get_repository_file", {"path": "src/", "ref": "feature-x"})
    fake.expect("GET", f"{REPO_PATH}/contents/src", query={"ref": "feature-x"})
    listed = structured(result)
    check([e["path"] for e in listed["entries"]] == ["src/lib.rs", "src/parse.rs"] and listed["ref"] == "feature-x",
          listed)
    # The path from the listing, at the listing's ref: feature-x's version.
    result = await call(client, "get_repository_file", {"path": listed["entries"][1]["path"], "ref": listed["ref"]})
    fake.expect("GET", f"{REPO_PATH}/contents/src/parse.rs", query={"ref": "feature-x"})
    value = structured(result)
    want = git.tree(git.C4)["src/parse.rs"]
    check((value["type"], value["content"], value["truncated"], value["size"]) == ("file", want, False, len(want)),
          value)
    result = await call(client, "get_repository_file", {"path": "src/parse.rs", "ref": git.C2["sha"][:7]})
    check("is_empty" not in structured(result)["content"] and "split" in structured(result)["content"],
          "an older commit's version, by short SHA")
    result = await call(client, "get_repository_file", {"path": "docs/big.txt"})
    value = structured(result)
    check(value["truncated"] is True and value["size"] == len(git.BIG) and len(value["content"]) < 105_000
          and value["content"].startswith("line 00000 of a large text file\n")
          and value["content"].endswith("bytes]") and "[… truncated: showing the first" in value["content"], value["size"])
    check("truncated to the first 100 KiB" in text(result), text(result))
    result = await call(client, "get_repository_file", {"path": "assets/logo.png"})
    check((structured(result)["binary"], structured(result)["content"]) == (True, None), structured(result))
    result = await call(client, "get_repository_file", {"path": "src/nope.rs"}, error=True)
    check("GitHub get_repository_file: not found (GET /repos/acme/widgets/contents/src/nope.rs" in text(result),
          text(result))
    result = await call(client, "get_repository_file", {"path": "../secrets"}, error=True)
    check("`path` must be a path inside the repository" in text(result), text(result))

    result = await call(client, "get_commits", {"limit": 2})
    fake.expect("GET", f"{REPO_PATH}/commits", query={"per_page": "2", "page": "1"})
    value = structured(result)
    check([c["sha"] for c in value["commits"]] == [git.C3["sha"], git.C2["sha"]] and value["has_more"], value)
    first = value["commits"][0]
    check((first["title"], first["author"], first["parents"], first["short_sha"]) ==
          ("Parse empty input", "octocat", [git.C2["sha"]], git.C3["sha"][:7]), first)
    result = await call(client, "get_commits", {"ref": "feature-x", "path": "src/parse.rs", "author": "hubot",
                                                "since": "2026-10-02T00:00:00Z"})
    fake.expect("GET", f"{REPO_PATH}/commits", query={
        "sha": "feature-x", "path": "src/parse.rs", "author": "hubot", "since": "2026-10-02T00:00:00Z",
        "per_page": "20", "page": "1"})
    check([c["title"] for c in structured(result)["commits"]] == ["Faster parse", "Add parser"], structured(result))

    # list → commit (the SHA from the list) → its parent.
    result = await call(client, "get_commit", {"sha": first["sha"]})
    fake.expect("GET", f"{REPO_PATH}/commits/{first['sha']}", query={})
    value = structured(result)
    check((value["message"], value["parents"], value["author_email"]) ==
          (git.C3["message"], [git.C2["sha"]], "octocat@example.invalid"), value)
    files = {f["path"]: f for f in value["files"]}
    check(set(files) == {"src/parse.rs", "docs/big.txt", "assets/logo.png"}, files.keys())
    check(files["src/parse.rs"]["diff"] == git.C3["changes"]["src/parse.rs"][2], files["src/parse.rs"])
    check("[… truncated" in files["docs/big.txt"]["diff"] and len(files["docs/big.txt"]["diff"]) < 21_000
          and value["diffs_truncated"] is True, len(files["docs/big.txt"]["diff"]))
    check(files["assets/logo.png"]["diff"] is None and files["assets/logo.png"]["status"] == "added", files)
    result = await call(client, "get_commit", {"sha": value["parents"][0], "includeDiffs": False})
    value = structured(result)
    check(value["title"] == "Add parser" and value["parents"] == [git.C1["sha"]]
          and all("diff" not in f for f in value["files"]), value)
    check("Add parser by hubot (2 file(s) changed)" in text(result), text(result))
    result = await call(client, "get_commit", {"sha": "feature-x"})
    fake.expect("GET", f"{REPO_PATH}/commits/feature-x", query={})
    check(structured(result)["sha"] == git.C4["sha"], structured(result))
    result = await call(client, "get_commit", {"sha": "0badc0de"}, error=True)
    check("GitHub get_commit: invalid arguments (422): No commit found for SHA: 0badc0de" in text(result),
          text(result))

    result = await call(client, "get_branches", {})
    fake.expect("GET", f"{REPO_PATH}/branches", query={"per_page": "30", "page": "1"})
    check([(b["name"], b["sha"], b["protected"]) for b in structured(result)["branches"]] ==
          [("feature-x", git.C4["sha"], False), ("main", git.C3["sha"], True)], structured(result))
    result = await call(client, "get_branches", {"search": "FEAT"})
    check([b["name"] for b in structured(result)["branches"]] == ["feature-x"], structured(result))

    result = await call(client, "search_code", {"query": "parse_empty", "limit": 5})
    fake.expect("GET", "/search/code", query={"q": f"parse_empty repo:{OWNER}/{REPO}", "per_page": "5",
                                              "page": "1"})
    value = structured(result)
    check([m["path"] for m in value["matches"]] == ["src/parse.rs"] and not value["has_more"], value)
    result = await call(client, "search_code", {}, error=True)
    check("`query` is required" in text(result) or "query" in text(result), text(result))


async def errors(client, fake):
    fake.revoked = True
    result = await call(client, "get_issues", {}, error=True)
    check("401 Unauthorized: Bad credentials" in text(result) and "secret `github`" in text(result), text(result))
    fake.revoked = False
    fake.read_only = True
    result = await call(client, "create_issue", {"title": "x"}, error=True)
    check("403 Forbidden: Resource not accessible by personal access token" in text(result)
          and "secret `github`" in text(result) and "POST /repos/acme/widgets/issues" in text(result), text(result))
    fake.read_only = False

    # A rate limit with a short Retry-After is waited out by the host.
    issue_route = f"{REPO_PATH}/issues/(\\d+)"
    fake.clear()
    fake.rate_limit("GET", issue_route, times=1, retry_after="1")
    await call(client, "get_issue", {"key": "#13"})
    check(len(fake.requests("GET", f"{REPO_PATH}/issues/13")) == 2, "429 then a retry")
    # GitHub's secondary rate limit: a 403 with Retry-After, retried too.
    fake.clear()
    fake.rate_limit("GET", issue_route, times=1, retry_after="1", status=403,
                    message="You have exceeded a secondary rate limit. Please wait a few minutes before you try again.")
    result = await call(client, "get_issue", {"key": "#15"})
    check(len(fake.requests("GET", f"{REPO_PATH}/issues/15")) == 2 and structured(result)["key"] == "#15",
          "secondary rate limit then a retry")
    # Ones longer than the call's budget are errors saying so.
    fake.rate_limit("GET", issue_route, times=1, retry_after="3600")
    result = await call(client, "get_issue", {"key": "#14"}, error=True)
    check("rate limited (429)" in text(result) and "3600 s" in text(result), text(result))
    fake.rate_limit("GET", issue_route, times=1, retry_after="3600", status=403,
                    message="You have exceeded a secondary rate limit.")
    result = await call(client, "get_issue", {"key": "#14"}, error=True)
    check("rate limited (403)" in text(result) and "secondary rate limit" in text(result), text(result))


async def prefetch(client, fake):
    """The chains prefetched, never a write, never a stale read."""
    fake.clear()
    # Two issues: their reads and comments are four prefetches, within
    # the per-host cap.
    result = await call(client, "get_issues", {"limit": 2})
    keys = [i["key"] for i in structured(result)["issues"]]
    ahead = [f"{REPO_PATH}/issues/{k[1:]}" for k in keys] + [f"{REPO_PATH}/issues/{k[1:]}/comments" for k in keys]
    await wait_until(lambda: all(fake.requests("GET", p) for p in ahead), f"prefetched {ahead}")
    fake.clear()
    result = await call(client, "get_issue", {"key": keys[0]})
    check(structured(result)["key"] == keys[0], structured(result))
    result = await call(client, "get_issue_comments", {"key": keys[0]})
    check(len(structured(result)["comments"]) == 2, structured(result))
    check(not fake.requests(), f"answered ahead of time, yet the fake saw {fake.requests()}")

    # A write: the comments read after it is fresh, not the prefetched one.
    await call(client, "add_issue_comment", {"key": keys[0], "body": "Seen on 2.4 too"})
    result = await call(client, "get_issue_comments", {"key": keys[0]})
    check([c["body"] for c in structured(result)["comments"]][-1] == "Seen on 2.4 too", structured(result))
    check(len(fake.requests("GET", f"{REPO_PATH}/issues/{keys[0][1:]}/comments")) == 1, "read again after the write")
    writes = [(s.method, s.path) for s in fake.requests() if s.method != "GET"]
    check(writes == [("POST", f"{REPO_PATH}/issues/{keys[0][1:]}/comments")], f"only the write asked for: {writes}")

    fake.clear()
    await call(client, "get_merge_requests", {})
    ahead = [f"{REPO_PATH}/pulls/{n}/{what}" for n in (46, 7) for what in ("reviews", "comments", "files")]
    await wait_until(lambda: all(fake.requests("GET", p) for p in ahead), f"prefetched {ahead}")
    fake.clear()
    result = await call(client, "get_merge_request_discussions", {"key": "pr#7"})
    before = len(structured(result)["discussions"])
    result = await call(client, "get_merge_request_diffs", {"key": "pr#7"})
    check(len(structured(result)["files"]) == 2, structured(result))
    check(not fake.requests(), f"answered ahead of time, yet the fake saw {fake.requests()}")
    await call(client, "create_merge_request_comment", {"key": "pr#7", "body": "One more thing"})
    result = await call(client, "get_merge_request_discussions", {"key": "pr#7"})
    check(len(structured(result)["discussions"]) == before + 1, "the new comment is read, not a stale list")

    writes = [s for s in fake.requests() if s.method != "GET"]
    check([(s.method, s.path) for s in writes] == [("POST", f"{REPO_PATH}/issues/7/comments")],
          f"only the write asked for: {writes}")

    # Commits → each commit by its SHA.
    fake.clear()
    result = await call(client, "get_commits", {"limit": 2})
    shas = [c["sha"] for c in structured(result)["commits"]]
    ahead = [f"{REPO_PATH}/commits/{s}" for s in shas]
    await wait_until(lambda: all(fake.requests("GET", p) for p in ahead), f"prefetched {ahead}")
    fake.clear()
    result = await call(client, "get_commit", {"sha": shas[0]})
    check(structured(result)["sha"] == shas[0], structured(result))
    check(not fake.requests("GET", ahead[0]), f"answered ahead of time, yet the fake saw {fake.requests()}")
    # A search → each hit's file by its path.
    fake.clear()
    result = await call(client, "search_code", {"query": "parse_empty"})
    ahead = [f"{REPO_PATH}/contents/{m['path']}" for m in structured(result)["matches"]]
    check(ahead == [f"{REPO_PATH}/contents/src/parse.rs"], ahead)
    await wait_until(lambda: all(fake.requests("GET", p) for p in ahead), f"prefetched {ahead}")
    fake.clear()
    result = await call(client, "get_repository_file", {"path": "src/parse.rs"})
    check("parse_empty" in structured(result)["content"], structured(result))
    check(not fake.requests("GET", ahead[0]), f"answered ahead of time, yet the fake saw {fake.requests()}")


async def main():
    fake = github()
    async with provider_session(opts.toolhost, opts.plugin, "github", fake, CONFIG) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        check(TOOLS <= names, f"served: {sorted(names)}")
        await issues(client, fake)
        await pulls(client, fake)
        await actions(client, fake)
        await repository(client, fake)
        await errors(client, fake)
    fake.stop()

    fake = github()
    async with provider_session(opts.toolhost, opts.plugin, "github", fake, CONFIG, extra_toml=SPECULATION) as client:
        await prefetch(client, fake)
    fake.stop()

    # An issue with its comments, and the jobs of a pipeline's runs: each
    # set of requests is open at the fake at once (contract 0.3's
    # `fetch_all`), not one after the other.
    fake = github(delay_s=0.2)
    async with provider_session(opts.toolhost, opts.plugin, "github", fake, CONFIG) as client:
        await call(client, "get_issue", {"key": "#12", "includeComments": True})
        check(fake.most_in_flight == 2, f"{fake.most_in_flight} requests at once for an issue and its comments")
        # A pipeline of two workflow runs: both runs' jobs at once.
        fake.clear()
        fake.most_in_flight = 0
        await call(client, "get_pipeline", {"mrKey": "pr#7", "includeFailedLogs": False})
        check(fake.most_in_flight == 2, f"{fake.most_in_flight} requests at once for the jobs of two runs")
    fake.stop()

    # The per-host cap holds at the server: after a list, the prefetches
    # beyond two at once are declined, never sent side by side.
    fake = github(delay_s=0.2)
    capped = SPECULATION + "\nper_host = 2"
    async with provider_session(opts.toolhost, opts.plugin, "github", fake, CONFIG, extra_toml=capped) as client:
        await call(client, "get_issues", {"limit": 2})
        await wait_until(lambda: len(fake.requests()) >= 3 and fake.in_flight == 0, "prefetches answered")
        check(fake.most_in_flight <= 2, f"{fake.most_in_flight} requests at once with per_host = 2")
        check(all(s.method == "GET" for s in fake.requests()), "only reads prefetched")
    fake.stop()
    print("ok: github")


run(main)
