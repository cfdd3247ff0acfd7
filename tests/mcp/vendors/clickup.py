"""ClickUp end to end: `toolhost serve` with clickup.wasm alone (no `[bind]`)
against the loopback fake of ClickUp's API v2 (clickup_fake.py), through the
Python MCP client. Every tool's request is checked exactly (method, path,
query, body, the token the host injected with no `Bearer`); results and
errors; pages of 100 and comment pages; rate limits; the tasks → task →
comments prefetch, never a write, never stale after one.

    clickup.py --toolhost PATH --plugin clickup.wasm
"""

import argparse
import base64

from fake import SPECULATION, TOKEN, blob, call, check, multipart, provider_session, structured, text
from driver import run, wait_until
from clickup_fake import EPICS, LIST, SPRINT_FOLDER, clickup

parser = argparse.ArgumentParser()
parser.add_argument("--toolhost", required=True)
parser.add_argument("--plugin", required=True)
opts = parser.parse_args()

CONFIG = {
    "list_id": LIST,
    "sprint_folder_id": SPRINT_FOLDER,
    "epics_list_id": EPICS,
    "statuses": ["to do", "in progress", "done", "blocked"],  # "blocked": stale config, the list has none
    "custom_fields": [
        {"id": "cf-team", "name": "Team", "type": "drop_down",
         "options": [{"name": "Red", "orderindex": 0}, {"name": "Blue", "orderindex": 1}]},
        {"id": "cf-est", "name": "Estimate", "type": "currency"},
    ],
}
BASE = {"archived": "false", "subtasks": "true", "order_by": "updated"}


def expect(fake, method, path, query=None, body=None):
    return fake.expect(method, path, query=query, body=body, auth=TOKEN)


def keys(result):
    return [i["key"] for i in structured(result)["issues"]]


def asked(fake):
    return [(s.method, s.path) for s in fake.requests()]


async def tools(client, fake):
    names = {t.name for t in (await client.list_tools()).tools}
    want = {"get_issues", "get_issue", "get_issue_comments", "get_available_statuses", "get_users",
            "get_custom_fields", "create_issue", "update_issue", "add_issue_comment", "get_issue_relations",
            "link_issues", "unlink_issues", "get_board_sprints", "assign_to_sprint",
            "get_epics", "get_epic", "create_epic", "update_epic"}
    check(want <= names, f"served: {sorted(names)}")

    result = await call(client, "get_issues", {"limit": 5})
    expect(fake, "GET", f"/list/{LIST}/task", query={**BASE, "page": "0"})
    check(keys(result) == ["86a149", "86a148", "86a147", "86a146", "86a144"], keys(result))
    check(structured(result)["has_more"] is True, "more")

    fake.clear()
    result = await call(client, "get_issues", {"limit": 10, "offset": 95, "sort": "created_at", "sort_order": "asc"})
    pages = [s.query for s in fake.requests("GET")]
    query = {**BASE, "order_by": "created", "reverse": "true"}
    check(pages == [{**query, "page": "0"}, {**query, "page": "1"}], f"pages: {pages}")
    check(len(keys(result)) == 10 and keys(result)[0] == "86a119", keys(result))

    result = await call(client, "get_issues", {"state": "closed", "labels": ["bug"], "limit": 50})
    expect(fake, "GET", f"/list/{LIST}/task", query={**BASE, "include_closed": "true", "tags[]": "bug", "page": "0"})
    check(keys(result) == [f"86a{n:03d}" for n in range(150, 0, -15)], keys(result))

    result = await call(client, "get_issue", {"key": "86a012"})
    expect(fake, "GET", "/task/86a012", query={"include_subtasks": "true"})
    value = structured(result)
    check((value["title"], value["status"], value["labels"], value["description"])
          == ("Task 12", "to do", ["bug"], "Body of 12"), value)
    result = await call(client, "get_issue", {"key": "86zzz9"}, error=True)
    check("ClickUp get_issue: not found" in text(result) and "Task not found" in text(result), text(result))

    fake.clear()
    result = await call(client, "get_issue_comments", {"key": "86a002", "limit": 3})
    queries = [s.query for s in fake.requests("GET", "/task/86a002/comment")]
    check(queries == [{}, {"start": "1764600005000", "start_id": "86a002-c5"}], f"older comments: {queries}")
    check([c["body"] for c in structured(result)["comments"]] == [f"Comment {i} on 86a002" for i in range(3)]
          and structured(result)["has_more"] is True, structured(result))

    result = await call(client, "get_available_statuses", {})
    expect(fake, "GET", f"/list/{LIST}", query={})
    check([s["name"] for s in structured(result)["statuses"]] == ["to do", "in progress", "done"], structured(result))
    result = await call(client, "get_users", {"search": "ad"})
    expect(fake, "GET", f"/list/{LIST}/member", query={})
    check(structured(result)["users"] == [{"id": 11, "username": "ada", "email": "ada@acme.test"}], structured(result))
    result = await call(client, "get_custom_fields", {})
    expect(fake, "GET", f"/list/{LIST}/field", query={})
    check(structured(result)["fields"][0] == {"id": "cf-team", "name": "Team", "type": "drop_down",
                                              "options": ["Red", "Blue"]}, structured(result))

    # Writes, with the enricher's priority and custom-field mapping.
    fake.clear()
    result = await call(client, "create_issue", {"title": "New", "description": "Why", "priority": "high",
                                                 "status": "in progress", "labels": ["bug"], "assignees": ["alan"],
                                                 "cf_team": "Blue", "cf_estimate": 3.5})
    check(asked(fake) == [("GET", f"/list/{LIST}/member"), ("POST", f"/list/{LIST}/task")], asked(fake))
    expect(fake, "POST", f"/list/{LIST}/task", body={
        "name": "New", "markdown_content": "Why", "status": "in progress", "priority": 2, "tags": ["bug"],
        "assignees": [12], "custom_fields": [{"id": "cf-team", "value": 1}, {"id": "cf-est", "value": 3.5}]})
    created = structured(result)
    check((created["status"], created["priority"], created["assignees"]) == ("in progress", "high", ["alan"]), created)
    result = await call(client, "update_issue", {"key": "86a004", "status": "blocked"}, error=True)
    check("ClickUp update_issue: invalid arguments (400)" in text(result) and "Status does not exist" in text(result),
          text(result))

    fake.clear()
    result = await call(client, "update_issue", {"key": "86a003", "title": "Renamed", "assignees": ["ada"],
                                                 "labels": ["ux"], "cf_team": "Red"})
    check(asked(fake) == [("GET", "/task/86a003"), ("GET", f"/list/{LIST}/member"), ("PUT", "/task/86a003"),
                          ("POST", "/task/86a003/tag/ux"), ("DELETE", "/task/86a003/tag/bug"),
                          ("POST", "/task/86a003/field/cf-team"), ("GET", "/task/86a003")], asked(fake))
    put = fake.requests("PUT")[0]
    check(put.body == {"name": "Renamed", "assignees": {"add": [11], "rem": [12]}}, put.body)
    check(fake.requests("POST", "/task/86a003/field/cf-team")[0].body == {"value": 0}, "dropdown by orderindex")
    value = structured(result)
    check((value["title"], value["labels"], value["assignees"]) == ("Renamed", ["ux"], ["ada"]), value)
    result = await call(client, "update_issue", {"key": "86a003"}, error=True)
    check("nothing to change" in text(result), text(result))

    result = await call(client, "add_issue_comment", {"key": "86a003", "body": "LGTM"})
    expect(fake, "POST", "/task/86a003/comment", body={"comment_text": "LGTM", "notify_all": False})
    check(structured(result)["id"] == "86a003-c2", structured(result))

    # Relations: links and dependencies, from each side.
    result = await call(client, "get_issue_relations", {"key": "86a020"})
    expect(fake, "GET", "/task/86a020", query={"include_subtasks": "true"})
    check(structured(result)["links"] == [{"type": "relates_to", "key": "86a022"}, {"type": "blocked_by", "key": "86a021"}],
          structured(result))
    result = await call(client, "get_issue_relations", {"key": "86a021"})
    check(structured(result)["links"] == [{"type": "blocks", "key": "86a020"}], structured(result))
    await call(client, "link_issues", {"source_key": "86a030", "target_key": "86a031", "link_type": "blocks"})
    expect(fake, "POST", "/task/86a030/dependency", body={"dependency_of": "86a031"})
    await call(client, "link_issues", {"source_key": "86a030", "target_key": "86a032", "link_type": "relates_to"})
    expect(fake, "POST", "/task/86a030/link/86a032")
    result = await call(client, "get_issue_relations", {"key": "86a031"})
    check(structured(result)["links"] == [{"type": "blocked_by", "key": "86a030"}], structured(result))
    result = await call(client, "link_issues", {"source_key": "86a030", "target_key": "86a033", "link_type": "subtask"},
                        error=True)
    check("ClickUp link_issues: `link_type` is blocks" in text(result), text(result))
    await call(client, "unlink_issues", {"source_key": "86a030", "target_key": "86a031"})
    expect(fake, "DELETE", "/task/86a030/dependency", query={"dependency_of": "86a031"})
    await call(client, "unlink_issues", {"source_key": "86a020", "target_key": "86a022", "link_type": "relates_to"})
    expect(fake, "DELETE", "/task/86a020/link/86a022")
    result = await call(client, "unlink_issues", {"source_key": "86a020", "target_key": "86a022"}, error=True)
    check("has no link to 86a022" in text(result), text(result))

    # Sprints: the lists of the sprint folder, their state from their dates.
    result = await call(client, "get_board_sprints", {})
    expect(fake, "GET", f"/folder/{SPRINT_FOLDER}/list", query={"archived": "false"})
    check([(s["id"], s["name"], s["state"]) for s in structured(result)["sprints"]] == [("9012", "Sprint 7", "active")],
          structured(result))
    fake.clear()
    result = await call(client, "get_board_sprints", {"state": "closed"})
    check([(s.path, s.query) for s in fake.requests()] == [(f"/folder/{SPRINT_FOLDER}/list", {"archived": "false"}),
                                                          (f"/folder/{SPRINT_FOLDER}/list", {"archived": "true"})],
          fake.requests())
    check([s["name"] for s in structured(result)["sprints"]] == ["Sprint 5", "Sprint 6"], structured(result))
    result = await call(client, "get_board_sprints", {"state": "all", "limit": 3})
    check([(s["name"], s["state"]) for s in structured(result)["sprints"]]
          == [("Sprint 5", "closed"), ("Sprint 6", "closed"), ("Sprint 7", "active")], structured(result))
    result = await call(client, "get_board_sprints", {"state": "future", "boardId": "9078"}, error=True)
    expect(fake, "GET", "/folder/9078/list", query={"archived": "false"})
    check("ClickUp get_board_sprints: not found" in text(result) and "Folder not found" in text(result), text(result))
    fake.clear()
    result = await call(client, "assign_to_sprint", {"sprintId": "9013", "keys": ["86a007", "86a008"]})
    check(asked(fake) == [("POST", "/list/9013/task/86a007"), ("POST", "/list/9013/task/86a008")], asked(fake))
    expect(fake, "POST", "/list/9013/task/86a008", query={})
    check(fake.sprint_lists["9013"]["task_count"] == 2 and structured(result)["keys"] == ["86a007", "86a008"],
          structured(result))
    result = await call(client, "assign_to_sprint", {"sprintId": "9013", "keys": ["86a007"]}, error=True)
    check("invalid arguments (400)" in text(result) and "Task already in list" in text(result), text(result))

    # Epics: the tasks of the configured epics list.
    result = await call(client, "get_epics", {})
    expect(fake, "GET", f"/list/{EPICS}/task", query={**BASE, "page": "0"})
    check([e["key"] for e in structured(result)["epics"]] == ["86e002", "86e001"], structured(result))
    result = await call(client, "get_epics", {"search": "SEARCH", "state": "all"})
    expect(fake, "GET", f"/list/{EPICS}/task", query={**BASE, "include_closed": "true", "page": "0"})
    check([e["key"] for e in structured(result)["epics"]] == ["86e002"], structured(result))
    result = await call(client, "get_epic", {"key": "86e001"})
    expect(fake, "GET", "/task/86e001", query={"include_subtasks": "true"})
    check(structured(result)["title"] == "Epic: Checkout revamp", structured(result))
    fake.clear()
    result = await call(client, "create_epic", {"title": "Epic: Onboarding", "description": "First run",
                                                "status": "in progress", "labels": ["q1"], "assignees": ["ada"]})
    check(asked(fake) == [("GET", f"/list/{EPICS}/member"), ("POST", f"/list/{EPICS}/task")], asked(fake))
    expect(fake, "POST", f"/list/{EPICS}/task", body={"name": "Epic: Onboarding", "markdown_content": "First run",
                                                      "status": "in progress", "tags": ["q1"], "assignees": [11]})
    epic = structured(result)["key"]
    check(fake.tasks[epic]["list"]["id"] == EPICS and structured(result)["status"] == "in progress",
          structured(result))
    result = await call(client, "update_epic", {"key": epic, "status": "done"})
    expect(fake, "PUT", f"/task/{epic}", body={"status": "done"})
    check(structured(result)["status"] == "done", structured(result))
    fake.clear()
    result = await call(client, "create_epic", {"title": "Epic: Goals", "goalId": "g-1"}, error=True)
    check("`goalId` needs a custom field named `Goals`" in text(result) and not fake.requests(), text(result))

    fake.clear()
    fake.rate_limit("GET", "/task/(\\w+)", times=1, retry_after="1")
    await call(client, "get_issue", {"key": "86a013"})
    check(len(fake.requests("GET", "/task/86a013")) == 2, "429 then a retry")
    fake.rate_limit("GET", "/task/(\\w+)", times=1, retry_after="3600")
    result = await call(client, "get_issue", {"key": "86a014"}, error=True)
    check("rate limited" in text(result) and "3600 s" in text(result), text(result))

    fake.revoked = True
    result = await call(client, "get_issues", {}, error=True)
    check("401 Unauthorized" in text(result) and "secret `clickup`" in text(result) and "Token invalid" in text(result),
          text(result))
    fake.revoked = False


async def assets(client, fake):
    """Attachments: listed from the task, downloaded from their url,
    uploaded as multipart; ClickUp cannot delete one, so that is not served."""
    names = {t.name for t in (await client.list_tools()).tools}
    check({"get_assets", "download_asset", "upload_asset"} <= names and "delete_asset" not in names, sorted(names))
    fake.clear()
    result = await call(client, "get_assets", {"context_type": "issue", "key": "86a007"})
    expect(fake, "GET", "/task/86a007", query={})
    found = structured(result)["assets"]
    check([(a["id"], a["filename"], a["mimeType"]) for a in found] == [("f1a2-shot.png", "shot.png", "image/png")],
          found)
    fake.clear()
    result = await call(client, "download_asset", {"context_type": "issue", "key": "86a007",
                                                   "asset_id": "f1a2-shot.png"})
    check([(s.method, s.path) for s in fake.requests()] == [("GET", "/task/86a007"),
                                                            ("GET", "/attachments/f1a2-shot.png")], fake.requests())
    check(blob(result) == [("image/png", fake.files["f1a2-shot.png"])], blob(result))
    check(structured(result)["size"] == len(fake.files["f1a2-shot.png"]), structured(result))
    result = await call(client, "download_asset", {"context_type": "issue", "key": "86a007", "asset_id": "nope"},
                        error=True)
    check("ClickUp download_asset: task 86a007 has no attachment `nope`" in text(result), text(result))

    data = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"
    fake.clear()
    result = await call(client, "upload_asset", {"key": "86a008", "filename": "spec.pdf",
                                                 "fileData": base64.b64encode(data).decode()})
    seen = expect(fake, "POST", "/task/86a008/attachment", query={})
    parts = [(p.name, p.filename, p.content_type, p.data) for p in multipart(seen)]
    check(parts == [("filename", None, "text/plain", b"spec.pdf"), ("attachment", "spec.pdf", "application/pdf", data)],
          parts)
    made = structured(result)
    check(made["key"] == "86a008" and made["filename"] == "spec.pdf" and made["id"] == "a1-spec.pdf", made)
    result = await call(client, "get_assets", {"context_type": "issue", "key": "86a008"})
    check([a["id"] for a in structured(result)["assets"]] == ["a1-spec.pdf"], "no stale list after the upload")
    result = await call(client, "download_asset", {"context_type": "issue", "key": "86a008", "asset_id": "a1-spec.pdf"})
    got = structured(result)
    check(base64.b64decode(got["content_base64"]) == data and got["mimeType"] == "application/pdf", got)
    result = await call(client, "upload_asset", {"key": "86zzz9", "filename": "a.txt", "fileData": "eA=="}, error=True)
    check("ClickUp upload_asset: not found" in text(result) and "Task not found" in text(result), text(result))


async def prefetch(client, fake):
    result = await call(client, "get_issues", {"limit": 3})
    listed = keys(result)

    def tasks():
        return {s.path.split("/")[2] for s in fake.requests("GET") if s.path.count("/") == 2 and s.path.startswith("/task/")}

    await wait_until(lambda: tasks(), f"a task of {listed} prefetched")
    check(tasks() <= set(listed), tasks())
    check(all(s.method == "GET" for s in fake.requests()), f"no prefetch is a write: {asked(fake)}")
    key = sorted(tasks())[0]
    fake.clear()
    result = await call(client, "get_issue", {"key": key})
    check(fake.requests("GET", f"/task/{key}") == [] and structured(result)["key"] == key, "served from the prefetch")

    await call(client, "update_issue", {"key": key, "title": "Renamed"})
    fake.clear()
    result = await call(client, "get_issue", {"key": key})
    check(structured(result)["title"] == "Renamed" and fake.requests("GET", f"/task/{key}"), "not stale")
    check(not fake.requests("PUT") and not fake.requests("POST"), "no write but the one asked for")


async def main():
    fake = clickup()
    async with provider_session(opts.toolhost, opts.plugin, "clickup", fake, CONFIG, prefix="") as client:
        await tools(client, fake)
        await assets(client, fake)
    fake.stop()
    fake = clickup()
    async with provider_session(opts.toolhost, opts.plugin, "clickup", fake, CONFIG, prefix="",
                                extra_toml=SPECULATION) as client:
        await prefetch(client, fake)
    fake.stop()
    print("ok: clickup")


run(main)
