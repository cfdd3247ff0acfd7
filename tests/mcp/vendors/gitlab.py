"""GitLab end to end: `toolhost serve` with gitlab.wasm alone against the
loopback fake of GitLab's API v4 (gitlab_fake.py), the token injected as
`PRIVATE-TOKEN`, through the Python MCP client: every tool the plugin
serves with its exact request, the errors (401 naming the secret, 404,
400 with GitLab's message), a 429 retried and one too long; then, with
speculation on, list issues → issue → comments and merge requests →
discussions and diffs prefetched, never a write, no stale read after one.

    gitlab.py --toolhost PATH --plugin gitlab.wasm
"""

import argparse

import base64

from fake import SPECULATION, TOKEN, blob, call, check, multipart, operation, provider_session, structured, text
from driver import run, wait_until  # noqa: I001 (fake puts tests/mcp on the path)
from gitlab_fake import API, ENCODED, HEAD_SHA, PROJECT, gitlab
import repo_fake as git

parser = argparse.ArgumentParser()
parser.add_argument("--toolhost", required=True)
parser.add_argument("--plugin", required=True)
opts = parser.parse_args()

P = f"{API}/projects/{ENCODED}"
AUTH = {"auth": TOKEN, "auth_header": "private-token"}
SESSION = {"header": "PRIVATE-TOKEN", "prefix": "", "api_path": API}
TOOLS = {"get_users", "create_merge_request", "update_merge_request", "get_issues", "get_issue", "get_issue_comments", "create_issue", "update_issue", "add_issue_comment",
         "get_merge_requests", "get_merge_request", "get_merge_request_discussions", "get_merge_request_diffs",
         "create_merge_request_comment", "get_pipeline", "get_job_logs", "run_pipeline_job",
         "get_available_statuses", "get_issue_relations", "link_issues", "unlink_issues", "get_board_sprints",
         "assign_to_sprint", "list_project_versions", "upsert_project_version",
         "get_repository_file", "get_commits", "get_commit", "get_branches", "search_code"}
CAROL, BOB = sum(map(ord, "carol")), sum(map(ord, "bob"))


async def tools(client, fake):
    result = await call(client, "get_issues", {"limit": 2, "labels": ["bug"]})
    fake.expect("GET", f"{P}/issues", query={"state": "opened", "labels": "bug", "order_by": "updated_at",
                                            "sort": "desc", "per_page": "2", "page": "1"}, **AUTH)
    check([i["key"] for i in structured(result)["issues"]] == ["#7", "#5"], structured(result))
    check(structured(result)["has_more"], "a Link to the next page")
    result = await call(client, "get_issues", {"state": "all", "search": "issue 3", "assignee": "alice",
                                               "sort": "created_at", "sort_order": "asc"})
    fake.expect("GET", f"{P}/issues", query={"state": "all", "assignee_username": "alice", "search": "issue 3",
                                            "order_by": "created_at", "sort": "asc", "per_page": "20", "page": "1"},
                **AUTH)
    result = await call(client, "get_issue", {"key": "#3"})
    fake.expect("GET", f"{P}/issues/3", query={}, **AUTH)
    check((structured(result)["state"], structured(result)["description"]) == ("closed", "About 3"),
          structured(result))
    result = await call(client, "get_issue", {"key": "#99"}, error=True)
    check("GitLab get_issue: not found" in text(result) and "404 Not found" in text(result), text(result))
    result = await call(client, "get_issue_comments", {"key": "#3"})
    fake.expect("GET", f"{P}/issues/3/notes", query={"sort": "asc", "order_by": "created_at", "per_page": "50",
                                                    "page": "1"}, **AUTH)
    check([c["body"] for c in structured(result)["comments"]] == ["Seen on 3"], "system notes left out")

    result = await call(client, "create_issue", {"title": "Flaky test", "description": "Fails 1 in 10",
                                                 "labels": ["bug", "ci"]})
    fake.expect("POST", f"{P}/issues", body={"title": "Flaky test", "description": "Fails 1 in 10",
                                            "labels": "bug,ci"}, **AUTH)
    check(structured(result)["key"] == "#8", structured(result))
    result = await call(client, "update_issue", {"key": "#8", "state": "closed", "labels": []})
    fake.expect("PUT", f"{P}/issues/8", body={"labels": "", "state_event": "close"}, **AUTH)
    check((structured(result)["state"], structured(result)["labels"]) == ("closed", []), structured(result))
    result = await call(client, "add_issue_comment", {"key": "#8", "body": "Quarantined"})
    fake.expect("POST", f"{P}/issues/8/notes", body={"body": "Quarantined"}, **AUTH)

    result = await call(client, "get_merge_requests", {})
    fake.expect("GET", f"{P}/merge_requests", query={"state": "opened", "per_page": "20", "page": "1"}, **AUTH)
    check([m["key"] for m in structured(result)["merge_requests"]] == ["mr#3", "mr#2"], structured(result))
    result = await call(client, "get_merge_requests", {"state": "merged", "author": "alice",
                                                       "source_branch": "feature-1", "target_branch": "main"})
    fake.expect("GET", f"{P}/merge_requests", query={"state": "merged", "author_username": "alice",
                                                     "source_branch": "feature-1", "target_branch": "main",
                                                     "per_page": "20", "page": "1"}, **AUTH)
    check([m["key"] for m in structured(result)["merge_requests"]] == ["mr#1"], structured(result))
    result = await call(client, "get_merge_request", {"key": "mr#2"})
    fake.expect("GET", f"{P}/merge_requests/2", query={}, **AUTH)
    check((structured(result)["head_sha"], structured(result)["reviewers"]) == (HEAD_SHA, ["bob"]),
          structured(result))
    result = await call(client, "get_merge_request_discussions", {"key": "mr#2"})
    fake.expect("GET", f"{P}/merge_requests/2/discussions", query={"per_page": "20", "page": "1"}, **AUTH)
    found = structured(result)["discussions"]
    check([(d["path"], d["new_line"], len(d["notes"])) for d in found] == [("src/lib.rs", 12, 2), (None, None, 1)],
          found)
    result = await call(client, "get_merge_request_diffs", {"key": "mr#2"})
    fake.expect("GET", f"{P}/merge_requests/2/diffs", query={"per_page": "100", "page": "1"}, **AUTH)
    check([(f["path"], f["status"]) for f in structured(result)["files"]] == [("src/lib.rs", "modified"),
                                                                              ("NOTES.md", "added")], structured(result))

    result = await call(client, "get_users", {"search": "car"})
    fake.expect("GET", f"{API}/users", query={"search": "car", "per_page": "50", "page": "1"}, **AUTH)
    check([u["username"] for u in structured(result)["users"]] == ["carol"], structured(result))
    result = await call(client, "get_users", {})
    fake.expect("GET", f"{P}/members/all", query={"per_page": "50", "page": "1"}, **AUTH)
    check(len(structured(result)["users"]) == 2, structured(result))
    uid = structured(result)["users"][0]["id"]
    result = await call(client, "get_users", {"userId": str(uid)})
    fake.expect("GET", f"{API}/users/{uid}", query={}, **AUTH)

    fake.clear()
    result = await call(client, "create_merge_request", {"title": "Fix flake", "source_branch": "fix-flake",
                                                         "target_branch": "main", "draft": True,
                                                         "labels": ["ci"], "reviewers": ["carol"]})
    check([(s.method, s.path, s.query) for s in fake.requests()] == [
        ("GET", f"{API}/users", {"username": "carol"}), ("POST", f"{P}/merge_requests", {})], fake.requests())
    carol = fake.requests()[0]
    fake.expect("POST", f"{P}/merge_requests", body={
        "title": "Draft: Fix flake", "source_branch": "fix-flake", "target_branch": "main", "labels": "ci",
        "reviewer_ids": [sum(map(ord, "carol"))]}, **AUTH)
    check(carol.headers.get("private-token") == TOKEN, carol)
    value = structured(result)
    check((value["key"], value["draft"], value["reviewers"]) == ("mr#4", True, ["carol"]), value)
    result = await call(client, "create_merge_request", {"title": "Again", "source_branch": "feature-2",
                                                         "target_branch": "main"}, error=True)
    check("invalid arguments (409)" in text(result) and "Another open merge request" in text(result), text(result))
    fake.clear()
    result = await call(client, "update_merge_request", {"key": "mr#4", "draft": False, "state": "closed",
                                                         "target_branch": "develop"})
    check([(s.method, s.path) for s in fake.requests()] == [("GET", f"{P}/merge_requests/4"),
                                                            ("PUT", f"{P}/merge_requests/4")], fake.requests())
    fake.expect("PUT", f"{P}/merge_requests/4", body={"target_branch": "develop", "state_event": "close",
                                                      "title": "Fix flake"}, **AUTH)
    value = structured(result)
    check((value["draft"], value["state"], value["target_branch"]) == (False, "closed", "develop"), value)

    fake.clear()
    result = await call(client, "create_merge_request_comment", {"key": "mr#2", "body": "Why?",
                                                                 "file_path": "src/lib.rs", "line": 11,
                                                                 "line_type": "old"})
    check([(s.method, s.path) for s in fake.requests()] == [("GET", f"{P}/merge_requests/2"),
                                                            ("POST", f"{P}/merge_requests/2/discussions")],
          fake.requests())
    fake.expect("POST", f"{P}/merge_requests/2/discussions", body={"body": "Why?", "position": {
        "position_type": "text", "base_sha": "b" * 40, "start_sha": "s" * 40, "head_sha": HEAD_SHA,
        "new_path": "src/lib.rs", "old_path": "src/lib.rs", "old_line": 11}}, **AUTH)
    check(structured(result)["kind"] == "inline" and len(structured(result)["discussion_id"]) == 40,
          structured(result))
    did = found[0]["id"]
    result = await call(client, "create_merge_request_comment", {"key": "mr#2", "body": "Thanks",
                                                                 "discussion_id": did})
    fake.expect("POST", f"{P}/merge_requests/2/discussions/{did}/notes", body={"body": "Thanks"}, **AUTH)
    result = await call(client, "create_merge_request_comment", {"key": "mr#2", "body": "Merging"})
    fake.expect("POST", f"{P}/merge_requests/2/notes", body={"body": "Merging"}, **AUTH)
    result = await call(client, "create_merge_request_comment", {"key": "mr#2", "body": "x",
                                                                 "file_path": "nope.rs", "line": 1}, error=True)
    check("invalid arguments (400)" in text(result) and "must be a valid line code" in text(result), text(result))

    fake.clear()
    result = await call(client, "get_pipeline", {"mrKey": "mr#2"})
    check([(s.path, s.query) for s in fake.requests()] == [
        (f"{P}/merge_requests/2/pipelines", {"per_page": "1"}),
        (f"{P}/pipelines/51/jobs", {"per_page": "100"}),
        (f"{P}/jobs/7001/trace", {}),
    ], [(s.path, s.query) for s in fake.requests()])
    value = structured(result)
    check(value["status"] == "failed" and [j["id"] for j in value["jobs"]] == ["7001", "7002"], value)
    check(any("exit code 101" in l for l in value["jobs"][0]["error_lines"]), value)
    result = await call(client, "get_pipeline", {"branch": "main", "includeFailedLogs": False})
    check(fake.requests()[-2].query == {"per_page": "1", "order_by": "id", "sort": "desc", "ref": "main"},
          fake.requests()[-2])
    check(structured(result)["status"] == "success", structured(result))

    result = await call(client, "get_job_logs", {"jobId": "7001", "pattern": "failed", "context": 0})
    fake.expect("GET", f"{P}/jobs/7001/trace", query={}, **AUTH)
    check([l["n"] for l in structured(result)["lines"]] == [4, 5, 6], structured(result))
    result = await call(client, "run_pipeline_job", {"jobId": "7002"})
    fake.expect("POST", f"{P}/jobs/7002/play", **AUTH)
    check(structured(result)["action"] == "play", structured(result))
    result = await call(client, "run_pipeline_job", {"jobId": "7001"})
    fake.expect("POST", f"{P}/jobs/7001/retry", **AUTH)
    check((structured(result)["jobId"], structured(result)["action"]) == ("7101", "retry"), structured(result))


ASSET_TOOLS = {"get_assets", "download_asset", "upload_asset", "delete_asset"}
CRASH = "66dbcd21ec5d24ed6ea225176098d52b/crash.png"
LOG = "00000000000000000000000000000001/build.log"


async def assets(client, fake):
    """Uploads linked from an issue's description and notes: listed,
    downloaded, uploaded (and linked in a note), deleted."""
    fake.clear()
    result = await call(client, "get_assets", {"context_type": "issue", "key": "#4"})
    check([(s.method, s.path, s.query) for s in fake.requests()] == [
        ("GET", f"{P}/issues/4", {}),
        ("GET", f"{P}/issues/4/notes", {"sort": "asc", "order_by": "created_at", "per_page": "100", "page": "1"})],
        [(s.method, s.path, s.query) for s in fake.requests()])
    fake.expect("GET", f"{P}/issues/4/notes", **AUTH)
    found = structured(result)["assets"]
    check([(a["id"], a["mimeType"], a["source"]) for a in found] == [
        (CRASH, "image/png", "description"), (LOG, "text/plain", {"note": 954})], found)
    check(found[0]["url"] == f"https://gitlab.com/{PROJECT}/uploads/{CRASH}", found[0])

    result = await call(client, "download_asset", {"context_type": "issue", "key": "#4", "asset_id": LOG})
    fake.expect("GET", f"{P}/uploads/{LOG}", query={}, **AUTH)
    got = structured(result)
    check(base64.b64decode(got["content_base64"]) == b"step 1\nstep 2 failed\n" and got["mimeType"] == "text/plain",
          got)
    result = await call(client, "download_asset", {"context_type": "issue", "key": "#4", "asset_id": CRASH})
    check(blob(result) == [("image/png", b"\x89PNG\r\n\x1a\nfake")], blob(result))
    result = await call(client, "download_asset", {"context_type": "issue", "key": "#4", "asset_id": "../../etc"},
                        error=True)
    check("`asset_id` must be `<secret>/<filename>`" in text(result), text(result))

    data = b"col1,col2\r\n1,2\r\n"
    fake.clear()
    result = await call(client, "upload_asset", {"key": "#4", "filename": "data.csv",
                                                 "fileData": base64.b64encode(data).decode()})
    upload, note = fake.requests()
    check((upload.method, upload.path) == ("POST", f"{P}/uploads") and upload.headers.get("private-token") == TOKEN,
          upload)
    parts = multipart(upload)
    check([(p.name, p.filename, p.content_type, p.data) for p in parts] == [("file", "data.csv", "text/csv", data)],
          parts)
    made = structured(result)
    secret = f"{2 + 0xabc:032x}"
    check(made["id"] == f"{secret}/data.csv" and made["markdown"] == f"[data.csv](/uploads/{secret}/data.csv)", made)
    fake.expect("POST", f"{P}/issues/4/notes", body={"body": made["markdown"]}, **AUTH)
    result = await call(client, "get_assets", {"context_type": "issue", "key": "#4"})
    check([a["id"] for a in structured(result)["assets"]][-1] == made["id"], "no stale list after the upload")

    result = await call(client, "delete_asset", {"key": "#4", "asset_id": made["id"]})
    fake.expect("DELETE", f"{P}/uploads/{made['id']}", **AUTH)
    check(made["id"] not in fake.uploads, fake.uploads)
    result = await call(client, "download_asset", {"context_type": "issue", "key": "#4", "asset_id": made["id"]},
                        error=True)
    check("GitLab download_asset: not found" in text(result) and "File Not Found" in text(result), text(result))
async def planning(client, fake):
    # Assignees: usernames looked up as ids; a number is an id already.
    fake.clear()
    result = await call(client, "create_issue", {"title": "Pair on it", "assignees": ["carol", str(BOB)]})
    check([(s.method, s.path, s.query) for s in fake.requests()] == [
        ("GET", f"{API}/users", {"username": "carol"}), ("POST", f"{P}/issues", {})], fake.requests())
    fake.expect("POST", f"{P}/issues", body={"title": "Pair on it", "assignee_ids": [CAROL, BOB]}, **AUTH)
    check((structured(result)["key"], structured(result)["assignees"]) == ("#9", ["carol", "bob"]), structured(result))
    result = await call(client, "update_issue", {"key": "#9", "assignees": []})
    fake.expect("PUT", f"{P}/issues/9", body={"assignee_ids": []}, **AUTH)
    check(structured(result)["assignees"] == [], structured(result))
    result = await call(client, "update_issue", {"key": "#9", "assignees": ["zed"]}, error=True)
    check("no user with username `zed`" in text(result), text(result))

    # States: GitLab's are fixed, no request.
    fake.clear()
    result = await call(client, "get_available_statuses", {})
    check(not fake.requests(), fake.requests())
    check([s["name"] for s in structured(result)["statuses"]] == ["opened", "closed"], structured(result))

    # Issue links.
    result = await call(client, "get_issue_relations", {"key": "#4"})
    fake.expect("GET", f"{P}/issues/4/links", query={}, **AUTH)
    check([(r["key"], r["link_type"], r["link_id"]) for r in structured(result)["relations"]]
          == [("#2", "is_blocked_by", 81)], structured(result))
    result = await call(client, "link_issues", {"source_key": "#5", "target_key": "#6", "link_type": "relates_to"})
    fake.expect("POST", f"{P}/issues/5/links", body={"target_project_id": PROJECT, "target_issue_iid": "6",
                                                    "link_type": "relates_to"}, **AUTH)
    check(structured(result)["link_type"] == "relates_to", structured(result))
    result = await call(client, "link_issues", {"source_key": "#6", "target_key": "#5", "link_type": "blocks"},
                        error=True)
    check("invalid arguments (409)" in text(result) and "already assigned" in text(result), text(result))
    result = await call(client, "unlink_issues", {"source_key": "#5", "target_key": "#6", "link_type": "blocks"},
                        error=True)
    check("#5 has no `blocks` link to #6" in text(result), text(result))
    fake.clear()
    result = await call(client, "unlink_issues", {"source_key": "#4", "target_key": "#2"})
    check([(s.method, s.path) for s in fake.requests()] == [("GET", f"{P}/issues/4/links"),
                                                            ("DELETE", f"{P}/issues/4/links/81")], fake.requests())
    fake.expect("DELETE", f"{P}/issues/4/links/81", **AUTH)
    check(structured(result)["removed"] == [81] and all(l["id"] != 81 for l in fake.links), structured(result))

    # Iterations are the sprints.
    result = await call(client, "get_board_sprints", {})
    fake.expect("GET", f"{P}/iterations", query={"state": "current", "per_page": "20", "page": "1"}, **AUTH)
    check([(s["id"], s["name"], s["state"]) for s in structured(result)["sprints"]] == [("312", "Sprint 2", "active")],
          structured(result))
    result = await call(client, "get_board_sprints", {"state": "all", "limit": 2})
    fake.expect("GET", f"{P}/iterations", query={"state": "all", "per_page": "2", "page": "1"}, **AUTH)
    check(len(structured(result)["sprints"]) == 2 and structured(result)["has_more"], structured(result))
    result = await call(client, "get_board_sprints", {"boardId": "7"}, error=True)
    check("not to a board" in text(result), text(result))
    fake.clear()
    result = await call(client, "assign_to_sprint", {"sprintId": "313", "keys": ["#1", "#2"]})
    check(fake.operations() == ["IssueSetIteration", "IssueSetIteration"], fake.operations())
    seen = fake.expect("POST", "/api/graphql", **AUTH)
    check(operation(seen.body) == "IssueSetIteration" and seen.body["variables"] == {
        "projectPath": PROJECT, "iid": "2", "iterationId": "gid://gitlab/Iteration/313"}, seen.body)
    check(fake.issues[1]["iteration"]["id"] == 313 and [i["key"] for i in structured(result)["issues"]] == ["#1", "#2"],
          structured(result))
    result = await call(client, "assign_to_sprint", {"sprintId": "999", "keys": ["#1"]}, error=True)
    check("GitLab assign_to_sprint: #1: Iteration not found" in text(result), text(result))

    # Milestones are the versions; a closed one is released.
    result = await call(client, "list_project_versions", {})
    fake.expect("GET", f"{P}/milestones", query={"per_page": "50", "page": "1"}, **AUTH)
    check([(v["name"], v["released"]) for v in structured(result)["versions"]] == [("1.0", True), ("1.1", False)],
          structured(result))
    result = await call(client, "list_project_versions", {"includeReleased": False})
    fake.expect("GET", f"{P}/milestones", query={"state": "active", "per_page": "50", "page": "1"}, **AUTH)
    check([v["name"] for v in structured(result)["versions"]] == ["1.1"], structured(result))
    fake.clear()
    result = await call(client, "upsert_project_version", {"name": "1.1", "released": True,
                                                           "releaseDate": "2026-12-01"})
    check([(s.method, s.path, s.query) for s in fake.requests()] == [
        ("GET", f"{P}/milestones", {"title": "1.1"}), ("PUT", f"{P}/milestones/502", {})], fake.requests())
    fake.expect("PUT", f"{P}/milestones/502", body={"due_date": "2026-12-01", "state_event": "close"}, **AUTH)
    check((structured(result)["id"], structured(result)["released"]) == ("502", True), structured(result))
    fake.clear()
    result = await call(client, "upsert_project_version", {"name": "2.0", "description": "Big",
                                                           "startDate": "2026-12-01"})
    check([(s.method, s.path) for s in fake.requests()] == [("GET", f"{P}/milestones"),
                                                            ("POST", f"{P}/milestones")], fake.requests())
    fake.expect("POST", f"{P}/milestones", body={"description": "Big", "start_date": "2026-12-01", "title": "2.0"},
                **AUTH)
    check((structured(result)["name"], structured(result)["released"]) == ("2.0", False), structured(result))
    result = await call(client, "upsert_project_version", {"name": "2.0", "archived": True}, error=True)
    check("cannot be archived" in text(result), text(result))


async def repository(client, fake):
    """Files (the path URL-encoded whole) and trees at a ref, commits and
    their diffs, branches, blob search; the chains agents follow."""
    fake.clear()
    result = await call(client, "get_repository_file", {})
    fake.expect("GET", f"{P}/repository/tree", query={"per_page": "100", "page": "1"}, **AUTH)
    value = structured(result)
    check(value["type"] == "dir" and [(e["path"], e["type"]) for e in value["entries"]] == [
        ("assets", "dir"), ("docs", "dir"), ("src", "dir"), ("README.md", "file")], value)
    # A directory: the file API says 404, the tree lists it.
    result = await call(client, "get_repository_file", {"path": "src", "ref": "feature-x"})
    check([(s.path, s.query) for s in fake.requests()[-2:]] == [
        (f"{P}/repository/files/src", {"ref": "feature-x"}),
        (f"{P}/repository/tree", {"path": "src", "ref": "feature-x", "per_page": "100", "page": "1"})],
        fake.requests()[-2:])
    listed = structured(result)
    check([e["path"] for e in listed["entries"]] == ["src/lib.rs", "src/parse.rs"] and listed["ref"] == "feature-x",
          listed)
    result = await call(client, "get_repository_file", {"path": listed["entries"][1]["path"], "ref": listed["ref"]})
    fake.expect("GET", f"{P}/repository/files/src%2Fparse.rs", query={"ref": "feature-x"}, **AUTH)
    value = structured(result)
    want = git.tree(git.C4)["src/parse.rs"]
    check((value["type"], value["content"], value["truncated"], value["commit_sha"]) ==
          ("file", want, False, git.C4["sha"]), value)
    # No ref: HEAD, the default branch.
    result = await call(client, "get_repository_file", {"path": "src/parse.rs"})
    fake.expect("GET", f"{P}/repository/files/src%2Fparse.rs", query={"ref": "HEAD"}, **AUTH)
    check(structured(result)["content"] == git.tree(git.C3)["src/parse.rs"], structured(result))
    result = await call(client, "get_repository_file", {"path": "docs/big.txt"})
    value = structured(result)
    check(value["truncated"] is True and value["size"] == len(git.BIG) and len(value["content"]) < 105_000
          and "[… truncated: showing the first" in value["content"], value["size"])
    result = await call(client, "get_repository_file", {"path": "assets/logo.png"})
    check((structured(result)["binary"], structured(result)["content"]) == (True, None), structured(result))
    result = await call(client, "get_repository_file", {"path": "src/nope.rs"}, error=True)
    check("GitLab get_repository_file: not found (GET /projects/acme%2Fwidgets/repository/files/"
          "src%2Fnope.rs?ref=HEAD): 404 File Not Found" in text(result), text(result))

    result = await call(client, "get_commits", {"limit": 2})
    fake.expect("GET", f"{P}/repository/commits", query={"per_page": "2", "page": "1"}, **AUTH)
    value = structured(result)
    check([c["sha"] for c in value["commits"]] == [git.C3["sha"], git.C2["sha"]] and value["has_more"], value)
    first = value["commits"][0]
    check((first["title"], first["author"], first["parents"]) == ("Parse empty input", "Mona Octocat",
                                                                  [git.C2["sha"]]), first)
    result = await call(client, "get_commits", {"ref": "feature-x", "path": "src/parse.rs",
                                                "until": "2026-10-10T00:00:00Z"})
    fake.expect("GET", f"{P}/repository/commits", query={
        "ref_name": "feature-x", "path": "src/parse.rs", "until": "2026-10-10T00:00:00Z", "per_page": "20",
        "page": "1"}, **AUTH)
    check([c["title"] for c in structured(result)["commits"]] == ["Parse empty input", "Add parser"],
          structured(result))

    fake.clear()
    result = await call(client, "get_commit", {"sha": first["sha"]})
    check([(s.path, s.query) for s in fake.requests()] == [
        (f"{P}/repository/commits/{first['sha']}", {}),
        (f"{P}/repository/commits/{first['sha']}/diff", {"per_page": "100", "page": "1"})], fake.requests())
    value = structured(result)
    check((value["message"], value["parents"], value["stats"]["additions"]) ==
          (git.C3["message"], [git.C2["sha"]], 4003), value)
    files = {f["path"]: f for f in value["files"]}
    check(files["src/parse.rs"]["diff"].startswith(git.C3["changes"]["src/parse.rs"][2])
          and (files["src/parse.rs"]["additions"], files["src/parse.rs"]["deletions"]) == (3, 0), files["src/parse.rs"])
    check("[… truncated" in files["docs/big.txt"]["diff"] and value["diffs_truncated"] is True, "big diff cut")
    result = await call(client, "get_commit", {"sha": value["parents"][0], "includeDiffs": False})
    check(structured(result)["title"] == "Add parser" and all("diff" not in f for f in structured(result)["files"]),
          structured(result))
    result = await call(client, "get_commit", {"sha": "0badc0de"}, error=True)
    check("GitLab get_commit: not found" in text(result) and "404 Commit Not Found" in text(result), text(result))

    result = await call(client, "get_branches", {"search": "feat"})
    fake.expect("GET", f"{P}/repository/branches", query={"search": "feat", "per_page": "30", "page": "1"}, **AUTH)
    check([(b["name"], b["sha"], b["default"]) for b in structured(result)["branches"]] ==
          [("feature-x", git.C4["sha"], False)], structured(result))

    result = await call(client, "search_code", {"query": "parse_empty"})
    fake.expect("GET", f"{P}/search", query={"scope": "blobs", "search": "parse_empty", "per_page": "20",
                                             "page": "1"}, **AUTH)
    value = structured(result)
    check([(m["path"], m["line"], m["ref"]) for m in value["matches"]] == [("src/parse.rs", 2, "main")]
          and "parse_empty" in value["matches"][0]["snippet"], value)


async def errors(client, fake):
    route = f"{P}/issues/(\\d+)"
    fake.clear()
    fake.rate_limit("GET", route, times=1, retry_after="1")
    await call(client, "get_issue", {"key": "#2"})
    check(len(fake.requests("GET", f"{P}/issues/2")) == 2, "429 then a retry")
    fake.rate_limit("GET", route, times=1, retry_after="3600")
    result = await call(client, "get_issue", {"key": "#2"}, error=True)
    check("rate limited (429)" in text(result) and "3600 s" in text(result), text(result))


async def prefetch(client, fake):
    fake.clear()
    result = await call(client, "get_issues", {"limit": 2})
    keys = [i["key"] for i in structured(result)["issues"]]
    ahead = [f"{P}/issues/{k[1:]}{tail}" for k in keys for tail in ("", "/notes")]
    await wait_until(lambda: all(fake.requests("GET", p) for p in ahead), f"prefetched {ahead}")
    fake.clear()
    await call(client, "get_issue", {"key": keys[0]})
    await call(client, "get_issue_comments", {"key": keys[0]})
    check(not fake.requests(), f"answered ahead of time, yet the fake saw {fake.requests()}")
    await call(client, "add_issue_comment", {"key": keys[0], "body": "Also on 17.5"})
    result = await call(client, "get_issue_comments", {"key": keys[0]})
    check(structured(result)["comments"][-1]["body"] == "Also on 17.5", "fresh after the write")

    fake.clear()
    await call(client, "get_merge_requests", {})
    ahead = [f"{P}/merge_requests/{n}/{what}" for n in (3, 2) for what in ("discussions", "diffs")]
    await wait_until(lambda: all(fake.requests("GET", p) for p in ahead), f"prefetched {ahead}")
    fake.clear()
    result = await call(client, "get_merge_request_discussions", {"key": "mr#2"})
    before = len(structured(result)["discussions"])
    await call(client, "get_merge_request_diffs", {"key": "mr#2"})
    check(not fake.requests(), f"answered ahead of time, yet the fake saw {fake.requests()}")
    await call(client, "create_merge_request_comment", {"key": "mr#2", "body": "Rebased"})
    result = await call(client, "get_merge_request_discussions", {"key": "mr#2"})
    check(len(structured(result)["discussions"]) == before + 1, "the new note is read, not a stale list")
    writes = [(s.method, s.path) for s in fake.requests() if s.method != "GET"]
    check(writes == [("POST", f"{P}/merge_requests/2/notes")], f"only the write asked for: {writes}")

    # Commits → each commit by its SHA.
    fake.clear()
    result = await call(client, "get_commits", {"limit": 1})
    sha = structured(result)["commits"][0]["sha"]
    ahead = f"{P}/repository/commits/{sha}/diff"
    await wait_until(lambda: fake.requests("GET", ahead), f"prefetched {ahead}")
    fake.clear()
    result = await call(client, "get_commit", {"sha": sha})
    check(structured(result)["sha"] == sha, structured(result))
    check(not fake.requests("GET", f"{P}/repository/commits/{sha}"), f"answered ahead, yet {fake.requests()}")


async def main():
    fake = gitlab()
    async with provider_session(opts.toolhost, opts.plugin, "gitlab", fake, {"project": PROJECT},
                                **SESSION) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        check(TOOLS <= names, f"served: {sorted(names)}")
        await tools(client, fake)
        check(ASSET_TOOLS <= names, f"served: {sorted(names)}")
        await assets(client, fake)
        await planning(client, fake)
        await repository(client, fake)
        await errors(client, fake)
    fake.stop()
    # A wrong token: GitLab's 401, naming the secret.
    fake = gitlab()
    async with provider_session(opts.toolhost, opts.plugin, "gitlab", fake, {"project": PROJECT},
                                header="PRIVATE-TOKEN", prefix="x", api_path=API) as client:
        result = await call(client, "get_issues", {}, error=True)
        check("401 Unauthorized" in text(result) and "secret `gitlab`" in text(result), text(result))
    fake.stop()
    fake = gitlab()
    async with provider_session(opts.toolhost, opts.plugin, "gitlab", fake, {"project": PROJECT},
                                extra_toml=SPECULATION, **SESSION) as client:
        await prefetch(client, fake)
    fake.stop()
    print("ok: gitlab")


run(main)
