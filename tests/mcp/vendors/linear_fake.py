"""A loopback fake of Linear's GraphQL API (https://linear.app/developers),
following its documented shapes: `POST /graphql` with `{query, variables}`,
a personal API key in `Authorization` with no `Bearer`, Relay connections
(`nodes`, `pageInfo { hasNextPage endCursor }`, `first`/`after`), filters
with comparators (`eq`, `in`, `nin`, `eqIgnoreCase`, `containsIgnoreCase`,
`some`, `and`/`or`), mutation payloads with `success`, and errors in the
body: `errors[].message` with `extensions.code` (`AUTHENTICATION_ERROR`,
`FORBIDDEN`, `INVALID_INPUT`, `RATELIMITED` with HTTP 400) and
`extensions.userPresentableMessage`. A rate limit carries Linear's budget
headers: `X-RateLimit-Requests-Limit` / `-Remaining: 0` / `-Reset` (Unix
milliseconds), and the complexity budget's, still left.

It answers operations by name (the plugin's documents name each one), and
evaluates the filters and pagination it is sent."""

import time

from fake import TOKEN, Fake

TEAM = {"id": "team-eng-uuid", "key": "ENG", "name": "Engineering"}
STATES = [
    {"id": "st-backlog", "name": "Backlog", "type": "backlog", "position": 0},
    {"id": "st-todo", "name": "Todo", "type": "unstarted", "position": 1},
    {"id": "st-doing", "name": "In Progress", "type": "started", "position": 2},
    {"id": "st-done", "name": "Done", "type": "completed", "position": 3},
    {"id": "st-canceled", "name": "Canceled", "type": "canceled", "position": 4},
]
LABELS = [{"id": "lb-bug", "name": "bug"}, {"id": "lb-feature", "name": "feature"}]
USERS = [
    {"id": "u-ada", "name": "Ada Lovelace", "displayName": "ada", "email": "ada@acme.test", "active": True},
    {"id": "u-alan", "name": "Alan Turing", "displayName": "alan", "email": "alan@acme.test", "active": True},
]
CYCLES = [
    {"id": "cy-7", "number": 7, "name": "Cycle 7", "startsAt": "2026-11-16", "endsAt": "2026-11-30",
     "isActive": False, "isFuture": False, "isPast": True},
    {"id": "cy-8", "number": 8, "name": "Cycle 8", "startsAt": "2026-11-30", "endsAt": "2026-12-14",
     "isActive": True, "isFuture": False, "isPast": False},
    {"id": "cy-9", "number": 9, "name": "Cycle 9", "startsAt": "2026-12-14", "endsAt": "2026-12-28",
     "isActive": False, "isFuture": True, "isPast": False},
]
COMPARATORS = {
    "eq": lambda v, x: v == x,
    "neq": lambda v, x: v != x,
    "in": lambda v, x: v in x,
    "nin": lambda v, x: v not in x,
    "eqIgnoreCase": lambda v, x: isinstance(v, str) and v.lower() == x.lower(),
    "containsIgnoreCase": lambda v, x: isinstance(v, str) and x.lower() in v.lower(),
}


def matches(obj, filt):
    """Whether `obj` (Linear's shape) passes filter `filt`."""
    for key, want in (filt or {}).items():
        if key == "and":
            ok = all(matches(obj, f) for f in want)
        elif key == "or":
            ok = any(matches(obj, f) for f in want)
        elif key in COMPARATORS:
            ok = COMPARATORS[key](obj, want)
        elif key == "some":
            ok = any(matches(n, want) for n in (obj or {}).get("nodes", []))
        elif key == "isMe":
            ok = (obj or {}).get("id") == "u-ada"
            ok = ok == want["eq"]
        else:
            ok = obj is not None and matches(obj.get(key) if isinstance(obj, dict) else None, want)
        if not ok:
            return False
    return True


def error(message, code, status=200, detail=None, **ext):
    extensions = {"code": code, "type": code.lower().replace("_", " "), **ext}
    if detail:
        extensions["userPresentableMessage"] = detail
    return status, {"errors": [{"message": message, "extensions": extensions}]}


def connection(items, variables):
    first, after = variables.get("first", 50), variables.get("after")
    start = int(after) if after else 0
    chunk = items[start:start + first]
    end = start + len(chunk)
    return {"nodes": chunk, "pageInfo": {"hasNextPage": end < len(items), "endCursor": str(end) if chunk else None}}


def linear(delay_s=0.0):
    fake = Fake("Linear", delay_s)
    fake.revoked = False
    # The next answers that are Linear rate limits: (HTTP status, seconds
    # until the requests budget resets).
    fake.rate_limits = []
    state = {s["id"]: {**s, "team": {"key": "ENG"}} for s in STATES}
    issues = {}
    for n in range(1, 31):
        key = f"ENG-{n}"
        issues[key] = {
            "id": f"uuid-{n}", "identifier": key, "title": f"Issue {n}", "description": f"Body of {n}",
            "priority": n % 5, "priorityLabel": ["No priority", "Urgent", "High", "Medium", "Low"][n % 5],
            "estimate": None, "url": f"https://linear.app/acme/issue/{key}",
            "createdAt": f"2026-11-{n:02d}T10:00:00.000Z", "updatedAt": f"2026-11-{n:02d}T12:00:00.000Z",
            "state": state["st-done" if n % 4 == 0 else "st-todo"],
            "assignee": USERS[n % 2], "labels": {"nodes": [LABELS[0]] if n % 3 == 0 else []},
            "team": TEAM, "project": None, "parent": None, "cycle": None,
        }
    # Newest first by creation time, Linear's order for lists.
    comments = {k: [{"id": f"c-{k}-{c}", "body": f"Comment {c} on {k}",
                     "createdAt": f"2026-11-20T1{c}:00:00.000Z", "user": USERS[c % 2]} for c in (1, 0)]
                for k in issues}
    relations = {"ENG-2": [{"id": "rel-1", "type": "blocks", "from": "ENG-2", "to": "ENG-3"}]}
    fake.issues, fake.comments, fake.relations = issues, comments, relations
    fake.forbidden = {"ENG-99"}

    def find(key):
        return issues.get(key) or next((i for i in issues.values() if i["id"] == key), None)

    def not_found():
        return 200, {"data": None, "errors": [{"message": "Entity not found: Issue",
                                                "extensions": {"code": "INVALID_INPUT", "type": "invalid input",
                                                               "userPresentableMessage": "Could not find referenced Issue."}}]}

    def guarded(handler):
        def serve(seen, variables):
            if seen.headers.get("authorization") != TOKEN or fake.revoked:
                return error("Authentication required, not authenticated", "AUTHENTICATION_ERROR", 400,
                             "You need to authenticate to access this operation.")
            if fake.rate_limits:
                status, wait_s = fake.rate_limits.pop(0)
                reset = str(int((time.time() + wait_s) * 1000))
                headers = {"x-ratelimit-requests-limit": "2500", "x-ratelimit-requests-remaining": "0",
                           "x-ratelimit-requests-reset": reset, "x-ratelimit-complexity-limit": "3000000",
                           "x-ratelimit-complexity-remaining": "2999000", "x-ratelimit-complexity-reset": reset}
                return (*error("Rate limit exceeded", "RATELIMITED", status, statusCode=429), headers)
            return handler(seen, variables)
        return serve

    def with_relations(issue):
        key = issue["identifier"]
        out = [r for rs in relations.values() for r in rs if r["from"] == key]
        inv = [r for rs in relations.values() for r in rs if r["to"] == key]
        children = [i for i in issues.values() if (i["parent"] or {}).get("identifier") == key]
        return {**issue,
                "children": {"nodes": [{"identifier": c["identifier"], "title": c["title"]} for c in children]},
                "relations": {"nodes": [{"id": r["id"], "type": r["type"], "relatedIssue": {
                    "identifier": r["to"], "title": issues[r["to"]]["title"]}} for r in out]},
                "inverseRelations": {"nodes": [{"id": r["id"], "type": r["type"], "issue": {
                    "identifier": r["from"], "title": issues[r["from"]]["title"]}} for r in inv]}}

    def list_issues(seen, v):
        order = "createdAt" if v.get("orderBy") == "createdAt" else "updatedAt"
        found = sorted((i for i in issues.values() if matches(i, v.get("filter"))), key=lambda i: i[order],
                       reverse=True)
        return 200, {"data": {"issues": connection(found, v)}}

    def one(seen, v):
        if v["id"] in fake.forbidden:
            return error("Forbidden", "FORBIDDEN", 200, "You don't have access to this issue.")
        issue = find(v["id"])
        return (200, {"data": {"issue": with_relations(issue)}}) if issue else not_found()

    def issue_comments(seen, v):
        issue = find(v["id"])
        if not issue:
            return not_found()
        return 200, {"data": {"issue": {"comments": connection(comments[issue["identifier"]], v)}}}

    def listing(field, items):
        def serve(seen, v):
            found = [x for x in items() if matches(x, v.get("filter"))]
            return 200, {"data": {field: connection(found, {"first": v.get("first", 50)})}}
        return serve

    def apply(issue, fields):
        for k, val in fields.items():
            if k == "stateId":
                issue["state"] = state[val]
            elif k == "labelIds":
                issue["labels"] = {"nodes": [l for l in LABELS if l["id"] in val]}
            elif k == "assigneeId":
                issue["assignee"] = next((u for u in USERS if u["id"] == val), None)
            elif k == "parentId":
                issue["parent"] = None if val is None else {"identifier": find(val)["identifier"]}
            elif k == "cycleId":
                issue["cycle"] = next(c for c in CYCLES if c["id"] == val)
            elif k in ("title", "description", "priority", "estimate", "projectId"):
                issue[k] = val
        issue["updatedAt"] = "2026-12-01T09:00:00.000Z"

    def create(seen, v):
        fields = v["input"]
        if not fields.get("title", "").strip():
            return error("Argument Validation Error", "INVALID_INPUT", 200, "Title must not be empty.")
        n = max(int(k.split("-")[1]) for k in issues) + 1
        key = f"ENG-{n}"
        issues[key] = {"id": f"uuid-{n}", "identifier": key, "title": "", "description": None, "priority": 0,
                       "priorityLabel": "No priority", "estimate": None, "url": f"https://linear.app/acme/issue/{key}",
                       "createdAt": "2026-12-01T09:00:00.000Z", "updatedAt": "", "state": state["st-backlog"],
                       "assignee": None, "labels": {"nodes": []}, "team": TEAM, "project": None, "parent": None,
                       "cycle": None}
        apply(issues[key], fields)
        comments[key] = []
        return 200, {"data": {"issueCreate": {"success": True, "issue": issues[key]}}}

    def update(seen, v):
        issue = find(v["id"])
        if not issue:
            return not_found()
        apply(issue, v["input"])
        return 200, {"data": {"issueUpdate": {"success": True, "issue": issue}}}

    def comment(seen, v):
        issue = find(v["input"]["issueId"])
        if not issue:
            return not_found()
        c = {"id": f"c-new-{len(comments[issue['identifier']])}", "body": v["input"]["body"],
             "createdAt": "2026-12-01T09:30:00.000Z", "user": USERS[0], "url": issue["url"] + "#comment"}
        comments[issue["identifier"]].insert(0, c)
        return 200, {"data": {"commentCreate": {"success": True, "comment": c}}}

    def relate(seen, v):
        a, b = find(v["input"]["issueId"]), find(v["input"]["relatedIssueId"])
        rel = {"id": f"rel-{sum(map(len, relations.values())) + 1}", "type": v["input"]["type"],
               "from": a["identifier"], "to": b["identifier"]}
        relations.setdefault(a["identifier"], []).append(rel)
        return 200, {"data": {"issueRelationCreate": {"success": True, "issueRelation": {"id": rel["id"], "type": rel["type"]}}}}

    def unrelate(seen, v):
        for rs in relations.values():
            rs[:] = [r for r in rs if r["id"] != v["id"]]
        return 200, {"data": {"issueRelationDelete": {"success": True}}}

    def issue_id(seen, v):
        issue = find(v["id"])
        return (200, {"data": {"issue": {"id": issue["id"]}}}) if issue else not_found()

    ops = {
        "Issues": list_issues, "Issue": one, "IssueComments": issue_comments, "IssueId": issue_id,
        "WorkflowStates": listing("workflowStates", lambda: list(state.values())),
        "Users": listing("users", lambda: USERS),
        "Cycles": listing("cycles", lambda: [{**c, "team": {"key": "ENG"}} for c in CYCLES]),
        "Teams": listing("teams", lambda: [TEAM]),
        "IssueLabels": listing("issueLabels", lambda: LABELS),
        "IssueCreate": create, "IssueUpdate": update, "CommentCreate": comment,
        "IssueRelationCreate": relate, "IssueRelationDelete": unrelate,
    }
    fake.graphql("/graphql", {name: guarded(h) for name, h in ops.items()})
    return fake.start()
