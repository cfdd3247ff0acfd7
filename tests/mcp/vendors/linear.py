"""Linear end to end: `toolhost serve` with linear.wasm alone (no `[bind]`)
against the loopback fake of Linear's GraphQL API (linear_fake.py), through
the Python MCP client. Every tool's operation and variables are checked
exactly, with the key the host injected (no `Bearer`); results, GraphQL
errors (HTTP 200 and 400 with `errors`), rate limits, cursor pagination,
and the issues → issue → comments prefetch, never a mutation, never stale
after a write.

    linear.py --toolhost PATH --plugin linear.wasm
"""

import argparse

from fake import SPECULATION, TOKEN, call, check, provider_session, structured, text
from driver import run, wait_until
from linear_fake import linear

parser = argparse.ArgumentParser()
parser.add_argument("--toolhost", required=True)
parser.add_argument("--plugin", required=True)
opts = parser.parse_args()

CONFIG = {"team": "ENG"}
OPEN = {"state": {"type": {"nin": ["completed", "canceled"]}}}
TEAM = {"team": {"key": {"eq": "ENG"}}}


def expect(fake, op, variables=None):
    return fake.expect_graphql("/graphql", op, variables, auth=TOKEN)


async def tools(client, fake):
    names = {t.name for t in (await client.list_tools()).tools}
    want = {"get_issues", "get_issue", "get_issue_comments", "get_issue_relations", "get_available_statuses",
            "get_users", "get_board_sprints", "create_issue", "update_issue", "add_issue_comment", "link_issues",
            "unlink_issues", "assign_to_sprint"}
    check(want <= names, f"served: {sorted(names)}")
    check("get_custom_fields" not in names, "Linear has no custom fields")

    # get_issues: the filter, the order, cursors walked for an offset.
    result = await call(client, "get_issues", {"limit": 5})
    expect(fake, "Issues", {"filter": {"and": [TEAM, OPEN]}, "orderBy": "updatedAt", "first": 5, "after": None})
    keys = [i["key"] for i in structured(result)["issues"]]
    check(keys == ["ENG-30", "ENG-29", "ENG-27", "ENG-26", "ENG-25"], keys)
    check(structured(result)["has_more"] is True and "5 Linear issue(s) in ENG" in text(result), text(result))

    fake.clear()
    result = await call(client, "get_issues", {"limit": 3, "offset": 20, "state": "all", "sort": "created_at"})
    pages = [(s.body["variables"]["first"], s.body["variables"]["after"]) for s in fake.requests("POST")]
    check(pages == [(23, None)], f"one page of offset+limit: {pages}")
    keys = [i["key"] for i in structured(result)["issues"]]
    check(keys == ["ENG-10", "ENG-9", "ENG-8"], keys)

    fake.clear()
    result = await call(client, "get_issues", {"limit": 100, "offset": 0, "state": "all"})
    check(len(structured(result)["issues"]) == 30 and structured(result)["has_more"] is False, "all 30")

    result = await call(client, "get_issues", {"labels": ["bug"], "status": "Done", "assignee": "ada@acme.test",
                                               "search": "issue", "state": "closed"})
    filt = expect(fake, "Issues").body["variables"]["filter"]["and"]
    check(filt == [TEAM,
                   {"or": [{"title": {"containsIgnoreCase": "issue"}}, {"description": {"containsIgnoreCase": "issue"}}]},
                   {"state": {"type": {"in": ["completed", "canceled"]}}},
                   {"state": {"name": {"eqIgnoreCase": "Done"}}},
                   {"labels": {"some": {"name": {"eqIgnoreCase": "bug"}}}},
                   {"assignee": {"or": [{"email": {"eq": "ada@acme.test"}}, {"displayName": {"eqIgnoreCase": "ada@acme.test"}},
                                        {"name": {"eqIgnoreCase": "ada@acme.test"}}]}}], filt)
    keys = [i["key"] for i in structured(result)["issues"]]
    check(keys == ["ENG-24", "ENG-12"], f"done bugs of ada: {keys}")
    result = await call(client, "get_issues", {"sort_order": "asc"}, error=True)
    check("Linear get_issues" in text(result) and "newest first" in text(result), text(result))

    # Cursor pages: 30 comments are not needed; 2 pages of a walk are.
    fake.clear()
    result = await call(client, "get_issues", {"limit": 100, "offset": 100, "state": "all"})
    check(structured(result)["issues"] == [] and len(fake.requests("POST")) == 1, "past the end")

    # get_issue (+ comments and relations), and its errors.
    result = await call(client, "get_issue", {"key": "ENG-12"})
    seen = expect(fake, "Issue", {"id": "ENG-12"})
    check("description" in seen.body["query"], "the description is asked for")
    value = structured(result)
    check((value["key"], value["title"], value["status"], value["labels"], value["assignee"])
          == ("ENG-12", "Issue 12", "Done", ["bug"], "ada@acme.test"), value)
    fake.clear()
    result = await call(client, "get_issue", {"key": "ENG-2", "includeComments": True, "includeRelations": True})
    check([operation for operation in fake.operations()] == ["Issue", "IssueComments", "Issue"], fake.operations())
    value = structured(result)
    check([c["body"] for c in value["comments"]] == ["Comment 0 on ENG-2", "Comment 1 on ENG-2"], value["comments"])
    check(value["relations"]["links"][0]["key"] == "ENG-3", value["relations"])
    result = await call(client, "get_issue", {"key": "ENG-404"}, error=True)
    check("Linear get_issue: not found" in text(result) and "Could not find referenced Issue" in text(result),
          text(result))
    result = await call(client, "get_issue", {"key": "ENG-99"}, error=True)
    check("403 Forbidden" in text(result) and "secret `linear`" in text(result), text(result))

    result = await call(client, "get_issue_comments", {"key": "ENG-5", "limit": 1, "offset": 1})
    expect(fake, "IssueComments", {"id": "ENG-5", "first": 250, "after": None})
    check([c["body"] for c in structured(result)["comments"]] == ["Comment 1 on ENG-5"], structured(result))

    result = await call(client, "get_issue_relations", {"key": "ENG-3"})
    links = structured(result)["links"]
    check(links == [{"id": "rel-1", "type": "blocks", "direction": "inward", "key": "ENG-2", "title": "Issue 2"}],
          links)

    result = await call(client, "get_available_statuses", {})
    expect(fake, "WorkflowStates", {"filter": TEAM})
    check([s["name"] for s in structured(result)["statuses"]]
          == ["Backlog", "Todo", "In Progress", "Done", "Canceled"], structured(result))

    result = await call(client, "get_users", {"search": "ada"})
    expect(fake, "Users", {"filter": {"or": [{"name": {"containsIgnoreCase": "ada"}},
                                             {"displayName": {"containsIgnoreCase": "ada"}},
                                             {"email": {"containsIgnoreCase": "ada"}}]}, "first": 50})
    check([u["email"] for u in structured(result)["users"]] == ["ada@acme.test"], structured(result))

    result = await call(client, "get_board_sprints", {"state": "future"})
    expect(fake, "Cycles", {"filter": {**TEAM, "isFuture": {"eq": True}}, "first": 20})
    check([s["id"] for s in structured(result)["sprints"]] == ["cy-9"], structured(result))

    # Writes: names looked up to ids, then the mutation.
    fake.clear()
    result = await call(client, "create_issue", {"title": "New thing", "description": "Why", "priority": "high",
                                                 "status": "In Progress", "labels": ["feature"],
                                                 "assignees": ["alan"], "points": 3})
    check(fake.operations() == ["Teams", "WorkflowStates", "IssueLabels", "Users", "IssueCreate"],
          fake.operations())
    expect(fake, "IssueCreate", {"input": {"title": "New thing", "description": "Why", "priority": 2, "estimate": 3,
                                           "stateId": "st-doing", "labelIds": ["lb-feature"], "assigneeId": "u-alan",
                                           "teamId": "team-eng-uuid"}})
    created = structured(result)
    check((created["key"], created["status"], created["labels"]) == ("ENG-31", "In Progress", ["feature"]), created)
    check("Created ENG-31: New thing" in text(result), text(result))
    fake.clear()
    await call(client, "create_issue", {"title": "Another"})
    check(fake.operations() == ["IssueCreate"], f"the team id is looked up once: {fake.operations()}")
    result = await call(client, "create_issue", {"title": " "}, error=True)
    check("invalid arguments" in text(result) and "Title must not be empty" in text(result), text(result))
    result = await call(client, "create_issue", {"title": "x", "labels": ["nope"]}, error=True)
    check("Linear create_issue: no label `nope`" in text(result), text(result))

    fake.clear()
    result = await call(client, "update_issue", {"key": "ENG-4", "state": "open", "parentId": "ENG-1",
                                                 "title": "Reopened"})
    check(fake.operations() == ["WorkflowStates", "IssueId", "IssueUpdate"], fake.operations())
    expect(fake, "IssueUpdate", {"id": "ENG-4", "input": {"title": "Reopened", "stateId": "st-todo",
                                                          "parentId": "uuid-1"}})
    check(structured(result)["status"] == "Todo" and structured(result)["parent"] == "ENG-1", structured(result))
    await call(client, "update_issue", {"key": "ENG-4", "parentId": "none"})
    expect(fake, "IssueUpdate", {"id": "ENG-4", "input": {"parentId": None}})
    result = await call(client, "update_issue", {"key": "ENG-4"}, error=True)
    check("nothing to change" in text(result), text(result))

    result = await call(client, "add_issue_comment", {"key": "ENG-4", "body": "Looks good"})
    expect(fake, "CommentCreate", {"input": {"issueId": "ENG-4", "body": "Looks good"}})
    check(structured(result)["body"] == "Looks good", structured(result))

    fake.clear()
    await call(client, "link_issues", {"source_key": "ENG-5", "target_key": "ENG-6", "link_type": "blocked_by"})
    expect(fake, "IssueRelationCreate", {"input": {"issueId": "uuid-6", "relatedIssueId": "uuid-5", "type": "blocks"}})
    check(fake.operations() == ["IssueId", "IssueId", "IssueRelationCreate"], fake.operations())
    result = await call(client, "link_issues", {"source_key": "ENG-5", "target_key": "ENG-6", "link_type": "clones"},
                        error=True)
    check("`link_type` is blocks" in text(result), text(result))
    await call(client, "unlink_issues", {"source_key": "ENG-2", "target_key": "ENG-3"})
    expect(fake, "IssueRelationDelete", {"id": "rel-1"})
    check(fake.relations["ENG-2"] == [], fake.relations)
    result = await call(client, "unlink_issues", {"source_key": "ENG-2", "target_key": "ENG-3"}, error=True)
    check("has no relation to ENG-3" in text(result), text(result))

    fake.clear()
    await call(client, "assign_to_sprint", {"sprintId": "cy-8", "keys": ["ENG-7", "ENG-8"]})
    check(fake.operations() == ["IssueUpdate", "IssueUpdate"], fake.operations())
    expect(fake, "IssueUpdate", {"id": "ENG-8", "input": {"cycleId": "cy-8"}})
    check(fake.issues["ENG-7"]["cycle"]["id"] == "cy-8", "moved")

    # Rate limits: a 429 is waited out by the host, and so is Linear's own
    # (HTTP 400, RATELIMITED, the spent budget's reset in milliseconds) when
    # it fits in the call's budget; a long one is an error saying how long.
    fake.clear()
    fake.rate_limit("POST", "/graphql", times=1, retry_after="1")
    await call(client, "get_issue", {"key": "ENG-13"})
    check(len(fake.requests("POST")) == 2, "429 then a retry")
    fake.rate_limit("POST", "/graphql", times=1, retry_after="3600")
    result = await call(client, "get_issue", {"key": "ENG-14"}, error=True)
    check("rate limited" in text(result) and "3600 s" in text(result), text(result))
    fake.clear()
    fake.rate_limits = [(400, 1.0)]
    result = await call(client, "get_issue", {"key": "ENG-14"})
    check(structured(result)["key"] == "ENG-14", structured(result))
    check(fake.operations() == ["Issue", "Issue"], f"a 400 RATELIMITED then a retry: {fake.operations()}")
    fake.clear()
    fake.rate_limits = [(400, 3600.0)]
    result = await call(client, "get_issue", {"key": "ENG-14"}, error=True)
    check("Linear get_issue: rate limited (429)" in text(result) and "Linear asks to wait 3" in text(result)
          and "Rate limit exceeded" in text(result), text(result))
    check(fake.operations() == ["Issue"], f"not retried: {fake.operations()}")
    # Linear's rate limit in a 200 is the plugin's to report: not retried.
    fake.clear()
    fake.rate_limits = [(200, 1.0)]
    result = await call(client, "get_issue", {"key": "ENG-14"}, error=True)
    check("Linear get_issue: rate limited (429)" in text(result) and "try again later" in text(result), text(result))
    check(fake.operations() == ["Issue"], f"a 200 is not retried: {fake.operations()}")

    # An invalid key: the API says so, the error names the secret.
    fake.revoked = True
    result = await call(client, "get_issues", {}, error=True)
    check("401 Unauthorized" in text(result) and "secret `linear`" in text(result)
          and "Authentication required" in text(result), text(result))
    fake.revoked = False


async def prefetch(client, fake):
    fake.clear()
    result = await call(client, "get_issues", {"limit": 3})
    keys = [i["key"] for i in structured(result)["issues"]]

    def prefetched(op):
        return {s.body["variables"]["id"] for s in fake.requests("POST") if s.body.get("query", "").startswith(f"query {op}(")}

    # The planner's token budget decides how many follow-ups run: every
    # issue (the likelier link) and at least one comment thread.
    await wait_until(lambda: prefetched("Issue") == set(keys) and prefetched("IssueComments"),
                     f"issues and comments of {keys} prefetched")
    check(fake.operations("mutation") == [], f"no prefetch is a mutation: {fake.operations()}")
    thread = sorted(prefetched("IssueComments"))[0]
    fake.clear()
    # Answered with no new request for them (a prefetch of the answer's own
    # follow-ups may start, so only these operations are counted).
    result = await call(client, "get_issue", {"key": keys[0]})
    check(prefetched("Issue") == set() and structured(result)["key"] == keys[0], "served from the prefetch")
    result = await call(client, "get_issue_comments", {"key": thread})
    check(thread not in prefetched("IssueComments") and structured(result)["key"] == thread,
          "comments served from the prefetch")

    # A write makes the prefetched issue stale: the next read asks again.
    await call(client, "update_issue", {"key": keys[0], "title": "Renamed"})
    fake.clear()
    result = await call(client, "get_issue", {"key": keys[0]})
    check(structured(result)["title"] == "Renamed", f"not stale: {structured(result)}")
    check(keys[0] in prefetched("Issue"), f"asked again: {fake.operations()}")
    check(fake.operations("mutation") == [], "no mutation but the one asked for")


async def main():
    fake = linear()
    async with provider_session(opts.toolhost, opts.plugin, "linear", fake, CONFIG, prefix="") as client:
        await tools(client, fake)
    fake.stop()
    fake = linear()
    async with provider_session(opts.toolhost, opts.plugin, "linear", fake, CONFIG, prefix="",
                                extra_toml=SPECULATION) as client:
        await prefetch(client, fake)
    fake.stop()
    print("ok: linear")


run(main)
