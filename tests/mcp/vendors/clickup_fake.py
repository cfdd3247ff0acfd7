"""A loopback fake of ClickUp's API v2 (https://developer.clickup.com), for
one list, following its documented shapes: tasks of a list in pages of 100
(`page` from 0, `last_page`), `include_closed`, `statuses[]`, `tags[]`;
a task; comments 25 at a time newest first (`start`, `start_id` for older);
create (`POST /list/{id}/task`), update (`PUT /task/{id}`, assignees as
`{add, rem}`), tags (`POST`/`DELETE /task/{id}/tag/{name}`), custom field
values (`POST /task/{id}/field/{field_id}`), comments; the list's statuses,
members and fields; attachments on the task (`attachments`), uploaded by
`POST /task/{id}/attachment` (multipart, the file in `attachment`) and
served from their `url` (ClickUp's attachment host; here the same origin,
unauthenticated as signed links are); the Sprints ClickApp's sprint folder, whose lists are
the sprints (`GET /folder/{id}/list?archived=`, lists with `start_date` and
`due_date` in Unix milliseconds), and adding a task to another list
(`POST /list/{id}/task/{task_id}`, Tasks in Multiple Lists). Errors are
`{"err", "ECODE"}`: 401 `Token invalid` (`OAUTH_019`), 404 task not found,
400 on a bad status."""

import time

from fake import TOKEN, Fake, multipart

LIST = "901"
# The list whose tasks are the epics (a convention the plugin is configured with).
EPICS = "902"
STATUSES = [{"status": "to do", "type": "open", "orderindex": 0}, {"status": "in progress", "type": "custom", "orderindex": 1},
            {"status": "done", "type": "closed", "orderindex": 2}]
SPRINT_FOLDER = "9077"
DAY_MS = 86_400_000
MEMBERS = [{"id": 11, "username": "ada", "email": "ada@acme.test"},
           {"id": 12, "username": "alan", "email": "alan@acme.test"}]


def clickup(delay_s=0.0):
    fake = Fake("ClickUp", delay_s)
    tasks = {}
    for n in range(1, 151):
        tid = f"86a{n:03d}"
        tasks[tid] = {"id": tid, "custom_id": None, "name": f"Task {n}", "text_content": f"Body of {n}",
                      "status": STATUSES[2 if n % 5 == 0 else 0], "priority": {"priority": "normal", "id": "3"},
                      "tags": [{"name": "bug"}] if n % 3 == 0 else [], "assignees": [MEMBERS[n % 2]],
                      "parent": None, "points": None, "url": f"https://app.clickup.com/t/{tid}",
                      "date_created": str(1764000000000 + n * 1000), "date_updated": str(1764500000000 + n * 1000),
                      "custom_fields": [], "list": {"id": LIST}, "linked_tasks": [], "dependencies": []}
    comments = {t: [{"id": f"{t}-c{i}", "comment_text": f"Comment {i} on {t}", "user": MEMBERS[i % 2],
                     "date": str(1764600000000 + i * 1000)} for i in range(30 if t == "86a002" else 2)]
                for t in tasks}
    # 86a020 waits on 86a021; 86a020 is linked to 86a022.
    dep = {"task_id": "86a020", "depends_on": "86a021", "type": 1}
    tasks["86a020"]["dependencies"] = tasks["86a021"]["dependencies"] = [dep]
    link = {"task_id": "86a020", "link_id": "86a022"}
    tasks["86a020"]["linked_tasks"] = tasks["86a022"]["linked_tasks"] = [link]
    files = {"f1a2-shot.png": b"\x89PNG\r\n\x1a\nclickup"}
    tasks["86a007"]["attachments"] = [
        {"id": "f1a2-shot.png", "date": "1764700000000", "title": "shot.png", "extension": "png",
         "mimetype": "image/png", "size": len(files["f1a2-shot.png"]), "user": MEMBERS[0], "version": "0",
         "url": None}]
    for n, (name, done) in enumerate([("Checkout revamp", False), ("Search v2", False), ("Billing", True)], 1):
        tid = f"86e{n:03d}"
        tasks[tid] = {**tasks["86a001"], "id": tid, "name": f"Epic: {name}", "text_content": f"Why {name}",
                      "status": STATUSES[2 if done else 1], "tags": [], "assignees": [MEMBERS[0]],
                      "url": f"https://app.clickup.com/t/{tid}", "date_updated": str(1764400000000 + n * 1000),
                      "list": {"id": EPICS}}
        comments[tid] = []
    fake.tasks, fake.comments, fake.files = tasks, comments, files
    fake.revoked = False

    def guarded(handler):
        def serve(seen, *groups):
            if seen.headers.get("authorization") != TOKEN or fake.revoked:
                return 401, {"err": "Token invalid", "ECODE": "OAUTH_019"}
            return handler(seen, *groups)
        return serve

    def route(method, pattern):
        def register(handler):
            fake.route(method, pattern)(guarded(handler))
            return handler
        return register

    def missing():
        return 404, {"err": "Task not found, deleted", "ECODE": "ITEM_013"}

    @route("GET", f"/list/({LIST}|{EPICS})/task")
    def list_tasks(seen, list_id):
        q = seen.query
        found = [t for t in tasks.values() if t["list"]["id"] == list_id
                 and (q.get("include_closed") == "true" or t["status"]["type"] != "closed")]
        if "statuses[]" in q:
            found = [t for t in found if t["status"]["status"] == q["statuses[]"]]
        if "tags[]" in q:
            found = [t for t in found if q["tags[]"] in [g["name"] for g in t["tags"]]]
        key = "date_created" if q.get("order_by") == "created" else "date_updated"
        found.sort(key=lambda t: int(t[key]), reverse=q.get("reverse") != "true")
        page = int(q.get("page", 0))
        chunk = found[page * 100:(page + 1) * 100]
        return 200, {"tasks": chunk, "last_page": (page + 1) * 100 >= len(found)}

    @route("GET", "/task/(\\w+)")
    def get_task(seen, tid):
        return (200, tasks[tid]) if tid in tasks else missing()

    @route("GET", "/task/(\\w+)/comment")
    def list_comments(seen, tid):
        if tid not in tasks:
            return missing()
        newest = sorted(comments[tid], key=lambda c: int(c["date"]), reverse=True)
        if "start" in seen.query:
            newest = [c for c in newest if int(c["date"]) < int(seen.query["start"])]
        return 200, {"comments": newest[:25]}

    @route("POST", "/task/(\\w+)/comment")
    def add_comment(seen, tid):
        if tid not in tasks:
            return missing()
        c = {"id": f"{tid}-c{len(comments[tid])}", "comment_text": seen.body["comment_text"], "user": MEMBERS[0],
             "date": "1764900000000"}
        comments[tid].append(c)
        return 200, {"id": c["id"], "hist_id": "h1", "date": int(c["date"])}

    def apply(t, body):
        for k, v in body.items():
            if k == "status":
                match = [s for s in STATUSES if s["status"] == v]
                if not match:
                    return 400, {"err": "Status does not exist", "ECODE": "CRTSK_001"}
                t["status"] = match[0]
            elif k == "name":
                t["name"] = v
            elif k == "markdown_content":
                t["text_content"] = v
            elif k == "priority":
                t["priority"] = {"priority": ["urgent", "high", "normal", "low"][v - 1], "id": str(v)}
            elif k == "assignees":
                ids = v if isinstance(v, list) else [a["id"] for a in t["assignees"] if a["id"] not in v["rem"]] + v["add"]
                t["assignees"] = [m for m in MEMBERS if m["id"] in ids]
            elif k == "tags":
                t["tags"] = [{"name": g} for g in v]
            elif k in ("parent", "points"):
                t[k] = v
        t["date_updated"] = "1764900000000"
        return None

    @route("POST", f"/list/({LIST}|{EPICS})/task")
    def create(seen, list_id):
        if not seen.body.get("name"):
            return 400, {"err": "Task name invalid", "ECODE": "INPUT_005"}
        tid = f"86b{len(tasks):03d}"
        t = {**tasks["86a001"], "id": tid, "tags": [], "assignees": [], "url": f"https://app.clickup.com/t/{tid}",
             "status": STATUSES[0], "custom_fields": [], "list": {"id": list_id}}
        bad = apply(t, seen.body)
        if bad:
            return bad
        t["custom_fields"] = seen.body.get("custom_fields", [])
        tasks[tid], comments[tid] = t, []
        return 200, t

    @route("PUT", "/task/(\\w+)")
    def update(seen, tid):
        if tid not in tasks:
            return missing()
        return apply(tasks[tid], seen.body) or (200, tasks[tid])

    @route("POST", "/task/(\\w+)/tag/(\\w+)")
    def add_tag(seen, tid, tag):
        tasks[tid]["tags"].append({"name": tag})
        return 200, {}

    @route("DELETE", "/task/(\\w+)/tag/(\\w+)")
    def remove_tag(seen, tid, tag):
        tasks[tid]["tags"] = [g for g in tasks[tid]["tags"] if g["name"] != tag]
        return 200, {}

    @route("POST", "/task/(\\w+)/field/([\\w-]+)")
    def set_field(seen, tid, field):
        tasks[tid]["custom_fields"] = [f for f in tasks[tid]["custom_fields"] if f["id"] != field] + [
            {"id": field, "name": field, "value": seen.body["value"]}]
        return 200, {}

    @route("POST", "/task/(\\w+)/link/(\\w+)")
    def add_link(seen, a, b):
        entry = {"task_id": a, "link_id": b}
        tasks[a]["linked_tasks"].append(entry)
        tasks[b]["linked_tasks"].append(entry)
        return 200, {"task": tasks[a]}

    @route("DELETE", "/task/(\\w+)/link/(\\w+)")
    def remove_link(seen, a, b):
        for t in (a, b):
            tasks[t]["linked_tasks"] = [l for l in tasks[t]["linked_tasks"] if {l["task_id"], l["link_id"]} != {a, b}]
        return 200, {"task": tasks[a]}

    @route("POST", "/task/(\\w+)/dependency")
    def add_dependency(seen, a):
        waiting, on = (a, seen.body["depends_on"]) if "depends_on" in seen.body else (seen.body["dependency_of"], a)
        entry = {"task_id": waiting, "depends_on": on, "type": 1}
        tasks[waiting]["dependencies"].append(entry)
        tasks[on]["dependencies"].append(entry)
        return 200, {}

    @route("DELETE", "/task/(\\w+)/dependency")
    def remove_dependency(seen, a):
        q = seen.query
        waiting, on = (a, q["depends_on"]) if "depends_on" in q else (q["dependency_of"], a)
        for t in (waiting, on):
            tasks[t]["dependencies"] = [d for d in tasks[t]["dependencies"]
                                        if (d["task_id"], d["depends_on"]) != (waiting, on)]
        return 200, {}

    @route("POST", "/task/(\\w+)/attachment")
    def upload(seen, tid):
        if tid not in tasks:
            return missing()
        parts = {p.name: p for p in multipart(seen)}
        if "attachment" not in parts:
            return 400, {"err": "No attachment supplied", "ECODE": "UPLOAD_002"}
        part = parts["attachment"]
        aid = f"a{len(files)}-{part.filename}"
        files[aid] = part.data
        made = {"id": aid, "version": "0", "date": 1764800000000, "title": part.filename,
                "extension": part.filename.rsplit(".", 1)[-1], "url": f"{fake.url}/attachments/{aid}"}
        tasks[tid].setdefault("attachments", []).append(
            {**made, "mimetype": part.content_type, "size": len(part.data), "user": MEMBERS[1]})
        return 200, made

    @fake.route("GET", "/attachments/([\\w.-]+)")
    def attachment_file(seen, aid):
        return (200, files[aid], {"content-type": "application/octet-stream"}) if aid in files else (404, "Not Found")

    @route("GET", f"/list/{LIST}")
    def get_list(seen):
        return 200, {"id": LIST, "name": "Sprint backlog", "statuses": STATUSES}

    @route("GET", f"/list/({LIST}|{EPICS})/member")
    def members(seen, list_id):
        return 200, {"members": MEMBERS}

    @route("GET", f"/list/{LIST}/field")
    def fields(seen):
        return 200, {"fields": [
            {"id": "cf-team", "name": "Team", "type": "drop_down",
             "type_config": {"options": [{"id": "o1", "name": "Red", "orderindex": 0}, {"id": "o2", "name": "Blue", "orderindex": 1}]}},
            {"id": "cf-est", "name": "Estimate", "type": "currency", "type_config": {}}]}

    # Sprints around today: two done (one archived), the current, the next.
    now = int(time.time() * 1000)
    sprints = [(9010, "Sprint 5", -35, -21, True), (9011, "Sprint 6", -21, -7, False),
               (9012, "Sprint 7", -7, 7, False), (9013, "Sprint 8", 7, 21, False)]
    sprint_lists = {str(i): {"id": str(i), "name": name, "orderindex": i - 9010, "content": "", "status": None,
                             "priority": None, "assignee": None, "task_count": 0,
                             "start_date": str(now + start * DAY_MS), "due_date": str(now + due * DAY_MS),
                             "folder": {"id": SPRINT_FOLDER, "name": "Sprints", "hidden": False, "access": True},
                             "space": {"id": "790", "name": "Engineering", "access": True}, "archived": archived,
                             "override_statuses": False, "permission_level": "create"}
                    for i, name, start, due, archived in sprints}
    fake.sprint_lists = sprint_lists

    @route("GET", "/folder/(\\d+)/list")
    def folder_lists(seen, folder):
        if folder != SPRINT_FOLDER:
            return 404, {"err": "Folder not found", "ECODE": "ITEM_017"}
        archived = seen.query.get("archived") == "true"
        return 200, {"lists": [l for l in sprint_lists.values() if l["archived"] == archived]}

    @route("POST", "/list/(\\d+)/task/(\\w+)")
    def add_to_list(seen, list_id, tid):
        if list_id not in sprint_lists:
            return 404, {"err": "List not found", "ECODE": "ITEM_015"}
        if tid not in tasks:
            return missing()
        locations = tasks[tid].setdefault("locations", [])
        if list_id in {l["id"] for l in locations}:
            return 400, {"err": "Task already in list", "ECODE": "ITEM_138"}
        locations.append({"id": list_id, "name": sprint_lists[list_id]["name"]})
        sprint_lists[list_id]["task_count"] += 1
        return 200, {}

    fake.start()
    tasks["86a007"]["attachments"][0]["url"] = f"{fake.url}/attachments/f1a2-shot.png"
    return fake
