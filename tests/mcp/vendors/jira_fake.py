"""A loopback fake of Jira Cloud's REST API v3 and Agile API
(https://developer.atlassian.com/cloud/jira/platform/rest/v3/,
https://developer.atlassian.com/cloud/jira/software/rest/), for one site with
project WEB, following their documented shapes:

- enhanced JQL search `GET /rest/api/3/search/jql` (`jql`, `maxResults`,
  `fields`, `nextPageToken`; answers `issues`, `nextPageToken`, `isLast`),
  with the small JQL subset the plugin writes; anything else is a 400 with
  `errorMessages`, as Jira answers a JQL error;
- issues with ADF descriptions, comments (`startAt`/`maxResults`/`total`),
  edits (204), transitions, issue links, attachments, users, statuses,
  fields, create metadata, versions; boards and sprints (`values`,
  `isLast`);
- errors as Jira writes them: `{"errorMessages": [...], "errors": {...}}`;
  401 when the token is revoked (`fake.revoked = True`), 403 on editing
  WEB-20 (its security level hides it from the token's user);
- attachments: metadata, a multipart upload (refused without
  `X-Atlassian-Token: no-check`, as Jira's XSRF check does), and content
  answered by a 303 to the media host (here the same origin);
- the Structure app: structures (list, create), structure 12's forest
  (`/rest/structure/2.0/forest/latest?s=spec`) as a formula of
  `rowId:depth:item[:semantic]`, edited by `forest/update` actions (add,
  move, remove) against its version (409 when stale), and attribute values
  (`/value`).
"""

import base64
import json

from fake import TOKEN, Fake, multipart

AUTH = f"Basic {TOKEN}"
PROJECT, PROJECT_ID = "WEB", "10000"
PAGE_CAP = 5

CATEGORIES = {"To Do": "new", "In Progress": "indeterminate", "Done": "done"}
STATUS_IDS = {"To Do": "1", "In Progress": "3", "Done": "10001"}


def adf(text):
    return {"type": "doc", "version": 1,
            "content": [{"type": "paragraph", "content": [{"type": "text", "text": text}]}]}


def user(account, name):
    return {"accountId": account, "displayName": name, "emailAddress": f"{account}@acme.test", "active": True,
            "accountType": "atlassian"}


ALICE, BOB = user("acc-alice", "Alice"), user("acc-bob", "Bob")


def errors(status, *messages, **fields):
    return status, {"errorMessages": list(messages), "errors": fields}


def token(offset):
    return base64.b64encode(f"offset:{offset}".encode()).decode()


def untoken(t):
    return int(base64.b64decode(t).decode().split(":")[1])


def jira(delay_s=0.0):
    fake = Fake("Jira", delay_s)
    fake.revoked = False
    issues, comments, links, created = {}, {}, [], []
    for n in range(1, 26):
        key = f"{PROJECT}-{n}"
        status = "Done" if n % 5 == 0 else ("In Progress" if n % 2 else "To Do")
        issues[key] = {
            "id": str(10000 + n), "key": key, "self": f"/rest/api/3/issue/{10000 + n}",
            "fields": {
                "summary": f"Issue {n}", "description": adf(f"Description of {n}"),
                "status": {"name": status, "id": STATUS_IDS[status], "statusCategory": {"key": CATEGORIES[status]}},
                "priority": {"name": "High" if n % 3 == 0 else "Medium"},
                "issuetype": {"name": "Bug" if n % 4 == 0 else "Story"},
                "labels": ["frontend"] if n % 3 == 0 else [],
                "components": [{"name": "checkout"}],
                "assignee": ALICE if n % 2 else None, "reporter": BOB,
                "project": {"key": PROJECT, "id": PROJECT_ID},
                "created": f"2026-11-{n:02d}T10:00:00.000+0000", "updated": f"2026-11-{n:02d}T12:00:00.000+0000",
                "subtasks": [], "attachment": [],
            },
        }
        comments[key] = [{"id": str(20000 + n * 10 + c), "author": BOB, "body": adf(f"Comment {c} on {key}"),
                          "created": "2026-11-20T10:00:00.000+0000", "updated": "2026-11-20T10:00:00.000+0000"}
                         for c in range(3)]
    for n, status, title in ((100, "To Do", "Q4 launch"), (101, "Done", "Q3 launch")):
        key = f"{PROJECT}-{n}"
        issues[key] = {"id": str(10000 + n), "key": key, "fields": {
            **issues["WEB-1"]["fields"], "summary": title, "description": adf(f"Epic {title}"),
            "status": {"name": status, "id": STATUS_IDS[status], "statusCategory": {"key": CATEGORIES[status]}},
            "issuetype": {"name": "Epic"}, "labels": [], "assignee": None, "parent": None,
            "created": "2026-10-01T10:00:00.000+0000", "updated": f"2026-10-{n - 90:02d}T10:00:00.000+0000"}}
        comments[key] = []
    for child in ("WEB-5", "WEB-10"):
        issues[child]["fields"]["parent"] = {"key": "WEB-100", "fields": {"summary": "Q4 launch",
                                                                          "status": {"name": "To Do"}}}
    issues["WEB-2"]["fields"]["parent"] = {"key": "WEB-1", "fields": {"summary": "Issue 1", "status": {"name": "In Progress"}}}
    issues["WEB-1"]["fields"]["subtasks"] = [{"key": "WEB-2", "fields": {"summary": "Issue 2", "status": {"name": "To Do"}}}]
    issues["WEB-1"]["fields"]["attachment"] = [
        {"id": "30001", "filename": "trace.log", "size": 2048, "mimeType": "text/plain", "author": BOB,
         "created": "2026-11-21T10:00:00.000+0000"}]
    # Attachment content by id; 30002 is larger than a download returns.
    files = {"30001": b"trace line 1\ntrace line 2\n"}
    issues["WEB-1"]["fields"]["attachment"].append(
        {"id": "30002", "filename": "dump.bin", "size": 50 * 1024 * 1024, "mimeType": "application/octet-stream",
         "author": BOB, "created": "2026-11-21T10:00:00.000+0000"})
    link_types = {"Blocks": ("is blocked by", "blocks"), "Relates": ("relates to", "relates to")}
    versions = [
        {"id": "40001", "name": "1.0", "released": True, "archived": False, "projectId": int(PROJECT_ID), "releaseDate": "2026-10-01"},
        {"id": "40002", "name": "1.1", "released": False, "archived": False, "projectId": int(PROJECT_ID)},
        {"id": "40003", "name": "0.9", "released": True, "archived": True, "projectId": int(PROJECT_ID)},
    ]
    sprints = [{"id": 7 + i, "name": f"Sprint {7 + i}", "state": state, "originBoardId": 3,
                "startDate": "2026-11-01T00:00:00.000Z", "endDate": "2026-11-14T00:00:00.000Z", "goal": ""}
               for i, state in enumerate(["closed", "closed", "active", "future"])]
    sprint_issues = {}

    def guarded(handler):
        def check(seen, *groups):
            if fake.revoked or seen.headers.get("authorization") != AUTH:
                return 401, {"errorMessages": ["Client must be authenticated to access this resource."], "errors": {}}
            return handler(seen, *groups)
        return check

    def route(method, pattern):
        def register(handler):
            fake.route(method, pattern)(guarded(handler))
            return handler
        return register

    def find(key):
        return issues.get(key.upper())

    def missing():
        return errors(404, "Issue does not exist or you do not have permission to see it.")

    def with_fields(issue, fields):
        wanted = fields.split(",") if fields else None
        out = {k: v for k, v in issue.items() if k != "fields"}
        out["fields"] = {k: v for k, v in issue["fields"].items() if wanted is None or k in wanted}
        if wanted and "issuelinks" in wanted:
            out["fields"]["issuelinks"] = links_of(issue["key"])
        if wanted and "comment" in wanted:
            cs = comments[issue["key"]]
            out["fields"]["comment"] = {"comments": cs, "startAt": 0, "maxResults": len(cs), "total": len(cs)}
        return out

    def links_of(key):
        out = []
        for link in links:
            inward, outward = link_types[link["type"]]
            kind = {"name": link["type"], "inward": inward, "outward": outward}
            if link["outward"] == key:
                other = issues[link["inward"]]
                out.append({"id": link["id"], "type": kind, "inwardIssue": brief(other)})
            elif link["inward"] == key:
                other = issues[link["outward"]]
                out.append({"id": link["id"], "type": kind, "outwardIssue": brief(other)})
        return out

    def brief(issue):
        return {"key": issue["key"], "fields": {"summary": issue["fields"]["summary"],
                                                "status": {"name": issue["fields"]["status"]["name"]}}}

    def clause_filter(clause):
        """One JQL clause the plugin writes, as a predicate; None if not understood."""
        import re
        q = r'"((?:[^"\\]|\\.)*)"'
        if m := re.fullmatch(rf"project = {q}", clause):
            return lambda i: i["fields"]["project"]["key"] == m[1]
        if m := re.fullmatch(r"statusCategory (!=|=) Done", clause):
            return lambda i: (i["fields"]["status"]["statusCategory"]["key"] == "done") == (m[1] == "=")
        if m := re.fullmatch(rf"status = {q}", clause):
            return lambda i: i["fields"]["status"]["name"] == m[1]
        if m := re.fullmatch(rf"labels = {q}", clause):
            return lambda i: m[1] in i["fields"]["labels"]
        if m := re.fullmatch(rf"assignee = {q}", clause):
            return lambda i: (i["fields"]["assignee"] or {}).get("accountId") == m[1]
        if m := re.fullmatch(rf"text ~ {q}", clause):
            return lambda i: m[1].lower() in i["fields"]["summary"].lower()
        if m := re.fullmatch(r"id in \(([\d, ]+)\)", clause):
            return lambda i: i["id"] in {x.strip() for x in m[1].split(",")}
        if m := re.fullmatch(r'key in \(((?:"[A-Z]+-\d+"(?:, )?)+)\)', clause):
            return lambda i: i["key"] in set(re.findall(r'"([A-Z]+-\d+)"', m[1]))
        if m := re.fullmatch(rf"summary ~ {q}", clause):
            return lambda i: m[1].lower() in i["fields"]["summary"].lower()
        if m := re.fullmatch(rf"parent = {q}", clause):
            return lambda i: (i["fields"].get("parent") or {}).get("key") == m[1]
        if m := re.fullmatch(r"issuetype = (\w+)", clause):
            return lambda i: i["fields"]["issuetype"]["name"] == m[1]
        return None

    @route("GET", "/rest/api/3/search/jql")
    def search(seen):
        jql = seen.query.get("jql", "")
        where, _, order = jql.partition(" ORDER BY ")
        preds = [clause_filter(c) for c in where.split(" AND ")] if where else []
        if None in preds:
            return errors(400, f"Error in the JQL Query: the query '{jql}' could not be parsed.")
        found = [i for i in issues.values() if all(p(i) for p in preds)]
        field, _, direction = order.partition(" ")
        found.sort(key=lambda i: (i["fields"].get(field or "updated"), int(i["id"])), reverse=direction != "ASC")
        start = untoken(seen.query["nextPageToken"]) if "nextPageToken" in seen.query else 0
        # Jira may answer fewer issues than `maxResults` asks (it caps pages
        # by the fields asked for); this site caps them at PAGE_CAP.
        size = min(int(seen.query.get("maxResults", 50)), PAGE_CAP)
        chunk = found[start:start + size]
        body = {"issues": [with_fields(i, seen.query.get("fields")) for i in chunk],
                "isLast": start + size >= len(found)}
        if not body["isLast"]:
            body["nextPageToken"] = token(start + size)
        return 200, body

    @route("GET", r"/rest/api/3/issue/([A-Z]+-\d+)")
    def get_issue(seen, key):
        issue = find(key)
        return (200, with_fields(issue, seen.query.get("fields"))) if issue else missing()

    def page(seen, items, field="values", total=True):
        start, size = int(seen.query.get("startAt", 0)), int(seen.query.get("maxResults", 50))
        chunk = items[start:start + size]
        body = {"startAt": start, "maxResults": size, field: chunk, "isLast": start + size >= len(items)}
        if total:
            body["total"] = len(items)
        return 200, body

    @route("GET", r"/rest/api/3/issue/([A-Z]+-\d+)/comment")
    def list_comments(seen, key):
        return page(seen, comments[key], "comments") if find(key) else missing()

    @route("POST", r"/rest/api/3/issue/([A-Z]+-\d+)/comment")
    def add_comment(seen, key):
        if not find(key):
            return missing()
        body = (seen.body or {}).get("body")
        if not isinstance(body, dict) or body.get("type") != "doc":
            return errors(400, "Comment body is not valid", comment="Comment body is not valid")
        made = {"id": str(29000 + len(comments[key])), "author": ALICE, "body": body,
                "created": "2026-12-01T10:00:00.000+0000", "updated": "2026-12-01T10:00:00.000+0000"}
        comments[key].append(made)
        return 201, made

    @route("POST", "/rest/api/3/issue")
    def create_issue(seen):
        fields = (seen.body or {}).get("fields", {})
        if not fields.get("summary"):
            return errors(400, summary="You must specify a summary of the issue.")
        if fields.get("priority", {}).get("name") not in (None, "Highest", "High", "Medium", "Low", "Lowest"):
            return errors(400, priority="Specify the Priority (name) in the string format")
        n = 26 + len(created)
        key = f"{PROJECT}-{n}"
        issue = {"id": str(10000 + n), "key": key, "fields": {
            **fields, "status": {"name": "To Do", "statusCategory": {"key": "new"}},
            "labels": fields.get("labels", []), "components": fields.get("components", []),
            "assignee": None, "reporter": ALICE, "project": {"key": PROJECT, "id": PROJECT_ID},
            "created": "2026-12-01T10:00:00.000+0000", "updated": "2026-12-01T10:00:00.000+0000", "subtasks": [],
            "attachment": []}}
        issues[key] = issue
        comments[key] = []
        created.append(seen.body)
        return 201, {"id": issue["id"], "key": key, "self": f"/rest/api/3/issue/{issue['id']}"}

    @route("PUT", r"/rest/api/3/issue/([A-Z]+-\d+)")
    def edit_issue(seen, key):
        issue = find(key)
        if not issue:
            return missing()
        if issue["key"] == "WEB-20":
            return errors(403, "You do not have permission to edit issues in this project.")
        fields = (seen.body or {}).get("fields", {})
        if "summary" in fields and not fields["summary"]:
            return errors(400, summary="You must specify a summary of the issue.")
        issue["fields"].update(fields)
        issue["fields"]["updated"] = "2026-12-01T11:00:00.000+0000"
        return 204, b""

    def transitions_of(issue):
        here = issue["fields"]["status"]["name"]
        return [{"id": str(11 + i), "name": f"To {name}" if name != "Done" else "Close",
                 "to": {"name": name, "id": STATUS_IDS[name], "statusCategory": {"key": CATEGORIES[name]}}}
                for i, name in enumerate(CATEGORIES) if name != here]

    @route("GET", r"/rest/api/3/issue/([A-Z]+-\d+)/transitions")
    def transitions(seen, key):
        issue = find(key)
        return (200, {"transitions": transitions_of(issue)}) if issue else missing()

    @route("POST", r"/rest/api/3/issue/([A-Z]+-\d+)/transitions")
    def do_transition(seen, key):
        issue = find(key)
        if not issue:
            return missing()
        wanted = (seen.body or {}).get("transition", {}).get("id")
        chosen = [t for t in transitions_of(issue) if t["id"] == wanted]
        if not chosen:
            return errors(400, "Transition id '%s' is not valid for this issue." % wanted)
        to = chosen[0]["to"]
        issue["fields"]["status"] = {"name": to["name"], "id": to["id"], "statusCategory": to["statusCategory"]}
        return 204, b""

    @route("POST", "/rest/api/3/issueLink")
    def link(seen):
        body = seen.body or {}
        kind = body.get("type", {}).get("name")
        if kind not in link_types:
            return errors(404, f"No issue link type with name '{kind}' found.")
        inward, outward = body.get("inwardIssue", {}).get("key"), body.get("outwardIssue", {}).get("key")
        if inward not in issues or outward not in issues:
            return missing()
        links.append({"id": str(50000 + len(links)), "type": kind, "inward": inward, "outward": outward})
        return 201, b""

    @route("DELETE", r"/rest/api/3/issueLink/(\d+)")
    def unlink(seen, link_id):
        for link in links:
            if link["id"] == link_id:
                links.remove(link)
                return 204, b""
        return errors(404, "No issue link with id '%s' exists." % link_id)

    @route("DELETE", r"/rest/api/3/attachment/(\d+)")
    def delete_attachment(seen, attachment_id):
        for issue in issues.values():
            for a in issue["fields"]["attachment"]:
                if a["id"] == attachment_id:
                    issue["fields"]["attachment"].remove(a)
                    return 204, b""
        return errors(404, "The attachment with id '%s' does not exist" % attachment_id)

    def attachment(attachment_id):
        return next((a for i in issues.values() for a in i["fields"]["attachment"] if a["id"] == attachment_id), None)

    @route("GET", r"/rest/api/3/attachment/(\d+)")
    def attachment_meta(seen, attachment_id):
        found = attachment(attachment_id)
        if not found:
            return errors(404, "The attachment with id '%s' does not exist" % attachment_id)
        return 200, {**found, "self": f"{fake.url}/rest/api/3/attachment/{attachment_id}",
                     "content": f"{fake.url}/rest/api/3/attachment/content/{attachment_id}"}

    @route("GET", r"/rest/api/3/attachment/content/(\d+)")
    def attachment_content(seen, attachment_id):
        if attachment_id not in files:
            return errors(404, "The attachment with id '%s' does not exist" % attachment_id)
        return 303, b"", {"location": f"/file/{attachment_id}/binary?token=signed-{attachment_id}"}

    @fake.route("GET", r"/file/(\d+)/binary")
    def media(seen, attachment_id):
        if seen.query.get("token") != f"signed-{attachment_id}":
            return 401, {"message": "unsigned media request"}
        return 200, files[attachment_id], {"content-type": attachment(attachment_id)["mimeType"]}

    @route("POST", r"/rest/api/3/issue/([A-Z]+-\d+)/attachments")
    def upload(seen, key):
        if seen.headers.get("x-atlassian-token") != "no-check":
            return 403, "XSRF check failed"
        if key not in issues:
            return errors(404, "Issue does not exist or you do not have permission to see it.")
        made = []
        for part in multipart(seen):
            if part.name != "file":
                return errors(400, f"unexpected form field {part.name!r}")
            attachment_id = str(30001 + len(files) + 1)
            files[attachment_id] = part.data
            a = {"id": attachment_id, "filename": part.filename, "size": len(part.data),
                 "mimeType": part.content_type, "author": ALICE, "created": "2026-12-01T10:00:00.000+0000",
                 "self": f"{fake.url}/rest/api/3/attachment/{attachment_id}",
                 "content": f"{fake.url}/rest/api/3/attachment/content/{attachment_id}"}
            issues[key]["fields"]["attachment"].append({k: a[k] for k in
                                                        ("id", "filename", "size", "mimeType", "author", "created")})
            made.append(a)
        return 200, made

    @route("GET", r"/rest/api/3/project/([A-Z]+)/statuses")
    def statuses(seen, project):
        if project != PROJECT:
            return errors(404, f"No project could be found with key '{project}'.")
        kinds = [{"id": "10001", "name": "Story", "subtask": False}, {"id": "10004", "name": "Bug", "subtask": False}]
        return 200, [{**k, "statuses": [{"id": STATUS_IDS[s], "name": s, "statusCategory": {"key": c}}
                                        for s, c in CATEGORIES.items()]} for k in kinds]

    @route("GET", "/rest/api/3/user")
    def get_user(seen):
        found = [u for u in (ALICE, BOB) if u["accountId"] == seen.query.get("accountId")]
        return (200, found[0]) if found else errors(404, "Specified user does not exist or you do not have required permissions")

    @route("GET", "/rest/api/3/user/search")
    def search_users(seen):
        q = seen.query.get("query", "").lower()
        return 200, [u for u in (ALICE, BOB) if q in u["displayName"].lower()][: int(seen.query.get("maxResults", 50))]

    @route("GET", "/rest/api/3/user/assignable/search")
    def assignable(seen):
        if seen.query.get("project") != PROJECT:
            return errors(404, f"No project could be found with key '{seen.query.get('project')}'.")
        return 200, [ALICE]

    @route("GET", "/rest/api/3/field")
    def all_fields(seen):
        return 200, [
            {"id": "summary", "name": "Summary", "custom": False, "schema": {"type": "string", "system": "summary"}},
            {"id": "customfield_200", "name": "Team", "custom": True, "schema": {"type": "option", "customId": 200}},
            {"id": "customfield_100", "name": "Story Points", "custom": True, "schema": {"type": "number", "customId": 100}},
        ]

    @route("GET", f"/rest/api/3/issue/createmeta/{PROJECT}/issuetypes")
    def meta_types(seen):
        return page(seen, [{"id": "10001", "name": "Story"}, {"id": "10004", "name": "Bug"}], "issueTypes")

    @route("GET", f"/rest/api/3/issue/createmeta/{PROJECT}/issuetypes/(\\d+)")
    def meta_fields(seen, type_id):
        fields = [
            {"fieldId": "summary", "name": "Summary", "required": True, "schema": {"type": "string"}},
            {"fieldId": "customfield_200", "name": "Team", "required": False, "schema": {"type": "option"},
             "allowedValues": [{"id": "1", "value": "Red"}, {"id": "2", "value": "Blue"}]},
        ]
        return page(seen, fields if type_id == "10004" else fields[:1], "fields")

    @route("GET", f"/rest/api/3/project/{PROJECT}/version")
    def version_page(seen):
        wanted = seen.query.get("status", "").split(",")

        def status(v):
            return "archived" if v["archived"] else ("released" if v["released"] else "unreleased")
        return page(seen, [v for v in versions if not seen.query.get("status") or status(v) in wanted])

    @route("GET", f"/rest/api/3/project/{PROJECT}/versions")
    def version_list(seen):
        return 200, versions

    @route("GET", r"/rest/api/3/project/([A-Z]+)")
    def get_project(seen, project):
        if project != PROJECT:
            return errors(404, f"No project could be found with key '{project}'.")
        return 200, {"id": PROJECT_ID, "key": PROJECT, "name": "Web"}

    @route("POST", "/rest/api/3/version")
    def create_version(seen):
        body = seen.body or {}
        if body.get("projectId") != int(PROJECT_ID) or not body.get("name"):
            return errors(400, name="A version name and projectId are required.")
        made = {"id": str(40001 + len(versions)), "released": False, "archived": False, **body}
        versions.append(made)
        return 201, made

    @route("PUT", r"/rest/api/3/version/(\d+)")
    def update_version(seen, version_id):
        for v in versions:
            if v["id"] == version_id:
                v.update(seen.body or {})
                return 200, v
        return errors(404, f"Could not find version for id '{version_id}'")

    @route("GET", "/rest/agile/1.0/board")
    def boards(seen):
        found = [{"id": 3, "name": "WEB board", "type": "scrum"}] if seen.query.get("projectKeyOrId") == PROJECT else []
        return page(seen, found)

    @route("GET", r"/rest/agile/1.0/board/(\d+)/sprint")
    def board_sprints(seen, board):
        if board != "3":
            return errors(404, f"Board {board} does not exist or you do not have permission to see it.")
        states = seen.query.get("state", "").split(",")
        found = [s for s in sprints if not seen.query.get("state") or s["state"] in states]
        return page(seen, found, total=False)

    @route("POST", r"/rest/agile/1.0/sprint/(\d+)/issue")
    def move_to_sprint(seen, sprint):
        if int(sprint) not in {s["id"] for s in sprints}:
            return errors(404, f"Sprint with id {sprint} does not exist.")
        keys = (seen.body or {}).get("issues", [])
        if not keys or any(k not in issues for k in keys):
            return errors(400, "Issues must exist and be at most 50.")
        sprint_issues.setdefault(int(sprint), []).extend(keys)
        return 204, b""

    # Structure 12's forest: rows (id, depth, item[:semantic]) in order.
    structures = [{"id": 12, "name": "Roadmap", "description": "Q4 plan", "readOnly": False, "owner": "user:alice"}]
    forest_rows = [[500, 0, "10001"], [501, 1, "10002"], [502, 1, "5/240"], [503, 0, "10003:3"]]
    forest_version = {"signature": -1659607419, "version": 7}

    def formula():
        return ",".join(f"{r}:{d}:{i}" for r, d, i in forest_rows)

    def unknown_structure(sid):
        return 404, {"message": f"Structure {sid} does not exist or is not accessible"}

    def subtree(row_id):
        """The index range [start, end) of a row and its descendants."""
        start = next((n for n, r in enumerate(forest_rows) if r[0] == row_id), None)
        if start is None:
            return None
        end = start + 1
        while end < len(forest_rows) and forest_rows[end][1] > forest_rows[start][1]:
            end += 1
        return start, end

    def position(under, after):
        """Where rows placed by (under, after) go, and their depth."""
        depth = 0
        if under:
            found = subtree(under)
            if found is None:
                return None
            depth = forest_rows[found[0]][1] + 1
            at = found[0] + 1
        else:
            at = 0
        if after:
            found = subtree(after)
            if found is None:
                return None
            at = found[1]
        return at, depth

    @route("GET", "/rest/structure/2.0/forest/latest")
    def forest(seen):
        try:
            spec = json.loads(seen.query.get("s", ""))
        except ValueError:
            return 400, {"message": "Cannot parse forest specification"}
        if spec != {"structureId": 12}:
            return unknown_structure(spec.get("structureId"))
        return 200, {"spec": spec, "formula": formula(),
                     "itemTypes": {"5": "com.almworks.jira.structure:type-folder"}, "version": dict(forest_version)}

    @route("GET", "/rest/structure/2.0/structure")
    def list_structures(seen):
        return 200, {"structures": structures}

    @route("POST", "/rest/structure/2.0/structure")
    def create_structure(seen):
        body = seen.body or {}
        if not body.get("name"):
            return 400, {"message": "Structure name must not be empty"}
        made = {"id": 12 + len(structures), "readOnly": False, "owner": "user:alice", **body}
        structures.append(made)
        return 200, made

    @route("POST", "/rest/structure/2.0/forest/update")
    def update_forest(seen):
        body = seen.body or {}
        if body.get("spec") != {"structureId": 12}:
            return unknown_structure((body.get("spec") or {}).get("structureId"))
        if body.get("version") != forest_version:
            return 409, {"message": "The forest has changed; reload it and retry"}
        results = []
        for action in body.get("actions", []):
            kind = action.get("action")
            if kind == "add":
                placed = position(action.get("under", 0), action.get("after", 0))
                if placed is None:
                    return 400, {"message": "Invalid forest coordinates"}
                at, depth = placed
                added = [part.split(":", 2) for part in action["forest"].split(",")]
                new_ids = [max(r[0] for r in forest_rows) + 1 + n for n in range(len(added))]
                forest_rows[at:at] = [[new, depth + int(d), item] for new, (_, d, item) in zip(new_ids, added)]
                results.append({"oldRowIds": [int(t) for t, _, _ in added], "newRowIds": new_ids})
            elif kind in ("move", "remove"):
                moved = []
                for row in (int(r) for r in str(action.get("rows", "")).split(",")):
                    found = subtree(row)
                    if found is None:
                        return 400, {"message": f"Row {row} is not in the structure"}
                    moved.append(forest_rows[found[0]:found[1]])
                    del forest_rows[found[0]:found[1]]
                if kind == "move":
                    placed = position(action.get("under", 0), action.get("after", 0))
                    if placed is None:
                        return 400, {"message": "Invalid forest coordinates"}
                    at, depth = placed
                    flat = [[r, depth + d - block[0][1], i] for block in moved for r, d, i in block]
                    forest_rows[at:at] = flat
                results.append({})
            else:
                return 400, {"message": f"Unknown action {kind!r}"}
        old = dict(forest_version)
        forest_version["version"] += 1
        return 200, {"spec": body["spec"], "oldVersion": old, "newVersion": dict(forest_version), "itemTypes": {},
                     "actionResults": results}

    @route("POST", "/rest/structure/2.0/value")
    def values(seen):
        responses = []
        for request in (seen.body or {}).get("requests", []):
            if request.get("forestSpec") != {"structureId": 12}:
                return unknown_structure((request.get("forestSpec") or {}).get("structureId"))
            items = {r: i.split(":")[0] for r, _, i in forest_rows}

            def value(row, attribute):
                issue = next((x for x in issues.values() if x["id"] == items.get(row)), None)
                if attribute["id"] == "expr":
                    return "3" if issue else ""
                return issue["fields"].get(attribute["id"]) if issue else None
            responses.append({"forestSpec": request["forestSpec"], "rows": request["rows"],
                              "data": [{"attribute": a, "values": [value(r, a) for r in request["rows"]]}
                                       for a in request["attributes"]]})
        return 200, {"responses": responses, "itemTypes": {}}

    fake.issues, fake.comments, fake.links, fake.versions, fake.sprint_issues = issues, comments, links, versions, sprint_issues
    fake.created = created
    fake.forest_rows = forest_rows
    return fake.start()
