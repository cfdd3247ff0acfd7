"""A loopback fake of GitHub's REST API v3 (https://docs.github.com/rest),
for one repository, following its documented shapes:

- issues (pull requests appear in the issues list with a `pull_request`
  key), the issue search API (`/search/issues`, `{total_count, items}`),
  issue comments, creating and updating issues (422 `Validation Failed`
  with `errors` when a title is missing);
- users: `/search/users`, `/users/{login}`, the repository's assignees;
- pull requests: list (`state`, `head`, `base`), get, create (422 when one
  already exists for the head), update, requested reviewers, reviews,
  review comments (threads by `in_reply_to_id`, replies), changed files
  with patches;
- Actions: the repository, workflow runs (`branch`, `head_sha`), a run's
  jobs, a job's log (302 to storage, as GitHub does), re-running a job;
- the repository (repo_fake.py): contents of a file (base64 in 60-column
  lines, `encoding: none` and no content over 1 MB) or a directory (an
  array) at a `ref`, commits (`sha`, `path`, `author`, `since`, `until`),
  one commit with `stats` and `files` (422 `No commit found for SHA`),
  branches, code search (`/search/code`, `{total_count, items}`, scoped by
  `repo:`);
- `Link` header pagination (`per_page`, `page`), 401 `Bad credentials`,
  403 `Resource not accessible`, 404 `Not Found`.

Every write changes what later reads answer, so a test can tell a stale
answer from a fresh one."""

import base64
import hashlib
from urllib.parse import unquote

import repo_fake as git
from fake import TOKEN, Fake

OWNER, REPO = "acme", "widgets"
HEAD_SHA = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
MAIN_SHA = "c3d0be41ecbe669545ee3e94d31ed9a4bc91ee3c"
LOG = "\n".join([
    "2026-11-20T10:00:01.0000000Z ##[group]Run cargo test",
    "2026-11-20T10:00:02.0000000Z    Compiling widgets v0.1.0",
    "2026-11-20T10:00:03.0000000Z running 12 tests",
    "2026-11-20T10:00:04.0000000Z test parse::ok ... ok",
    "2026-11-20T10:00:05.0000000Z test parse::empty ... FAILED",
    "2026-11-20T10:00:06.0000000Z thread 'parse::empty' panicked at src/parse.rs:41:9",
    "2026-11-20T10:00:07.0000000Z test result: FAILED. 11 passed; 1 failed",
    "2026-11-20T10:00:08.0000000Z ##[error]Process completed with exit code 101.",
])


def user(login):
    return {"login": login, "id": sum(map(ord, login)), "type": "User"}


def now(fake):
    fake.clock += 1
    return f"2026-11-10T10:{fake.clock // 60:02d}:{fake.clock % 60:02d}Z"


def make_issue(n, title, state="open", labels=(), pr=False):
    issue = {
        "id": 1000 + n,
        "number": n,
        "title": title,
        "state": state,
        "body": f"Body of {n}",
        "user": user("octocat"),
        "labels": [{"name": l} for l in labels],
        "assignees": [user("hubot")] if n % 2 else [],
        "comments": 2,
        "html_url": f"https://github.com/{OWNER}/{REPO}/issues/{n}",
        "created_at": "2026-11-01T10:00:00Z",
        "updated_at": "2026-11-02T10:00:00Z",
    }
    if pr:
        issue["pull_request"] = {"url": f"https://api.github.com/repos/{OWNER}/{REPO}/pulls/{n}"}
    return issue


def make_pull(issue, head, base="main", merged=False, author="octocat"):
    return {
        "number": issue["number"],
        "title": issue["title"],
        "body": issue["body"],
        "state": "closed" if merged else "open",
        "draft": False,
        "merged_at": "2026-11-05T10:00:00Z" if merged else None,
        "user": user(author),
        "head": {"ref": head, "sha": HEAD_SHA, "label": f"{OWNER}:{head}"},
        "base": {"ref": base, "sha": MAIN_SHA, "label": f"{OWNER}:{base}"},
        "requested_reviewers": [user("monalisa")],
        "html_url": f"https://github.com/{OWNER}/{REPO}/pull/{issue['number']}",
        "created_at": "2026-11-03T10:00:00Z",
        "updated_at": "2026-11-04T10:00:00Z",
        "mergeable": True,
        "additions": 10,
        "deletions": 2,
        "changed_files": 2,
        "commits": 1,
    }


def github(delay_s=0.0):
    fake = Fake("GitHub", delay_s)
    fake.clock = 0
    issues = {n: make_issue(n, f"Issue {n}", labels=("bug",) if n % 3 == 0 else ()) for n in range(1, 46)}
    comments = {n: [{"id": 500 + n * 10 + c, "user": user("octocat"), "body": f"Comment {c} on {n}",
                     "html_url": f"https://github.com/{OWNER}/{REPO}/issues/{n}#issuecomment-{500 + n * 10 + c}",
                     "created_at": f"2026-11-03T10:00:0{c}Z"} for c in range(2)] for n in issues}
    pulls = {}
    for n, head, merged, author in [(7, "feature-x", False, "octocat"), (46, "fix-y", False, "hubot"),
                                    (47, "old-z", True, "octocat")]:
        issues[n] = make_issue(n, f"Pull {n}", state="closed" if merged else "open", pr=True,
                               labels=("ui",) if n == 46 else ())
        comments[n] = []
        pulls[n] = make_pull(issues[n], head, merged=merged, author=author)
        pulls[n]["labels"] = issues[n]["labels"]
    reviews = {n: [] for n in pulls}
    reviews[7] = [{"id": 80, "user": user("monalisa"), "body": "Looks close; one question.",
                   "state": "CHANGES_REQUESTED", "submitted_at": "2026-11-04T09:00:00Z"},
                  {"id": 81, "user": user("hubot"), "body": "", "state": "COMMENTED",
                   "submitted_at": "2026-11-04T09:30:00Z"}]
    review_comments = {n: [] for n in pulls}
    review_comments[7] = [
        {"id": 90, "pull_request_review_id": 80, "in_reply_to_id": None, "path": "src/parse.rs", "line": 41,
         "side": "RIGHT", "commit_id": HEAD_SHA, "user": user("monalisa"), "body": "Why unwrap here?",
         "created_at": "2026-11-04T08:59:00Z", "html_url": "https://github.com/x#discussion_r90"},
        {"id": 91, "pull_request_review_id": 81, "in_reply_to_id": 90, "path": "src/parse.rs", "line": 41,
         "side": "RIGHT", "commit_id": HEAD_SHA, "user": user("octocat"), "body": "Input is checked above.",
         "created_at": "2026-11-04T09:20:00Z", "html_url": "https://github.com/x#discussion_r91"},
    ]
    files = {n: [] for n in pulls}
    files[7] = [
        {"filename": "src/parse.rs", "status": "modified", "additions": 8, "deletions": 2, "changes": 10,
         "patch": "@@ -38,4 +38,10 @@ fn parse(s: &str)\n-    old()\n+    new()"},
        {"filename": "docs/parse.md", "previous_filename": "docs/old.md", "status": "renamed", "additions": 2,
         "deletions": 0, "changes": 2, "patch": "@@ -1 +1,3 @@\n+# Parse"},
    ]
    runs = [
        {"id": 3001, "name": "CI", "head_sha": HEAD_SHA, "head_branch": "feature-x", "status": "completed",
         "conclusion": "failure", "event": "pull_request", "html_url": "https://github.com/x/actions/runs/3001"},
        {"id": 3002, "name": "Lint", "head_sha": HEAD_SHA, "head_branch": "feature-x", "status": "completed",
         "conclusion": "success", "event": "pull_request", "html_url": "https://github.com/x/actions/runs/3002"},
        {"id": 3003, "name": "CI", "head_sha": MAIN_SHA, "head_branch": "main", "status": "in_progress",
         "conclusion": None, "event": "push", "html_url": "https://github.com/x/actions/runs/3003"},
        {"id": 2999, "name": "CI", "head_sha": "0" * 40, "head_branch": "main", "status": "completed",
         "conclusion": "success", "event": "push", "html_url": "https://github.com/x/actions/runs/2999"},
    ]
    jobs = {
        3001: [{"id": 4001, "run_id": 3001, "name": "test", "status": "completed", "conclusion": "failure",
                "html_url": "https://github.com/x/job/4001",
                "steps": [{"name": "Checkout", "conclusion": "success"}, {"name": "Test", "conclusion": "failure"}]},
               {"id": 4002, "run_id": 3001, "name": "build", "status": "completed", "conclusion": "success",
                "html_url": "https://github.com/x/job/4002", "steps": []}],
        3002: [{"id": 4003, "run_id": 3002, "name": "clippy", "status": "completed", "conclusion": "success",
                "html_url": "https://github.com/x/job/4003", "steps": []}],
        3003: [{"id": 4004, "run_id": 3003, "name": "test", "status": "in_progress", "conclusion": None,
                "html_url": "https://github.com/x/job/4004", "steps": []}],
        2999: [],
    }
    logs = {4001: LOG, 4002: "build ok", 4003: "clippy ok", 4004: "running"}
    people = {login: {**user(login), "name": login.title()} for login in ("octocat", "hubot", "monalisa")}
    base = f"/repos/{OWNER}/{REPO}"

    fake.revoked = False  # every request answers 401, as for a revoked token
    fake.read_only = False  # writes answer 403, as for a token without write access

    def route(method, pattern):
        """A route that, like GitHub, checks the token first."""
        def register(handler):
            def checked(seen, *groups):
                if fake.revoked or seen.headers.get("authorization") != f"Bearer {TOKEN}":
                    return 401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}
                if fake.read_only and method != "GET":
                    return 403, {"message": "Resource not accessible by personal access token",
                                 "documentation_url": "https://docs.github.com/rest"}
                return handler(seen, *groups)
            return fake.route(method, pattern)(checked)
        return register

    def not_found():
        return 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}

    def page(seen, items, path):
        per_page, page_no = int(seen.query.get("per_page", 30)), int(seen.query.get("page", 1))
        start = (page_no - 1) * per_page
        chunk = items[start:start + per_page]
        headers = {}
        if start + per_page < len(items):
            query = "&".join(f"{k}={v}" for k, v in {**seen.query, "page": page_no + 1}.items())
            headers["link"] = f'<{fake.url}{path}?{query}>; rel="next"'
        return 200, chunk, headers

    # ---- issues ----
    @route("GET", f"{base}/issues")
    def list_issues(seen):
        state = seen.query.get("state", "open")
        newest = seen.query.get("direction", "desc") == "desc"
        found = [i for i in sorted(issues.values(), key=lambda i: -i["number"] if newest else i["number"])
                 if state in ("all", i["state"])]
        if labels := seen.query.get("labels"):
            want = set(labels.split(","))
            found = [i for i in found if want <= {l["name"] for l in i["labels"]}]
        if assignee := seen.query.get("assignee"):
            found = [i for i in found if assignee in {a["login"] for a in i["assignees"]}]
        return page(seen, found, seen.path)

    @route("GET", "/search/issues")
    def search_issues(seen):
        words, state, repo_ok, only_issues, labels = [], None, False, False, set()
        for part in seen.query["q"].split(" "):
            if part.startswith("label:"):
                labels.add(part[6:].strip('"'))
            elif part == f"repo:{OWNER}/{REPO}":
                repo_ok = True
            elif part == "is:issue":
                only_issues = True
            elif part.startswith("state:"):
                state = part[6:]
            else:
                words.append(part.lower())
        if not repo_ok:
            return 422, {"message": "Validation Failed", "errors": [{"message": "The search is not scoped"}]}
        found = [i for i in sorted(issues.values(), key=lambda i: -i["number"])
                 if (state is None or i["state"] == state) and not (only_issues and "pull_request" in i)
                 and labels <= {l["name"] for l in i["labels"]}
                 and all(w in (i["title"] + " " + i["body"]).lower() for w in words)]
        status, chunk, headers = page(seen, found, seen.path)
        return status, {"total_count": len(found), "incomplete_results": False, "items": chunk}, headers

    @route("GET", f"{base}/issues/(\\d+)")
    def get_issue(seen, n):
        return (200, issues[int(n)]) if int(n) in issues else not_found()

    @route("POST", f"{base}/issues")
    def create_issue(seen):
        body = seen.body or {}
        if not body.get("title"):
            return 422, {"message": "Validation Failed",
                         "errors": [{"resource": "Issue", "code": "missing_field", "field": "title"}],
                         "documentation_url": "https://docs.github.com/rest/issues/issues#create-an-issue"}
        n = max(issues) + 1
        issue = make_issue(n, body["title"], labels=body.get("labels", ()))
        issue.update(body=body.get("body"), assignees=[user(a) for a in body.get("assignees", [])], comments=0,
                     created_at=now(fake), updated_at=now(fake))
        issues[n], comments[n] = issue, []
        return 201, issue

    @route("PATCH", f"{base}/issues/(\\d+)")
    def update_issue(seen, n):
        if int(n) not in issues:
            return not_found()
        issue, body = issues[int(n)], seen.body or {}
        if body.get("state") not in (None, "open", "closed"):
            return 422, {"message": "Validation Failed",
                         "errors": [{"resource": "Issue", "code": "invalid", "field": "state"}]}
        for k in ("title", "body", "state"):
            if k in body:
                issue[k] = body[k]
        if "labels" in body:
            issue["labels"] = [{"name": l} for l in body["labels"]]
            if int(n) in pulls:
                pulls[int(n)]["labels"] = issue["labels"]
        if "assignees" in body:
            issue["assignees"] = [user(a) for a in body["assignees"]]
        issue["updated_at"] = now(fake)
        return 200, issue

    @route("GET", f"{base}/issues/(\\d+)/comments")
    def list_comments(seen, n):
        return page(seen, comments[int(n)], seen.path) if int(n) in issues else not_found()

    @route("POST", f"{base}/issues/(\\d+)/comments")
    def add_comment(seen, n):
        if int(n) not in issues:
            return not_found()
        if not (seen.body or {}).get("body"):
            return 422, {"message": "Validation Failed", "errors": [{"field": "body", "code": "missing_field"}]}
        c = {"id": 9000 + len(fake.seen), "user": user("octocat"), "body": seen.body["body"],
             "created_at": now(fake), "html_url": f"https://github.com/{OWNER}/{REPO}/issues/{n}#new"}
        comments[int(n)].append(c)
        issues[int(n)]["comments"] += 1
        return 201, c

    # ---- users ----
    @route("GET", "/search/users")
    def search_users(seen):
        q = seen.query["q"].lower()
        found = [{k: v for k, v in p.items() if k != "name"} for p in people.values() if q in p["login"]]
        status, chunk, headers = page(seen, found, seen.path)
        return status, {"total_count": len(found), "incomplete_results": False, "items": chunk}, headers

    @route("GET", "/users/([^/]+)")
    def get_user(seen, login):
        return (200, people[login]) if login in people else not_found()

    @route("GET", f"{base}/assignees")
    def assignees(seen):
        return page(seen, [user(l) for l in ("hubot", "octocat")], seen.path)

    # ---- pull requests ----
    @route("GET", f"{base}/pulls")
    def list_pulls(seen):
        state = seen.query.get("state", "open")
        found = [p for p in sorted(pulls.values(), key=lambda p: -p["number"]) if state in ("all", p["state"])]
        if head := seen.query.get("head"):
            found = [p for p in found if p["head"]["label"] == head]
        if base_ref := seen.query.get("base"):
            found = [p for p in found if p["base"]["ref"] == base_ref]
        return page(seen, found, seen.path)

    @route("GET", f"{base}/pulls/(\\d+)")
    def get_pull(seen, n):
        return (200, pulls[int(n)]) if int(n) in pulls else not_found()

    @route("POST", f"{base}/pulls")
    def create_pull(seen):
        body = seen.body or {}
        if any(p["head"]["ref"] == body.get("head") and p["state"] == "open" for p in pulls.values()):
            return 422, {"message": "Validation Failed", "errors": [
                {"resource": "PullRequest", "code": "custom",
                 "message": f"A pull request already exists for {OWNER}:{body.get('head')}."}]}
        n = max(issues) + 1
        issues[n] = make_issue(n, body["title"], pr=True)
        issues[n]["body"] = body.get("body")
        comments[n], reviews[n], review_comments[n], files[n] = [], [], [], []
        pull = make_pull(issues[n], body["head"], body["base"])
        pull.update(body=body.get("body"), draft=body.get("draft", False), requested_reviewers=[], labels=[])
        pulls[n] = pull
        return 201, pull

    @route("PATCH", f"{base}/pulls/(\\d+)")
    def update_pull(seen, n):
        if int(n) not in pulls:
            return not_found()
        pull, body = pulls[int(n)], seen.body or {}
        for k in ("title", "body", "state"):
            if k in body:
                pull[k] = issues[int(n)][k] = body[k]
        if "base" in body:
            pull["base"]["ref"] = body["base"]
        pull["updated_at"] = now(fake)
        return 200, pull

    @route("POST", f"{base}/pulls/(\\d+)/requested_reviewers")
    def request_reviewers(seen, n):
        pull = pulls[int(n)]
        have = {r["login"] for r in pull["requested_reviewers"]}
        pull["requested_reviewers"] += [user(r) for r in seen.body["reviewers"] if r not in have]
        return 201, pull

    @route("DELETE", f"{base}/pulls/(\\d+)/requested_reviewers")
    def remove_reviewers(seen, n):
        pull = pulls[int(n)]
        pull["requested_reviewers"] = [r for r in pull["requested_reviewers"]
                                       if r["login"] not in seen.body["reviewers"]]
        return 200, pull

    @route("GET", f"{base}/pulls/(\\d+)/reviews")
    def list_reviews(seen, n):
        return page(seen, reviews[int(n)], seen.path) if int(n) in pulls else not_found()

    @route("GET", f"{base}/pulls/(\\d+)/comments")
    def list_review_comments(seen, n):
        return page(seen, review_comments[int(n)], seen.path) if int(n) in pulls else not_found()

    def review_comment(n, body, path, line, side, commit_id, reply_to=None):
        c = {"id": 9500 + len(fake.seen), "pull_request_review_id": None, "in_reply_to_id": reply_to,
             "path": path, "line": line, "side": side, "commit_id": commit_id, "user": user("octocat"),
             "body": body, "created_at": now(fake), "html_url": f"https://github.com/x#discussion_r{len(fake.seen)}"}
        review_comments[n].append(c)
        return c

    @route("POST", f"{base}/pulls/(\\d+)/comments")
    def create_review_comment(seen, n):
        body = seen.body or {}
        if int(n) not in pulls:
            return not_found()
        if body.get("path") not in {f["filename"] for f in files[int(n)]}:
            return 422, {"message": "Validation Failed", "errors": [
                {"resource": "PullRequestReviewComment", "code": "custom", "field": "pull_request_review_thread.path",
                 "message": "pull_request_review_thread.path could not be resolved"}]}
        return 201, review_comment(int(n), body["body"], body["path"], body["line"], body.get("side", "RIGHT"),
                                   body["commit_id"])

    @route("POST", f"{base}/pulls/(\\d+)/comments/(\\d+)/replies")
    def reply(seen, n, cid):
        root = next((c for c in review_comments.get(int(n), []) if c["id"] == int(cid)), None)
        if root is None:
            return not_found()
        return 201, review_comment(int(n), seen.body["body"], root["path"], root["line"], root["side"],
                                   root["commit_id"], reply_to=root["id"])

    @route("GET", f"{base}/pulls/(\\d+)/files")
    def list_files(seen, n):
        return page(seen, files[int(n)], seen.path) if int(n) in pulls else not_found()

    # ---- Actions ----
    @route("GET", base)
    def get_repo(seen):
        return 200, {"id": 1296269, "full_name": f"{OWNER}/{REPO}", "default_branch": "main"}

    @route("GET", f"{base}/actions/runs")
    def list_runs(seen):
        found = [r for r in runs if seen.query.get("branch") in (None, r["head_branch"])
                 and seen.query.get("head_sha") in (None, r["head_sha"])]
        status, chunk, headers = page(seen, found, seen.path)
        return status, {"total_count": len(found), "workflow_runs": chunk}, headers

    @route("GET", f"{base}/actions/runs/(\\d+)/jobs")
    def list_jobs(seen, run):
        if int(run) not in jobs:
            return not_found()
        status, chunk, headers = page(seen, jobs[int(run)], seen.path)
        return status, {"total_count": len(jobs[int(run)]), "jobs": chunk}, headers

    @route("GET", f"{base}/actions/jobs/(\\d+)/logs")
    def job_logs(seen, job):
        if int(job) not in logs:
            return not_found()
        return 302, "", {"location": f"{fake.url}/blob/job-logs/{job}?sig=abc"}

    # Signed storage: no token needed (the host sends none where none is granted).
    @fake.route("GET", "/blob/job-logs/(\\d+)")
    def log_blob(seen, job):
        return 200, logs[int(job)]

    @route("POST", f"{base}/actions/jobs/(\\d+)/rerun")
    def rerun(seen, job):
        for run_jobs in jobs.values():
            for j in run_jobs:
                if j["id"] == int(job):
                    j.update(status="queued", conclusion=None)
                    next(r for r in runs if r["id"] == j["run_id"]).update(status="queued", conclusion=None)
                    return 201, {}
        return not_found()

    # ---- the repository ----
    def commit_json(c, full=False):
        login, name = c["author"]
        person = {"name": name, "email": f"{login}@example.invalid", "date": c["date"]}
        out = {"sha": c["sha"], "node_id": "C_" + c["sha"][:8],
               "commit": {"author": person, "committer": person, "message": c["message"]},
               "author": user(login), "committer": user(login),
               "parents": [{"sha": p, "url": f"{fake.url}{base}/commits/{p}"} for p in c["parents"]],
               "html_url": f"https://github.com/{OWNER}/{REPO}/commit/{c['sha']}"}
        if full:
            files = []
            for path, (status, content, patch) in c["changes"].items():
                f = {"filename": path, "status": status, "additions": patch.count("\n+") if patch else 0,
                     "deletions": patch.count("\n-") if patch else 0, "changes": 0}
                if patch is not None:  # binary files have no patch
                    f["patch"] = patch
                files.append(f)
            out["files"] = files
            out["stats"] = {"additions": sum(f["additions"] for f in files),
                            "deletions": sum(f["deletions"] for f in files)}
            out["stats"]["total"] = out["stats"]["additions"] + out["stats"]["deletions"]
        return out

    @route("GET", f"{base}/contents(?:/(.*))?")
    def contents(seen, path):
        path = unquote(path or "").strip("/")
        commit = git.resolve(seen.query.get("ref"))
        if commit is None:
            return 404, {"message": f"No commit found for the ref {seen.query.get('ref')}",
                         "documentation_url": "https://docs.github.com/rest/repos/contents#get-repository-content"}
        files = git.tree(commit)
        if path in files:
            content = files[path]
            out = {"type": "file", "name": path.rsplit("/", 1)[-1], "path": path, "size": git.size(content),
                   "sha": hashlib.sha1(git.raw(content)).hexdigest(),
                   "html_url": f"https://github.com/{OWNER}/{REPO}/blob/{commit['sha']}/{path}"}
            if git.size(content) > 1_000_000:
                out.update(encoding="none", content="")
            else:
                b64 = base64.b64encode(git.raw(content)).decode()
                out.update(encoding="base64", content="\n".join(b64[i:i + 60] for i in range(0, len(b64), 60)) + "\n")
            return 200, out
        listed = git.entries(files, path)
        if listed is None:
            return not_found()
        return 200, [{"type": kind, "name": name, "path": p, "size": size, "sha": "0" * 40,
                      "html_url": f"https://github.com/{OWNER}/{REPO}/tree/{commit['sha']}/{p}"}
                     for name, p, kind, size in listed]

    @route("GET", f"{base}/commits")
    def list_commits(seen):
        q = seen.query
        found = git.log(q.get("sha"), q.get("path"), q.get("since"), q.get("until"), q.get("author"))
        if found is None:
            return 404, {"message": "Not Found"}
        return page(seen, [commit_json(c) for c in found], seen.path)

    @route("GET", f"{base}/commits/([^/]+)")
    def get_commit(seen, ref):
        c = git.resolve(unquote(ref))
        if c is None:
            return 422, {"message": f"No commit found for SHA: {unquote(ref)}",
                         "documentation_url": "https://docs.github.com/rest/commits/commits#get-a-commit"}
        return 200, commit_json(c, full=True)

    @route("GET", f"{base}/branches")
    def list_branches(seen):
        return page(seen, [{"name": n, "commit": {"sha": s, "url": f"{fake.url}{base}/commits/{s}"},
                            "protected": n == git.DEFAULT} for n, s in sorted(git.BRANCHES.items())], seen.path)

    @route("GET", "/search/code")
    def search_code(seen):
        words = seen.query["q"].split(" ")
        if f"repo:{OWNER}/{REPO}" not in words:
            return 422, {"message": "Validation Failed", "errors": [{"message": "Must include at least one user, "
                                                                     "organization, or repository"}]}
        text = " ".join(w for w in words if not w.startswith("repo:"))
        paths = sorted({path for path, _, _ in git.grep(git.tree(git.resolve(None)), text)})
        items = [{"name": p.rsplit("/", 1)[-1], "path": p, "sha": "0" * 40, "score": 1.0,
                  "html_url": f"https://github.com/{OWNER}/{REPO}/blob/main/{p}",
                  "repository": {"full_name": f"{OWNER}/{REPO}"}} for p in paths]
        status, chunk, headers = page(seen, items, seen.path)
        return status, {"total_count": len(items), "incomplete_results": False, "items": chunk}, headers

    fake.issues, fake.comments, fake.pulls, fake.reviews = issues, comments, pulls, reviews
    fake.review_comments, fake.files, fake.runs, fake.jobs = review_comments, files, runs, jobs
    return fake.start()
