"""Jira end to end: `toolhost serve` with jira.wasm alone (no `[bind]`)
against the loopback fake of Jira Cloud's REST API v3 and Agile API
(jira_fake.py), through the Python MCP client. Every tool's request is
checked exactly, with the `Basic` token the host injected; every result and
error is checked; a rate limit is retried within the call's budget; the
list → issue → comments chain is prefetched, never a write, and a write is
never followed by a stale read.

    jira.py --toolhost PATH --plugin jira.wasm
"""

import argparse
import base64

from fake import SPECULATION, TOKEN, blob, call, check, multipart, provider_session, structured, text
from driver import run, wait_until
from jira_fake import AUTH, jira

parser = argparse.ArgumentParser()
parser.add_argument("--toolhost", required=True)
parser.add_argument("--plugin", required=True)
opts = parser.parse_args()

CONFIG = {
    "priorities": ["Highest", "High", "Medium", "Low", "Lowest"],
    "link_types": ["Blocks", "Relates"],
    "structures": [{"id": 12, "name": "Roadmap"}],
    "projects": [{"key": "WEB", "issue_types": [{"name": "Story"}, {"name": "Bug"}, {"name": "Task"}],
                  "custom_fields": [{"id": "customfield_200", "name": "Team", "type": "select",
                                     "options": [{"id": "1", "name": "Red"}, {"id": "2", "name": "Blue"}]}]}],
}
FIELDS = "summary,status,priority,issuetype,assignee,reporter,labels,components,project,parent,created,updated"
OPEN_JQL = 'project = "WEB" AND statusCategory != Done ORDER BY updated DESC'
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def expect(fake, method, path, query=None, body=None):
    return fake.expect(method, path, query=query, body=body, auth=AUTH)



async def reads(client, fake):
    names = {t.name for t in (await client.list_tools()).tools}
    wanted = {"get_issues", "get_issue", "get_issue_comments", "get_issue_relations", "get_available_statuses",
              "get_users", "get_custom_fields", "get_board_sprints", "list_project_versions", "get_assets",
              "create_issue", "update_issue", "add_issue_comment", "link_issues", "unlink_issues",
              "assign_to_sprint", "upsert_project_version", "delete_asset", "upload_asset", "download_asset",
              "get_epics", "get_epic", "create_epic", "update_epic", "get_structure_forest", "get_structures",
              "create_structure", "get_structure_values", "add_structure_rows", "move_structure_rows",
              "remove_structure_row"}
    check(wanted <= names, f"served: {sorted(names)}")
    check(not names & {"get_structure_views", "save_structure_view"}, f"views have no REST resource: {sorted(names)}")


    # get_issues: JQL from the filters; offset/limit onto nextPageToken pages.
    result = await call(client, "get_issues", {"limit": 3})
    expect(fake, "GET", "/rest/api/3/search/jql", query={"jql": OPEN_JQL, "maxResults": "3", "fields": FIELDS})
    issues = structured(result)["issues"]
    check([i["key"] for i in issues] == ["WEB-24", "WEB-23", "WEB-22"], f"issues: {issues}")
    check(issues[1]["status"] == "In Progress" and issues[1]["assignee"] == "Alice", issues[1])
    check(structured(result)["has_more"] is True and "3 issue(s)" in text(result), text(result))

    fake.clear()
    result = await call(client, "get_issues", {"limit": 4, "offset": 3, "labels": ["frontend"], "state": "all",
                                               "sort": "created_at", "sort_order": "asc"})
    jql = 'project = "WEB" AND labels = "frontend" ORDER BY created ASC'
    asked = [s.query for s in fake.requests("GET", "/rest/api/3/search/jql")]
    check(len(asked) == 2 and asked[0] == {"jql": jql, "maxResults": "7", "fields": FIELDS}
          and "nextPageToken" not in asked[0] and asked[1]["nextPageToken"], f"pages asked: {asked}")
    keys = [i["key"] for i in structured(result)["issues"]]
    check(keys == ["WEB-12", "WEB-15", "WEB-18", "WEB-21"] and structured(result)["has_more"], keys)

    result = await call(client, "get_issues", {"nativeQuery": "issuetype = Bug", "limit": 2})
    expect(fake, "GET", "/rest/api/3/search/jql", query={"jql": "issuetype = Bug", "maxResults": "2", "fields": FIELDS})
    check(all(i["issueType"] == "Bug" for i in structured(result)["issues"]), structured(result))

    # 400: Jira's errorMessages, as invalid arguments.
    result = await call(client, "get_issues", {"nativeQuery": "project = = WEB"}, error=True)
    check("Jira get_issues: invalid arguments (400): Error in the JQL Query" in text(result), text(result))

    result = await call(client, "get_issue", {"key": "WEB-1", "includeComments": True, "includeRelations": True})
    expect(fake, "GET", "/rest/api/3/issue/WEB-1",
           query={"fields": f"{FIELDS},description,comment,subtasks,issuelinks"})
    issue = structured(result)
    check(issue["description"] == "Description of 1" and issue["title"] == "Issue 1", issue)
    check([c["body"] for c in issue["comments"]][0] == "Comment 0 on WEB-1", issue["comments"])
    check(issue["relations"]["subtasks"][0]["key"] == "WEB-2", issue["relations"])

    # 404: not found, naming the tool.
    result = await call(client, "get_issue", {"key": "WEB-999"}, error=True)
    check("Jira get_issue: not found" in text(result) and "Issue does not exist" in text(result), text(result))
    result = await call(client, "get_issue", {"key": "not a key"}, error=True)
    check("must be an issue key like `WEB-12`" in text(result), text(result))

    # Comments: offset/limit onto startAt/maxResults, ADF bodies as text.
    result = await call(client, "get_issue_comments", {"key": "WEB-3", "limit": 2, "offset": 1})
    expect(fake, "GET", "/rest/api/3/issue/WEB-3/comment", query={"startAt": "1", "maxResults": "2"})
    check([c["body"] for c in structured(result)["comments"]] == ["Comment 1 on WEB-3", "Comment 2 on WEB-3"],
          structured(result))

    result = await call(client, "get_issue_relations", {"key": "WEB-2"})
    expect(fake, "GET", "/rest/api/3/issue/WEB-2", query={"fields": "parent,subtasks,issuelinks"})
    check(structured(result)["parent"]["key"] == "WEB-1", structured(result))

    result = await call(client, "get_available_statuses", {})
    expect(fake, "GET", "/rest/api/3/project/WEB/statuses", query={})
    statuses = structured(result)["statuses"]
    check([(s["name"], s["category"]) for s in statuses] == [("To Do", "new"), ("In Progress", "indeterminate"),
                                                             ("Done", "done")], statuses)
    check(statuses[0]["issueTypes"] == ["Story", "Bug"], statuses[0])

    result = await call(client, "get_users", {"search": "bo", "limit": 5})
    expect(fake, "GET", "/rest/api/3/user/search", query={"query": "bo", "maxResults": "5"})
    check([u["id"] for u in structured(result)["users"]] == ["acc-bob"], structured(result))
    result = await call(client, "get_users", {"userId": "acc-alice"})
    expect(fake, "GET", "/rest/api/3/user", query={"accountId": "acc-alice"})
    check(structured(result)["users"][0]["name"] == "Alice", structured(result))
    result = await call(client, "get_users", {})
    expect(fake, "GET", "/rest/api/3/user/assignable/search", query={"project": "WEB", "maxResults": "50"})

    result = await call(client, "get_custom_fields", {"search": "team"})
    expect(fake, "GET", "/rest/api/3/field", query={})
    check(structured(result)["fields"] == [{"id": "customfield_200", "name": "Team", "type": "option"}],
          structured(result))
    result = await call(client, "get_custom_fields", {"issueType": "Bug"})
    expect(fake, "GET", "/rest/api/3/issue/createmeta/WEB/issuetypes/10004", query={"startAt": "0", "maxResults": "500"})
    check(structured(result)["fields"][0]["options"] == ["Red", "Blue"], structured(result))
    # The config names a type the site does not have (any more).
    result = await call(client, "get_custom_fields", {"issueType": "Task"}, error=True)
    check("WEB has no issue type `Task` (it has Story, Bug)" in text(result), text(result))

    result = await call(client, "get_board_sprints", {})
    expect(fake, "GET", "/rest/agile/1.0/board/3/sprint", query={"state": "active", "startAt": "0", "maxResults": "20"})
    check(fake.requests("GET", "/rest/agile/1.0/board")[-1].query == {"projectKeyOrId": "WEB"}, "board looked up")
    check([s["id"] for s in structured(result)["sprints"]] == [9], structured(result))
    result = await call(client, "get_board_sprints", {"boardId": "3", "state": "all", "limit": 3})
    expect(fake, "GET", "/rest/agile/1.0/board/3/sprint", query={"startAt": "0", "maxResults": "3"})
    check(len(structured(result)["sprints"]) == 3 and structured(result)["has_more"] is True, structured(result))

    result = await call(client, "list_project_versions", {})
    expect(fake, "GET", "/rest/api/3/project/WEB/version",
           query={"status": "unreleased,released", "startAt": "0", "maxResults": "50"})
    check([v["name"] for v in structured(result)["versions"]] == ["1.0", "1.1"], structured(result))

    result = await call(client, "get_assets", {"context_type": "issue", "key": "WEB-1"})
    expect(fake, "GET", "/rest/api/3/issue/WEB-1", query={"fields": "attachment"})
    check(structured(result)["assets"][0]["filename"] == "trace.log", structured(result))

    # download_asset: the metadata, then the content through Jira's 303 to
    # the media host; the bytes come back as base64.
    fake.clear()
    result = await call(client, "download_asset", {"context_type": "issue", "key": "WEB-1", "asset_id": "30001"})
    check([(s.method, s.path) for s in fake.requests()] == [
        ("GET", "/rest/api/3/attachment/30001"), ("GET", "/rest/api/3/attachment/content/30001"),
        ("GET", "/file/30001/binary")], [(s.method, s.path) for s in fake.requests()])
    check(fake.requests()[1].headers.get("authorization") == AUTH, "token injected")
    got = structured(result)
    check(base64.b64decode(got["content_base64"]) == b"trace line 1\ntrace line 2\n", got)
    check(got["mimeType"] == "text/plain" and got["filename"] == "trace.log" and got["size"] == 26, got)
    check(blob(result) == [], "only images are image blocks")
    # Larger than a download returns: refused from the metadata, not fetched.
    fake.clear()
    result = await call(client, "download_asset", {"context_type": "issue", "key": "WEB-1", "asset_id": "30002"},
                        error=True)
    check("attachment 30002 (`dump.bin`) is 52428800 bytes; a download returns at most" in text(result), text(result))
    check([s.path for s in fake.requests()] == ["/rest/api/3/attachment/30002"], "the content is not fetched")
    result = await call(client, "download_asset", {"context_type": "issue", "key": "WEB-1", "asset_id": "39999"},
                        error=True)
    check("Jira download_asset: not found" in text(result) and "id '39999' does not exist" in text(result), text(result))


    # Epics: issues of type Epic; an epic's issues name it as their parent.
    result = await call(client, "get_epics", {})
    expect(fake, "GET", "/rest/api/3/search/jql", query={
        "jql": 'project = "WEB" AND issuetype = Epic AND statusCategory != Done ORDER BY updated DESC',
        "maxResults": "20", "fields": FIELDS})
    check([e["key"] for e in structured(result)["epics"]] == ["WEB-100"], structured(result))
    result = await call(client, "get_epics", {"state": "all", "search": "launch", "limit": 5})
    check([e["key"] for e in structured(result)["epics"]] == ["WEB-101", "WEB-100"], structured(result))
    result = await call(client, "get_epic", {"key": "WEB-100"})
    expect(fake, "GET", "/rest/api/3/search/jql",
           query={"jql": 'parent = "WEB-100" ORDER BY created ASC', "maxResults": "50", "fields": FIELDS})
    epic = structured(result)
    check(epic["title"] == "Q4 launch" and [i["key"] for i in epic["issues"]] == ["WEB-5", "WEB-10"], epic)
    result = await call(client, "get_epic", {"key": "WEB-3"}, error=True)
    check("WEB-3 is a Story, not an epic" in text(result), text(result))


    # Structure (configured): the forest formula, its issues by one JQL search.
    fake.clear()
    result = await call(client, "get_structure_forest", {"structureId": 12, "offset": 1, "limit": 3})
    forest = fake.requests("GET", "/rest/structure/2.0/forest/latest")
    check(len(forest) == 1 and forest[0].query == {"s": '{"structureId":12}'}, forest)
    expect(fake, "GET", "/rest/api/3/search/jql", query={"jql": "id in (10002, 10003)", "maxResults": "2",
                                                         "fields": FIELDS})
    value = structured(result)
    check(value["forestVersion"] == 7 and value["total"] == 4 and value["has_more"] is False, value)
    check(value["rows"] == [
        {"rowId": 501, "depth": 1, "issueId": 10002, "key": "WEB-2", "title": "Issue 2", "status": "To Do"},
        {"rowId": 502, "depth": 1, "itemType": "com.almworks.jira.structure:type-folder", "itemId": "240"},
        {"rowId": 503, "depth": 0, "issueId": 10003, "key": "WEB-3", "title": "Issue 3", "status": "In Progress"},
    ], value["rows"])
    result = await call(client, "get_structure_forest", {"structureId": 99}, error=True)
    check("Jira get_structure_forest: not found" in text(result) and "Structure 99 does not exist" in text(result),
          text(result))


async def structures(client, fake):
    """The Structure app: list and create structures, read values, and edit
    the forest against the version last read."""
    fake.clear()
    result = await call(client, "get_structures", {})
    expect(fake, "GET", "/rest/structure/2.0/structure", query={})
    check(structured(result)["structures"][0] == {"structureId": 12, "name": "Roadmap", "description": "Q4 plan",
                                                  "readOnly": False, "owner": "user:alice"}, structured(result))
    result = await call(client, "create_structure", {"name": "Q1", "description": "Next quarter"})
    expect(fake, "POST", "/rest/structure/2.0/structure", body={"name": "Q1", "description": "Next quarter"})
    check(structured(result)["structureId"] == 13 and "created structure 13" in text(result), text(result))
    result = await call(client, "get_structures", {})
    check([s["name"] for s in structured(result)["structures"]] == ["Roadmap", "Q1"], "no stale list after the create")

    formula_column = '{"formula":"SUM(points)"}'
    result = await call(client, "get_structure_values", {"structureId": 12, "rows": [500, 502],
                                                         "columns": ["summary", formula_column]})
    expect(fake, "POST", "/rest/structure/2.0/value", body={"requests": [{
        "forestSpec": {"structureId": 12}, "rows": [500, 502],
        "attributes": [{"id": "summary", "format": "text"},
                       {"id": "expr", "format": "text", "params": {"formula": "SUM(points)"}}]}]})
    check(structured(result)["rows"] == [{"rowId": 500, "summary": "Issue 1", formula_column: "3"},
                                         {"rowId": 502, "summary": None, formula_column: ""}], structured(result))

    # add_structure_rows: the issues' ids by one search, then one add action
    # of temporary rows at the forest version the caller read.
    fake.clear()
    result = await call(client, "add_structure_rows", {"structureId": 12, "items": ["WEB-4", "web-6"], "under": 500,
                                                       "after": 501, "forestVersion": 7})
    check(fake.requests("GET", "/rest/structure/2.0/forest/latest")[0].query == {"s": '{"structureId":12}'},
          "the version is read first")
    search = fake.requests("GET", "/rest/api/3/search/jql")
    check(search[0].query == {"jql": 'key in ("WEB-4", "WEB-6")', "maxResults": "2", "fields": FIELDS}, search)
    expect(fake, "POST", "/rest/structure/2.0/forest/update", body={
        "spec": {"structureId": 12}, "version": {"signature": -1659607419, "version": 7},
        "actions": [{"action": "add", "under": 500, "after": 501, "before": 0, "forest": "-1:0:10004,-2:0:10006"}]})
    added = structured(result)
    check(added["forestVersion"] == 8 and added["actionResults"] == [{"oldRowIds": [-1, -2], "newRowIds": [504, 505]}],
          added)
    result = await call(client, "get_structure_forest", {"structureId": 12})
    check([(r["rowId"], r["depth"]) for r in structured(result)["rows"]] ==
          [(500, 0), (501, 1), (504, 1), (505, 1), (502, 1), (503, 0)], "no stale forest after the add")
    # A stale version is refused before anything is written.
    fake.clear()
    result = await call(client, "add_structure_rows", {"structureId": 12, "items": ["WEB-7"], "forestVersion": 7},
                        error=True)
    check("structure 12 changed since forest version 7 (now 8); read the forest again" in text(result), text(result))
    check(not fake.requests("POST"), "nothing written on a stale version")
    result = await call(client, "add_structure_rows", {"structureId": 12, "items": ["WEB-999"]}, error=True)
    check("issue WEB-999 does not exist" in text(result), text(result))

    result = await call(client, "move_structure_rows", {"structureId": 12, "rowIds": [505], "after": 503})
    expect(fake, "POST", "/rest/structure/2.0/forest/update", body={
        "spec": {"structureId": 12}, "version": {"signature": -1659607419, "version": 8},
        "actions": [{"action": "move", "rows": "505", "under": 0, "after": 503, "before": 0}]})
    check(structured(result)["forestVersion"] == 9, structured(result))
    result = await call(client, "remove_structure_row", {"structureId": 12, "rowId": 502})
    expect(fake, "POST", "/rest/structure/2.0/forest/update", body={
        "spec": {"structureId": 12}, "version": {"signature": -1659607419, "version": 9},
        "actions": [{"action": "remove", "rows": "502"}]})
    check([r[0] for r in fake.forest_rows] == [500, 501, 504, 503, 505], fake.forest_rows)
    result = await call(client, "remove_structure_row", {"structureId": 12, "rowId": 777}, error=True)
    check("Jira remove_structure_row: invalid arguments (400): Row 777 is not in the structure" in text(result),
          text(result))
    result = await call(client, "move_structure_rows", {"structureId": 99, "rowIds": [1]}, error=True)
    check("Jira move_structure_rows: not found" in text(result) and "Structure 99 does not exist" in text(result),
          text(result))


async def writes(client, fake):
    # create_issue: ADF description, the enricher's cf_team as the option id,
    # then a transition to the status asked for.
    fake.clear()
    result = await call(client, "create_issue", {"title": "Checkout fails", "description": "Steps:\n\n- pay",
                                                 "priority": "Highest", "issueType": "Bug", "labels": ["frontend"],
                                                 "cf_team": "Blue", "status": "In Progress"})
    create = fake.requests("POST", "/rest/api/3/issue")[0]
    check(create.headers["authorization"] == AUTH, "token injected")
    check(create.body == {"fields": {
        "summary": "Checkout fails", "priority": {"name": "Highest"}, "labels": ["frontend"],
        "issuetype": {"name": "Bug"}, "customfield_200": {"id": "2"}, "project": {"key": "WEB"},
        "description": {"type": "doc", "version": 1, "content": [
            {"type": "paragraph", "content": [{"type": "text", "text": "Steps:"}]},
            {"type": "bulletList", "content": [{"type": "listItem", "content": [
                {"type": "paragraph", "content": [{"type": "text", "text": "pay"}]}]}]}]}}}, create.body)
    expect(fake, "POST", "/rest/api/3/issue/WEB-26/transitions", body={"transition": {"id": "12"}})
    check(structured(result)["key"] == "WEB-26" and structured(result)["status"] == "In Progress", structured(result))

    result = await call(client, "create_issue", {"title": ""}, error=True)
    check("`title` is required" in text(result), text(result))

    result = await call(client, "update_issue", {"key": "WEB-26", "title": "Checkout fails on Safari",
                                                 "assignees": ["acc-bob"]})
    expect(fake, "PUT", "/rest/api/3/issue/WEB-26",
           body={"fields": {"summary": "Checkout fails on Safari", "assignee": {"accountId": "acc-bob"}}})
    result = await call(client, "update_issue", {"key": "WEB-26", "state": "closed"})
    expect(fake, "POST", "/rest/api/3/issue/WEB-26/transitions", body={"transition": {"id": "13"}})
    check(fake.issues["WEB-26"]["fields"]["status"]["name"] == "Done" and "now Done" in text(result), text(result))
    result = await call(client, "update_issue", {"key": "WEB-26", "status": "Nowhere"}, error=True)
    check("cannot move to `Nowhere`" in text(result) and "To Do, In Progress" in text(result), text(result))
    result = await call(client, "update_issue", {"key": "WEB-26", "title": ""}, error=True)
    check("nothing to change" in text(result), text(result))

    result = await call(client, "add_issue_comment", {"key": "WEB-4", "body": "Looks *fine*"})
    expect(fake, "POST", "/rest/api/3/issue/WEB-4/comment", body={"body": {"type": "doc", "version": 1, "content": [
        {"type": "paragraph", "content": [{"type": "text", "text": "Looks *fine*"}]}]}})
    check(structured(result)["comment"]["body"] == "Looks *fine*", structured(result))

    result = await call(client, "link_issues", {"source_key": "WEB-4", "target_key": "WEB-6", "link_type": "Blocks"})
    expect(fake, "POST", "/rest/api/3/issueLink",
           body={"type": {"name": "Blocks"}, "outwardIssue": {"key": "WEB-4"}, "inwardIssue": {"key": "WEB-6"}})
    result = await call(client, "get_issue_relations", {"key": "WEB-6"})
    check(structured(result)["links"][0]["relation"] == "is blocked by"
          and structured(result)["links"][0]["key"] == "WEB-4", structured(result))
    result = await call(client, "unlink_issues", {"source_key": "WEB-4", "target_key": "WEB-6"})
    expect(fake, "DELETE", "/rest/api/3/issueLink/50000")
    check(fake.links == [] and structured(result)["removed"] == ["50000"], structured(result))
    result = await call(client, "unlink_issues", {"source_key": "WEB-4", "target_key": "WEB-6"}, error=True)
    check("WEB-4 has no link to WEB-6" in text(result), text(result))

    result = await call(client, "assign_to_sprint", {"sprintId": "9", "keys": ["WEB-3", "WEB-4"]})
    expect(fake, "POST", "/rest/agile/1.0/sprint/9/issue", body={"issues": ["WEB-3", "WEB-4"]})
    check(fake.sprint_issues[9] == ["WEB-3", "WEB-4"], fake.sprint_issues)

    result = await call(client, "upsert_project_version", {"name": "1.1", "released": True, "releaseDate": "2026-12-01"})
    expect(fake, "PUT", "/rest/api/3/version/40002", body={"releaseDate": "2026-12-01", "released": True})
    result = await call(client, "upsert_project_version", {"name": "2.0", "description": "Next"})
    expect(fake, "POST", "/rest/api/3/version", body={"description": "Next", "name": "2.0", "projectId": 10000})
    check(structured(result)["name"] == "2.0" and "created version 2.0" in text(result), text(result))

    result = await call(client, "create_epic", {"title": "Q1 launch", "description": "Ship it", "labels": ["q1"]})
    expect(fake, "POST", "/rest/api/3/issue", body={"fields": {
        "summary": "Q1 launch", "labels": ["q1"], "issuetype": {"name": "Epic"}, "project": {"key": "WEB"},
        "description": {"type": "doc", "version": 1, "content": [
            {"type": "paragraph", "content": [{"type": "text", "text": "Ship it"}]}]}}})
    check(structured(result)["key"] == "WEB-27", structured(result))
    result = await call(client, "update_epic", {"key": "WEB-100", "status": "In Progress"})
    expect(fake, "POST", "/rest/api/3/issue/WEB-100/transitions", body={"transition": {"id": "12"}})
    result = await call(client, "update_epic", {"key": "WEB-100", "goalId": "g-1"}, error=True)
    check("Jira has no goals" in text(result), text(result))

    # upload_asset: base64 in, a multipart POST with Jira's XSRF header out;
    # the file is then listed and downloads to the same bytes, as an image.
    png = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489") + b"\r\n--x\r\n"
    fake.clear()
    result = await call(client, "upload_asset", {"key": "WEB-3", "filename": "shot.png",
                                                 "fileData": base64.b64encode(png).decode()})
    seen = expect(fake, "POST", "/rest/api/3/issue/WEB-3/attachments")
    check(seen.headers.get("x-atlassian-token") == "no-check", seen.headers)
    parts = multipart(seen)
    check([(p.name, p.filename, p.content_type, p.data) for p in parts] == [("file", "shot.png", "image/png", png)],
          parts)
    made = structured(result)
    check(made["key"] == "WEB-3" and made["filename"] == "shot.png" and made["size"] == len(png), made)
    result = await call(client, "get_assets", {"context_type": "issue", "key": "WEB-3"})
    check([a["id"] for a in structured(result)["assets"]] == [made["id"]], "no stale list after the upload")
    result = await call(client, "download_asset", {"context_type": "issue", "key": "WEB-3", "asset_id": made["id"]})
    check(blob(result) == [("image/png", png)], blob(result))
    result = await call(client, "upload_asset", {"key": "WEB-3", "filename": "x.txt", "fileData": "not base64!"},
                        error=True)
    check("Jira upload_asset: `fileData` is not valid base64" in text(result), text(result))
    result = await call(client, "upload_asset", {"key": "WEB-3", "filename": "../x.txt", "fileData": "eA=="},
                        error=True)
    check("must be a plain file name" in text(result), text(result))

    # A priority alias passes the enriched schema and reaches Jira as its name.
    fake.clear()
    result = await call(client, "update_issue", {"key": "WEB-3", "priority": "urgent"})
    expect(fake, "PUT", "/rest/api/3/issue/WEB-3", body={"fields": {"priority": {"name": "Highest"}}})

    result = await call(client, "delete_asset", {"key": "WEB-1", "asset_id": "30001"})
    expect(fake, "DELETE", "/rest/api/3/attachment/30001")
    result = await call(client, "delete_asset", {"key": "WEB-1", "asset_id": "30001"}, error=True)
    check("Jira delete_asset: not found" in text(result), text(result))


async def errors(client, fake):
    # 401: the revoked token; the message names the secret, never the token.
    fake.revoked = True
    result = await call(client, "get_issue", {"key": "WEB-1"}, error=True)
    check("401" in text(result) and "secret `jira`" in text(result) and TOKEN not in text(result), text(result))
    fake.revoked = False
    # 403: the token's user may not edit this issue.
    result = await call(client, "update_issue", {"key": "WEB-20", "title": "x"}, error=True)
    check("403 Forbidden: You do not have permission to edit issues" in text(result)
          and "secret `jira` lacks the permission for PUT /rest/api/3/issue/WEB-20" in text(result), text(result))
    # A rate limit with a short Retry-After is waited out by the host.
    fake.clear()
    fake.rate_limit("GET", r"/rest/api/3/issue/([A-Z]+-\d+)", times=1, retry_after="1")
    await call(client, "get_issue", {"key": "WEB-13"})
    check(len(fake.requests("GET", "/rest/api/3/issue/WEB-13")) == 2, "429 then a retry")
    # One longer than the call's budget is an error saying so.
    fake.rate_limit("GET", r"/rest/api/3/issue/([A-Z]+-\d+)", times=1, retry_after="3600")
    result = await call(client, "get_issue", {"key": "WEB-14"}, error=True)
    check("rate limited" in text(result) and "3600 s" in text(result), text(result))


async def prefetch(client, fake):
    """list issues → issue → comments, made ahead of time; never a write;
    and after a write, the next read is not the stale prefetch."""
    fake.clear()
    await call(client, "get_issues", {"limit": 3})
    for key in ("WEB-24", "WEB-23", "WEB-22"):
        await wait_until(lambda: fake.requests("GET", f"/rest/api/3/issue/{key}"), f"get_issue {key} prefetched")
    # Comments are less likely: a link's prior is shared out over the ranks,
    # so the third result's comments wait until agents are seen reading them.
    for key in ("WEB-24", "WEB-23"):
        await wait_until(lambda: fake.requests("GET", f"/rest/api/3/issue/{key}/comment"), f"comments of {key} prefetched")
    await call(client, "get_epics", {})
    await wait_until(lambda: fake.requests("GET", "/rest/api/3/issue/WEB-100"), "get_epic WEB-100 prefetched")
    await wait_until(lambda: len(fake.requests("GET", "/rest/api/3/search/jql")) == 3, "its issues searched ahead")
    before = len(fake.requests())
    result = await call(client, "get_epic", {"key": "WEB-100"})
    check([i["key"] for i in structured(result)["issues"]] == ["WEB-5", "WEB-10"], structured(result))
    check(len(fake.requests()) == before, f"epic served from the prefetch: {fake.requests()[before:]}")
    result = await call(client, "get_issue", {"key": "WEB-24"})
    check(structured(result)["title"] == "Issue 24", structured(result))
    result = await call(client, "get_issue_comments", {"key": "WEB-24"})
    check(len(structured(result)["comments"]) == 3, structured(result))
    check(len(fake.requests()) == before, f"served from the prefetch: {fake.requests()[before:]}")
    check(all(s.method == "GET" for s in fake.requests()), [s.method for s in fake.requests()])

    await call(client, "add_issue_comment", {"key": "WEB-23", "body": "New finding"})
    result = await call(client, "get_issue_comments", {"key": "WEB-23"})
    check(structured(result)["comments"][-1]["body"] == "New finding", "no stale comments after the write")
    await call(client, "update_issue", {"key": "WEB-22", "title": "Renamed"})
    result = await call(client, "get_issue", {"key": "WEB-22"})
    check(structured(result)["title"] == "Renamed", "no stale issue after the write")
    unasked = [s for s in fake.requests() if s.method in WRITES]
    check([(s.method, s.path) for s in unasked] == [("POST", "/rest/api/3/issue/WEB-23/comment"),
                                                     ("PUT", "/rest/api/3/issue/WEB-22")], unasked)


async def main():
    fake = jira()
    async with provider_session(opts.toolhost, opts.plugin, "jira", fake, CONFIG, prefix="Basic ") as client:
        await reads(client, fake)
        await writes(client, fake)
        await structures(client, fake)
        await errors(client, fake)
    fake.stop()
    fake = jira()
    async with provider_session(opts.toolhost, opts.plugin, "jira", fake, CONFIG, prefix="Basic ",
                                extra_toml=SPECULATION + '\nper_host = 8') as client:
        await prefetch(client, fake)
    fake.stop()
    print("ok: jira")


run(main)
