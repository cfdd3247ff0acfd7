"""A loopback fake of GitLab's REST API v4 (https://docs.gitlab.com/api/)
under `/api/v4`, and of the one GraphQL mutation the plugin runs at
`/api/graphql` (`issueSetIteration`),
for one project addressed by its URL-encoded path (`acme%2Fwidgets`),
following its documented shapes: issues (`iid`, `state` `opened`/`closed`,
labels as strings, `user_notes_count`), notes (system notes among them),
merge requests, discussions (`individual_note`, notes with `position`),
diffs, pipelines, jobs, job traces (plain text), play and retry, issue
links (`issue_link_id`, `link_type`), the repository (repo_fake.py): a file (`repository/files/{path}`, the
path URL-encoded, `ref` required: 400 `ref is missing`; `HEAD` the default
branch; 404 `File Not Found`), trees (trees then blobs; 404 `Tree Not
Found`), commits (`ref_name`, `path`, `author`, `since`, `until`), one
commit with `stats` (404 `Commit Not Found`) and its `diff`, branches
(`search`), blob search (`search?scope=blobs`); iterations (`state` 1 upcoming, 2
current, 3 closed), milestones (`active`/`closed`, `state_event`); `Link`
header pagination (`per_page`, `page`); the token in `PRIVATE-TOKEN`
(401 `{"message": "401 Unauthorized"}` without it); 404
`{"message": "404 Not found"}`; 400 `{"message": {...}}` or `{"error":
...}` for bad parameters. Writes change what later reads answer."""

import base64
import hashlib
from urllib.parse import unquote

import repo_fake as git
from fake import TOKEN, Fake, multipart

PROJECT = "acme/widgets"
ENCODED = "acme%2Fwidgets"
API = "/api/v4"
HEAD_SHA = "a91957a858320c0e17f3a0eca7cfacbff50ea29a"
TRACE = "\n".join(["$ cargo test", "running 3 tests", "test a ... ok", "test b ... FAILED",
                   "error: test failed, to rerun pass `--lib`", "ERROR: Job failed: exit code 101"])


def author(name):
    return {"id": sum(map(ord, name)), "username": name, "name": name.title()}


def gitlab(delay_s=0.0):
    fake = Fake("GitLab", delay_s)
    fake.clock = 0

    def now():
        fake.clock += 1
        return f"2026-11-10T10:00:{fake.clock:02d}.000Z"

    issues = {n: {"id": 700 + n, "iid": n, "title": f"Issue {n}", "description": f"About {n}",
                  "state": "opened" if n != 3 else "closed", "labels": ["bug"] if n % 2 else [],
                  "assignees": [author("alice")] if n == 5 else [], "author": author("bob"),
                  "user_notes_count": 1, "web_url": f"https://gitlab.com/{PROJECT}/-/issues/{n}",
                  "created_at": "2026-11-01T10:00:00.000Z", "updated_at": f"2026-11-02T10:00:{n:02d}.000Z"}
              for n in range(1, 8)}
    notes = {n: [{"id": 900 + n, "body": "changed the description", "system": True, "author": author("bob"),
                  "created_at": "2026-11-03T10:00:00.000Z"},
                 {"id": 950 + n, "body": f"Seen on {n}", "system": False, "author": author("alice"),
                  "created_at": "2026-11-03T11:00:00.000Z"}] for n in issues}
    mrs = {n: {"id": 600 + n, "iid": n, "title": f"MR {n}", "description": f"Changes {n}", "state": state,
               "draft": False, "author": author("alice"), "source_branch": f"feature-{n}", "target_branch": "main",
               "sha": HEAD_SHA, "labels": [], "reviewers": [author("bob")],
               "web_url": f"https://gitlab.com/{PROJECT}/-/merge_requests/{n}",
               "created_at": "2026-11-01T10:00:00.000Z", "updated_at": "2026-11-02T10:00:00.000Z",
               "diff_refs": {"base_sha": "b" * 40, "start_sha": "s" * 40, "head_sha": HEAD_SHA}}
           for n, state in [(1, "merged"), (2, "opened"), (3, "opened")]}
    discussions = {n: [] for n in mrs}
    discussions[2] = [
        {"id": "6a9c1750b37d513a43987b574953fceb50b03ce7", "individual_note": False, "notes": [
            {"id": 1201, "body": "Off by one?", "author": author("bob"), "created_at": "2026-11-04T09:00:00.000Z",
             "system": False, "resolved": False, "position": {"new_path": "src/lib.rs", "old_path": "src/lib.rs",
                                                              "new_line": 12, "old_line": None}},
            {"id": 1202, "body": "Fixed.", "author": author("alice"), "created_at": "2026-11-04T09:10:00.000Z",
             "system": False, "resolved": False}]},
        {"id": "87805b7c09016a7058e91bdbe7b29d1f284a39e6", "individual_note": True, "notes": [
            {"id": 1203, "body": "LGTM", "author": author("carol"), "created_at": "2026-11-04T10:00:00.000Z",
             "system": False}]},
    ]
    diffs = {n: [] for n in mrs}
    diffs[2] = [{"old_path": "src/lib.rs", "new_path": "src/lib.rs", "diff": "@@ -10,3 +10,3 @@\n-a\n+b\n",
                 "new_file": False, "renamed_file": False, "deleted_file": False},
                {"old_path": "NOTES.md", "new_path": "NOTES.md", "diff": "@@ -0,0 +1 @@\n+hi\n",
                 "new_file": True, "renamed_file": False, "deleted_file": False}]
    pipelines = [{"id": 51, "status": "failed", "ref": "feature-2", "sha": HEAD_SHA, "web_url": "https://g/p/51",
                  "mr": 2},
                 {"id": 50, "status": "success", "ref": "main", "sha": "c" * 40, "web_url": "https://g/p/50",
                  "mr": None}]
    jobs = {51: [{"id": 7001, "name": "test", "stage": "test", "status": "failed", "web_url": "https://g/j/7001"},
                 {"id": 7002, "name": "deploy", "stage": "deploy", "status": "manual", "web_url": "https://g/j/7002"}],
            50: [{"id": 7000, "name": "test", "stage": "test", "status": "success", "web_url": "https://g/j/7000"}]}
    traces = {7000: "ok", 7001: TRACE, 7002: ""}
    SECRET = "66dbcd21ec5d24ed6ea225176098d52b"
    uploads = {f"{SECRET}/crash.png": (b"\x89PNG\r\n\x1a\nfake", "image/png"),
               f"{'0' * 31}1/build.log": (b"step 1\nstep 2 failed\n", "text/plain")}
    issues[4]["description"] = f"Crash: ![crash](/uploads/{SECRET}/crash.png)"
    notes[4][1]["body"] = f"Log attached: [build.log](/uploads/{'0' * 31}1/build.log)"
    base = f"{API}/projects/{ENCODED}"

    def route(method, pattern):
        def register(handler):
            def checked(seen, *groups):
                if seen.headers.get("private-token") != TOKEN:
                    return 401, {"message": "401 Unauthorized"}
                return handler(seen, *groups)
            return fake.route(method, pattern)(checked)
        return register

    def not_found(what="Not found"):
        return 404, {"message": f"404 {what}"}

    def page(seen, items):
        per_page, page_no = int(seen.query.get("per_page", 20)), int(seen.query.get("page", 1))
        start = (page_no - 1) * per_page
        headers = {"x-total": str(len(items))}
        if start + per_page < len(items):
            query = "&".join(f"{k}={v}" for k, v in {**seen.query, "page": page_no + 1}.items())
            headers["link"] = f'<{fake.url}{seen.path}?{query}>; rel="next"'
        return 200, items[start:start + per_page], headers

    @route("GET", f"{base}/issues")
    def list_issues(seen):
        q = seen.query
        if q.get("order_by") not in ("created_at", "updated_at"):
            return 400, {"error": "order_by does not have a valid value"}
        found = [i for i in issues.values() if q.get("state", "all") in ("all", i["state"])]
        if q.get("labels"):
            found = [i for i in found if set(q["labels"].split(",")) <= set(i["labels"])]
        if q.get("assignee_username"):
            found = [i for i in found if q["assignee_username"] in {a["username"] for a in i["assignees"]}]
        if q.get("search"):
            found = [i for i in found if q["search"].lower() in (i["title"] + i["description"]).lower()]
        found.sort(key=lambda i: i[q["order_by"]], reverse=q.get("sort", "desc") == "desc")
        return page(seen, found)

    @route("GET", f"{base}/issues/(\\d+)")
    def get_issue(seen, n):
        return (200, issues[int(n)]) if int(n) in issues else not_found()

    @route("POST", f"{base}/issues")
    def create_issue(seen):
        body = seen.body or {}
        if not body.get("title"):
            return 400, {"message": {"title": ["can't be blank"]}}
        n = max(issues) + 1
        issues[n] = {"id": 700 + n, "iid": n, "title": body["title"], "description": body.get("description"),
                     "state": "opened", "labels": [l for l in body.get("labels", "").split(",") if l],
                     "assignees": [people[i] for i in body.get("assignee_ids", [])], "author": author("bob"),
                     "user_notes_count": 0,
                     "web_url": f"https://gitlab.com/{PROJECT}/-/issues/{n}", "created_at": now(), "updated_at": now()}
        notes[n] = []
        return 201, issues[n]

    @route("PUT", f"{base}/issues/(\\d+)")
    def update_issue(seen, n):
        if int(n) not in issues:
            return not_found()
        issue, body = issues[int(n)], seen.body or {}
        for k in ("title", "description"):
            if k in body:
                issue[k] = body[k]
        if "labels" in body:
            issue["labels"] = [l for l in body["labels"].split(",") if l]
        if "state_event" in body:
            issue["state"] = {"close": "closed", "reopen": "opened"}[body["state_event"]]
        if "assignee_ids" in body:
            issue["assignees"] = [people[i] for i in body["assignee_ids"]]
        issue["updated_at"] = now()
        return 200, issue

    @route("GET", f"{base}/issues/(\\d+)/notes")
    def list_notes(seen, n):
        return page(seen, notes[int(n)]) if int(n) in issues else not_found()

    @route("POST", f"{base}/issues/(\\d+)/notes")
    def add_note(seen, n):
        if int(n) not in issues:
            return not_found()
        note = {"id": 3000 + len(fake.seen), "body": seen.body["body"], "system": False, "author": author("bob"),
                "created_at": now()}
        notes[int(n)].append(note)
        issues[int(n)]["user_notes_count"] += 1
        return 201, note

    @route("POST", f"{base}/uploads")
    def upload(seen):
        parts = multipart(seen)
        if [p.name for p in parts] != ["file"]:
            return 400, {"error": "file is missing"}
        part = parts[0]
        secret = f"{len(uploads) + 0xabc:032x}"
        uploads[f"{secret}/{part.filename}"] = (part.data, part.content_type)
        url = f"/uploads/{secret}/{part.filename}"
        alt = part.filename.rsplit(".", 1)[0]
        image = part.content_type.startswith("image/")
        return 201, {"id": len(uploads), "alt": alt, "url": url, "full_path": f"/-/project/1234{url}",
                     "markdown": f"![{alt}]({url})" if image else f"[{part.filename}]({url})"}

    @route("GET", f"{base}/uploads/([0-9a-f]{{32}})/([^/]+)")
    def download(seen, secret, name):
        found = uploads.get(f"{secret}/{name}")
        if not found:
            return not_found("File Not Found")
        return 200, found[0], {"content-type": found[1]}

    @route("DELETE", f"{base}/uploads/([0-9a-f]{{32}})/([^/]+)")
    def delete_upload(seen, secret, name):
        if uploads.pop(f"{secret}/{name}", None) is None:
            return not_found("File Not Found")
        return 204, b""

    @route("GET", f"{base}/merge_requests")
    def list_mrs(seen):
        q = seen.query
        found = [m for m in sorted(mrs.values(), key=lambda m: -m["iid"]) if q.get("state", "all") in ("all", m["state"])]
        for arg, field in (("author_username", "author"), ("source_branch", "source_branch"),
                           ("target_branch", "target_branch")):
            if q.get(arg):
                found = [m for m in found if (m[field]["username"] if field == "author" else m[field]) == q[arg]]
        return page(seen, found)

    people = {a["id"]: a for a in map(author, ("alice", "bob", "carol"))}

    @route("GET", f"{API}/users")
    def list_users(seen):
        found = [u for u in people.values()
                 if seen.query.get("username", u["username"]) == u["username"]
                 and seen.query.get("search", "") in u["username"]]
        return page(seen, found)

    @route("GET", f"{API}/users/(\\d+)")
    def get_user(seen, uid):
        return (200, people[int(uid)]) if int(uid) in people else not_found()

    @route("GET", f"{base}/members/all")
    def members(seen):
        return page(seen, [people[a["id"]] for a in map(author, ("alice", "bob"))])

    def apply(mr, body):
        for k in ("title", "description", "target_branch", "source_branch"):
            if k in body:
                mr[k] = body[k]
        mr["draft"] = mr["title"].startswith("Draft: ")
        if "labels" in body:
            mr["labels"] = [l for l in body["labels"].split(",") if l]
        if "reviewer_ids" in body:
            mr["reviewers"] = [people[i] for i in body["reviewer_ids"]]
        if "state_event" in body:
            mr["state"] = {"close": "closed", "reopen": "opened"}[body["state_event"]]
        mr["updated_at"] = now()
        return mr

    @route("POST", f"{base}/merge_requests")
    def create_mr(seen):
        body = seen.body or {}
        if any(m["source_branch"] == body.get("source_branch") and m["state"] == "opened" for m in mrs.values()):
            return 409, {"message": ["Another open merge request already exists for this source branch: !2"]}
        n = max(mrs) + 1
        mrs[n] = apply({"id": 600 + n, "iid": n, "state": "opened", "author": author("bob"), "sha": HEAD_SHA,
                        "labels": [], "reviewers": [], "web_url": f"https://gitlab.com/{PROJECT}/-/merge_requests/{n}",
                        "created_at": now(), "diff_refs": None}, body)
        discussions[n], diffs[n] = [], []
        return 201, mrs[n]

    @route("PUT", f"{base}/merge_requests/(\\d+)")
    def update_mr(seen, n):
        return (200, apply(mrs[int(n)], seen.body or {})) if int(n) in mrs else not_found()

    @route("GET", f"{base}/merge_requests/(\\d+)")
    def get_mr(seen, n):
        return (200, mrs[int(n)]) if int(n) in mrs else not_found()

    @route("GET", f"{base}/merge_requests/(\\d+)/discussions")
    def list_discussions(seen, n):
        return page(seen, discussions[int(n)]) if int(n) in mrs else not_found()

    @route("POST", f"{base}/merge_requests/(\\d+)/discussions")
    def start_discussion(seen, n):
        body = seen.body
        position = body["position"]
        if position["new_path"] not in {d["new_path"] for d in diffs[int(n)]}:
            return 400, {"message": "400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}"}
        d = {"id": f"{len(fake.seen):040x}", "individual_note": False, "notes": [
            {"id": 4000 + len(fake.seen), "body": body["body"], "author": author("bob"), "created_at": now(),
             "system": False, "resolved": False, "position": position}]}
        discussions[int(n)].append(d)
        return 201, d

    @route("POST", f"{base}/merge_requests/(\\d+)/discussions/([0-9a-f]+)/notes")
    def reply(seen, n, did):
        d = next((d for d in discussions.get(int(n), []) if d["id"] == did), None)
        if d is None:
            return not_found("Discussion Not Found")
        note = {"id": 4500 + len(fake.seen), "body": seen.body["body"], "author": author("bob"), "created_at": now(),
                "system": False}
        d["notes"].append(note)
        return 201, note

    @route("POST", f"{base}/merge_requests/(\\d+)/notes")
    def mr_note(seen, n):
        note = {"id": 4800 + len(fake.seen), "body": seen.body["body"], "author": author("bob"), "created_at": now(),
                "system": False}
        discussions[int(n)].append({"id": f"{note['id']:040x}", "individual_note": True, "notes": [note]})
        return 201, note

    @route("GET", f"{base}/merge_requests/(\\d+)/diffs")
    def list_diffs(seen, n):
        return page(seen, diffs[int(n)]) if int(n) in mrs else not_found()

    @route("GET", f"{base}/merge_requests/(\\d+)/pipelines")
    def mr_pipelines(seen, n):
        return page(seen, [p for p in pipelines if p["mr"] == int(n)])

    @route("GET", f"{base}/pipelines")
    def list_pipelines(seen):
        return page(seen, [p for p in pipelines if seen.query.get("ref") in (None, p["ref"])])

    @route("GET", f"{base}/pipelines/(\\d+)/jobs")
    def list_jobs(seen, pid):
        return page(seen, jobs[int(pid)]) if int(pid) in jobs else not_found()

    @route("GET", f"{base}/jobs/(\\d+)/trace")
    def trace(seen, job):
        return (200, traces[int(job)]) if int(job) in traces else not_found()

    def find_job(job):
        return next((j for js in jobs.values() for j in js if j["id"] == int(job)), None)

    @route("GET", f"{base}/jobs/(\\d+)")
    def get_job(seen, job):
        j = find_job(job)
        return (200, j) if j else not_found()

    @route("POST", f"{base}/jobs/(\\d+)/play")
    def play(seen, job):
        j = find_job(job)
        if j["status"] != "manual":
            return 400, {"message": "400 Unplayable Job"}
        j["status"] = "pending"
        return 200, j

    @route("POST", f"{base}/jobs/(\\d+)/retry")
    def retry(seen, job):
        j = find_job(job)
        new = {**j, "id": j["id"] + 100, "status": "pending"}
        for js in jobs.values():
            if j in js:
                js.append(new)
        traces[new["id"]] = ""
        return 201, new

    # Issue links, each once: the other end lists it with the inverse type.
    links = [{"id": 81, "source": 2, "target": 4, "link_type": "blocks"}]
    inverse = {"relates_to": "relates_to", "blocks": "is_blocked_by", "is_blocked_by": "blocks"}

    def linked(n, link):
        other, kind = ((link["target"], link["link_type"]) if link["source"] == n
                       else (link["source"], inverse[link["link_type"]]))
        return {**issues[other], "project_id": 278964, "issue_link_id": link["id"], "link_type": kind,
                "link_created_at": "2026-11-05T10:00:00.000Z", "link_updated_at": "2026-11-05T10:00:00.000Z"}

    @route("GET", f"{base}/issues/(\\d+)/links")
    def list_links(seen, n):
        n = int(n)
        if n not in issues:
            return not_found()
        return 200, [linked(n, l) for l in links if n in (l["source"], l["target"])]

    @route("POST", f"{base}/issues/(\\d+)/links")
    def create_link(seen, n):
        n, body = int(n), seen.body or {}
        if n not in issues or body.get("target_project_id") != PROJECT:
            return not_found()
        target = int(body.get("target_issue_iid", 0))
        if target not in issues:
            return not_found()
        kind = body.get("link_type", "relates_to")
        if kind not in inverse:
            return 400, {"error": "link_type does not have a valid value"}
        if any({l["source"], l["target"]} == {n, target} for l in links):
            return 409, {"message": "Issue(s) already assigned"}
        link = {"id": 80 + len(links) + len(fake.seen), "source": n, "target": target, "link_type": kind}
        links.append(link)
        return 201, {"source_issue": issues[n], "target_issue": issues[target], "link_type": kind}

    @route("DELETE", f"{base}/issues/(\\d+)/links/(\\d+)")
    def delete_link(seen, n, link_id):
        link = next((l for l in links if l["id"] == int(link_id) and int(n) in (l["source"], l["target"])), None)
        if link is None:
            return not_found()
        links.remove(link)
        return 200, {"source_issue": issues[link["source"]], "target_issue": issues[link["target"]],
                     "link_type": link["link_type"]}

    iterations = [{"id": 310 + k, "iid": k, "sequence": k, "group_id": 12, "title": f"Sprint {k}",
                   "description": None, "state": state, "start_date": start, "due_date": due,
                   "web_url": f"https://gitlab.com/groups/acme/-/iterations/{310 + k}"}
                  for k, state, start, due in [(1, 3, "2026-11-02", "2026-11-15"), (2, 2, "2026-11-16", "2026-11-29"),
                                               (3, 1, "2026-11-30", "2026-12-13")]]
    states = {"upcoming": {1}, "current": {2}, "opened": {1, 2}, "closed": {3}, "all": {1, 2, 3}}

    @route("GET", f"{base}/iterations")
    def list_iterations(seen):
        state = seen.query.get("state", "all")
        if state not in states:
            return 400, {"error": "state does not have a valid value"}
        return page(seen, [i for i in iterations if i["state"] in states[state]])

    milestones = [{"id": 501, "iid": 1, "project_id": 278964, "title": "1.0", "description": "First",
                   "state": "closed", "start_date": "2026-09-01", "due_date": "2026-10-01",
                   "web_url": f"https://gitlab.com/{PROJECT}/-/milestones/1"},
                  {"id": 502, "iid": 2, "project_id": 278964, "title": "1.1", "description": "Next",
                   "state": "active", "start_date": "2026-10-01", "due_date": None,
                   "web_url": f"https://gitlab.com/{PROJECT}/-/milestones/2"}]

    @route("GET", f"{base}/milestones")
    def list_milestones(seen):
        q = seen.query
        return page(seen, [m for m in milestones if q.get("state", m["state"]) == m["state"]
                           and q.get("title", m["title"]) == m["title"]])

    def change(m, body):
        for k in ("title", "description", "start_date", "due_date"):
            if k in body:
                m[k] = body[k]
        if "state_event" in body:
            m["state"] = {"close": "closed", "activate": "active"}[body["state_event"]]
        return m

    @route("POST", f"{base}/milestones")
    def create_milestone(seen):
        body = seen.body or {}
        if not body.get("title"):
            return 400, {"error": "title is missing"}
        if any(m["title"] == body["title"] for m in milestones):
            return 400, {"message": "Milestone already exists"}
        n = len(milestones) + 1
        m = change({"id": 500 + n, "iid": n, "project_id": 278964, "description": None, "state": "active",
                    "start_date": None, "due_date": None, "web_url": f"https://gitlab.com/{PROJECT}/-/milestones/{n}"},
                   {k: v for k, v in body.items() if k != "state_event"})
        milestones.append(m)
        return 201, m

    @route("PUT", f"{base}/milestones/(\\d+)")
    def update_milestone(seen, mid):
        m = next((m for m in milestones if m["id"] == int(mid)), None)
        return (200, change(m, seen.body or {})) if m else not_found()

    def set_iteration(seen, v):
        issue = issues.get(int(v.get("iid", 0))) if v.get("projectPath") == PROJECT else None
        if issue is None:
            return 200, {"data": {"issueSetIteration": None}, "errors": [{
                "message": "The resource that you are attempting to access does not exist or you don't have "
                           "permission to perform this action", "path": ["issueSetIteration"]}]}
        found = next((i for i in iterations if f"gid://gitlab/Iteration/{i['id']}" == v.get("iterationId")), None)
        if found is None:
            return 200, {"data": {"issueSetIteration": {"issue": None, "errors": ["Iteration not found"]}}}
        issue["iteration"] = found
        return 200, {"data": {"issueSetIteration": {"errors": [], "issue": {
            "iid": str(issue["iid"]), "iteration": {"id": f"gid://gitlab/Iteration/{found['id']}",
                                                    "title": found["title"]}}}}}

    def authorized(handler):
        def serve(seen, v):
            if seen.headers.get("private-token") != TOKEN:
                return 401, {"message": "401 Unauthorized"}
            return handler(seen, v)
        return serve

    fake.graphql("/api/graphql", {"IssueSetIteration": authorized(set_iteration)})

    # ---- the repository ----
    def commit_json(c, full=False):
        login, name = c["author"]
        out = {"id": c["sha"], "short_id": c["sha"][:8], "title": c["message"].split("\n")[0],
               "message": c["message"], "parent_ids": c["parents"], "author_name": name,
               "author_email": f"{login}@example.invalid", "authored_date": c["date"], "committer_name": name,
               "committer_email": f"{login}@example.invalid", "committed_date": c["date"], "created_at": c["date"],
               "web_url": f"https://gitlab.com/{PROJECT}/-/commit/{c['sha']}"}
        if full:
            patches = [p or "" for _, _, p in c["changes"].values()]
            adds = sum(p.count("\n+") for p in patches)
            dels = sum(p.count("\n-") for p in patches)
            out["stats"] = {"additions": adds, "deletions": dels, "total": adds + dels}
            out["status"] = "success"
        return out

    def ref_commit(seen, name="ref"):
        ref = seen.query.get(name)
        return git.resolve(git.DEFAULT if ref == "HEAD" else ref)

    @route("GET", f"{base}/repository/files/([^/]+)")
    def get_file(seen, encoded):
        if "ref" not in seen.query:
            return 400, {"error": "ref is missing"}
        commit, path = ref_commit(seen), unquote(encoded)
        files = git.tree(commit) if commit else {}
        if path not in files:
            return not_found("File Not Found")
        data = git.raw(files[path])
        return 200, {"file_name": path.rsplit("/", 1)[-1], "file_path": path, "size": len(data),
                     "encoding": "base64", "content": base64.b64encode(data).decode(),
                     "content_sha256": hashlib.sha256(data).hexdigest(), "ref": seen.query["ref"],
                     "blob_id": hashlib.sha1(data).hexdigest(), "commit_id": commit["sha"],
                     "last_commit_id": commit["sha"], "execute_filemode": False}

    @route("GET", f"{base}/repository/tree")
    def get_tree(seen):
        commit = ref_commit(seen)
        listed = git.entries(git.tree(commit), seen.query.get("path", "").strip("/")) if commit else None
        if listed is None:
            return not_found("Tree Not Found")
        # Trees first, then blobs.
        listed.sort(key=lambda e: (e[2] != "dir", e[0]))
        return page(seen, [{"id": "0" * 40, "name": name, "type": "tree" if kind == "dir" else "blob", "path": p,
                            "mode": "040000" if kind == "dir" else "100644"} for name, p, kind, _ in listed])

    @route("GET", f"{base}/repository/commits")
    def list_commits(seen):
        q = seen.query
        found = git.log(q.get("ref_name"), q.get("path"), q.get("since"), q.get("until"), q.get("author"))
        if found is None:
            return not_found()
        return page(seen, [commit_json(c) for c in found])

    @route("GET", f"{base}/repository/commits/([^/]+)")
    def get_commit(seen, ref):
        c = git.resolve(unquote(ref))
        return (200, commit_json(c, full=True)) if c else not_found("Commit Not Found")

    @route("GET", f"{base}/repository/commits/([^/]+)/diff")
    def get_commit_diff(seen, ref):
        c = git.resolve(unquote(ref))
        if c is None:
            return not_found("Commit Not Found")
        return page(seen, [{"diff": (patch or "") + "\n", "new_path": path, "old_path": path, "a_mode": "100644",
                            "b_mode": "100644", "new_file": status == "added", "renamed_file": False,
                            "deleted_file": status == "removed"}
                           for path, (status, _, patch) in c["changes"].items()])

    @route("GET", f"{base}/repository/branches")
    def list_branches(seen):
        search = seen.query.get("search", "")
        return page(seen, [{"name": n, "merged": False, "protected": n == git.DEFAULT, "default": n == git.DEFAULT,
                            "web_url": f"https://gitlab.com/{PROJECT}/-/tree/{n}",
                            "commit": commit_json(git.COMMITS[s])}
                           for n, s in sorted(git.BRANCHES.items()) if search.lower() in n.lower()])

    @route("GET", f"{base}/search")
    def search(seen):
        if seen.query.get("scope") != "blobs":
            return 400, {"error": "scope does not have a valid value"}
        if not seen.query.get("search"):
            return 400, {"error": "search is missing"}
        commit = git.resolve(seen.query.get("ref"))
        files = git.tree(commit)
        hits = [{"basename": path.rsplit(".", 1)[0], "data": "\n".join(files[path].splitlines()[max(0, n - 2):n + 1]),
                 "path": path, "filename": path, "id": None, "ref": seen.query.get("ref", git.DEFAULT), "startline":
                 max(1, n - 1), "project_id": 42} for path, n, _ in git.grep(files, seen.query["search"])]
        return page(seen, hits)

    fake.links, fake.milestones = links, milestones
    fake.issues, fake.notes, fake.mrs, fake.discussions, fake.diffs = issues, notes, mrs, discussions, diffs
    fake.jobs = jobs
    fake.uploads = uploads
    return fake.start()
