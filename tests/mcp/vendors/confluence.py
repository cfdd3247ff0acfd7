"""Confluence end to end: `toolhost serve` with confluence.wasm alone (no
`[bind]`) against the loopback fake of Confluence Cloud's REST API v2 and
v1's CQL search (confluence_fake.py), through the Python MCP client. Every
tool's request is checked exactly, with the `Basic` token the host
injected; every result and error is checked; a rate limit is retried within
the call's budget; search → page is prefetched, never a write, and a write
is never followed by a stale read.

    confluence.py --toolhost PATH --plugin confluence.wasm
"""

import argparse

from fake import SPECULATION, TOKEN, call, check, provider_session, structured, text
from driver import run, wait_until
from confluence_fake import AUTH, confluence

parser = argparse.ArgumentParser()
parser.add_argument("--toolhost", required=True)
parser.add_argument("--plugin", required=True)
opts = parser.parse_args()

WRITES = ("POST", "PUT", "PATCH", "DELETE")


def expect(fake, method, path, query=None, body=None):
    return fake.expect(method, path, query=query, body=body, auth=AUTH)



async def tools(client, fake):
    names = {t.name for t in (await client.list_tools()).tools}
    wanted = {"get_knowledge_base_spaces", "list_knowledge_base_pages", "get_knowledge_base_page",
              "search_knowledge_base", "create_knowledge_base_page", "update_knowledge_base_page"}
    check(wanted <= names, f"served: {sorted(names)}")

    result = await call(client, "get_knowledge_base_spaces", {"limit": 2})
    expect(fake, "GET", "/wiki/api/v2/spaces", query={"limit": "2"})
    check([s["key"] for s in structured(result)["spaces"]] == ["ENG", "OPS"] and structured(result)["has_more"],
          structured(result))
    check(structured(result)["spaces"][0]["url"] == f"{fake.url}/wiki/spaces/ENG", structured(result))

    # Pages of a space: the key looked up, then cursor pages.
    fake.clear()
    result = await call(client, "list_knowledge_base_pages", {"spaceKey": "ENG", "limit": 5})
    check(fake.requests()[0].query == {"keys": "ENG"}, fake.requests()[0])
    expect(fake, "GET", "/wiki/api/v2/spaces/100/pages", query={"limit": "5"})
    first = structured(result)
    check([p["id"] for p in first["pages"]] == ["1000", "1001", "1002", "1003", "1004"], first)
    check(first["cursor"] and "more: pass `cursor`" in text(result), text(result))
    result = await call(client, "list_knowledge_base_pages", {"spaceKey": "ENG", "limit": 5, "cursor": first["cursor"]})
    expect(fake, "GET", "/wiki/api/v2/spaces/100/pages", query={"limit": "5", "cursor": first["cursor"]})
    check([p["id"] for p in structured(result)["pages"]][0] == "1005", structured(result))
    result = await call(client, "list_knowledge_base_pages", {"spaceKey": "NOPE"}, error=True)
    check("Confluence list_knowledge_base_pages: no space with key `NOPE`" in text(result), text(result))

    result = await call(client, "get_knowledge_base_page", {"pageId": "1003"})
    expect(fake, "GET", "/wiki/api/v2/pages/1003", query={"body-format": "storage"})
    page = structured(result)
    check(page["body"] == "<p>Body of page 3</p>" and page["version"] == 1 and page["title"] == "Runbook 3", page)

    # 404 and 403 (the message names the secret), v2's error shape.
    result = await call(client, "get_knowledge_base_page", {"pageId": "999"}, error=True)
    check("Confluence get_knowledge_base_page: not found" in text(result) and "Page 999 does not exist" in text(result),
          text(result))
    result = await call(client, "get_knowledge_base_page", {"pageId": "4030"}, error=True)
    check("403 Forbidden" in text(result) and "secret `confluence`" in text(result), text(result))

    result = await call(client, "search_knowledge_base", {"query": "runbook", "spaceKey": "ENG", "limit": 3})
    expect(fake, "GET", "/wiki/rest/api/search",
           query={"cql": 'type = page AND text ~ "runbook" AND space = "ENG"', "limit": "3"})
    hits = structured(result)["results"]
    check([h["id"] for h in hits] == ["1001", "1003", "1005"] and structured(result)["total"] == 6, structured(result))
    check(hits[0]["url"] == f"{fake.url}/wiki/spaces/ENG/pages/1001", hits[0])
    result = await call(client, "search_knowledge_base", {"query": 'say "hi"'})
    expect(fake, "GET", "/wiki/rest/api/search", query={"cql": 'type = page AND text ~ "say \\"hi\\""', "limit": "20"})

    # Writes: storage format from Markdown, version numbers.
    result = await call(client, "create_knowledge_base_page",
                        {"spaceKey": "ENG", "title": "On-call", "content": "# Rota\nWeek 1 <Alice>", "parentId": "1000"})
    expect(fake, "POST", "/wiki/api/v2/pages", body={
        "spaceId": "100", "status": "current", "title": "On-call", "parentId": "1000",
        "body": {"representation": "storage", "value": "<h1>Rota</h1><p>Week 1 &lt;Alice&gt;</p>"}})
    made = structured(result)
    check(made["id"] == "1012" and made["version"] == 1, made)
    # 400: Confluence's message.
    result = await call(client, "create_knowledge_base_page",
                        {"spaceKey": "ENG", "title": "On-call", "content": "again"}, error=True)
    check("invalid arguments (400)" in text(result) and "A page with this title already exists" in text(result),
          text(result))

    fake.clear()
    result = await call(client, "update_knowledge_base_page", {"pageId": "1012", "content": "Week 2"})
    check([(s.method, s.path) for s in fake.requests()] == [("GET", "/wiki/api/v2/pages/1012"),
                                                            ("PUT", "/wiki/api/v2/pages/1012")], fake.requests())
    expect(fake, "PUT", "/wiki/api/v2/pages/1012", body={
        "id": "1012", "status": "current", "title": "On-call",
        "body": {"representation": "storage", "value": "<p>Week 2</p>"}, "version": {"number": 2}})
    check(structured(result)["version"] == 2, structured(result))
    fake.clear()
    result = await call(client, "update_knowledge_base_page",
                        {"pageId": "1012", "content": "Week 3", "title": "On-call rota", "version": 2})
    check(len(fake.requests()) == 1, "title and version given: no read first")
    expect(fake, "PUT", "/wiki/api/v2/pages/1012", body={
        "id": "1012", "status": "current", "title": "On-call rota",
        "body": {"representation": "storage", "value": "<p>Week 3</p>"}, "version": {"number": 3}})
    # A stale version: 409 with Confluence's message.
    result = await call(client, "update_knowledge_base_page",
                        {"pageId": "1012", "content": "x", "title": "t", "version": 1}, error=True)
    check("invalid arguments (409)" in text(result) and "Current version is: 3" in text(result), text(result))


async def errors(client, fake):
    fake.revoked = True
    result = await call(client, "get_knowledge_base_spaces", {}, error=True)
    check("401" in text(result) and "secret `confluence`" in text(result) and TOKEN not in text(result), text(result))
    fake.revoked = False
    fake.clear()
    fake.rate_limit("GET", r"/wiki/api/v2/pages/(\d+)", times=1, retry_after="1")
    await call(client, "get_knowledge_base_page", {"pageId": "1004"})
    check(len(fake.requests("GET", "/wiki/api/v2/pages/1004")) == 2, "429 then a retry")
    fake.rate_limit("GET", r"/wiki/api/v2/pages/(\d+)", times=1, retry_after="3600")
    result = await call(client, "get_knowledge_base_page", {"pageId": "1005"}, error=True)
    check("rate limited" in text(result) and "3600 s" in text(result), text(result))


async def prefetch(client, fake):
    """search → page made ahead of time; never a write; after an update the
    page is read again, not served stale."""
    fake.clear()
    await call(client, "search_knowledge_base", {"query": "design", "limit": 3})
    for pid in ("1000", "1002", "1004"):
        await wait_until(lambda: fake.requests("GET", f"/wiki/api/v2/pages/{pid}"), f"page {pid} prefetched")
    before = len(fake.requests())
    result = await call(client, "get_knowledge_base_page", {"pageId": "1002"})
    check(structured(result)["title"] == "Design 2", structured(result))
    check(len(fake.requests()) == before, f"served from the prefetch: {fake.requests()[before:]}")
    check(all(s.method == "GET" for s in fake.requests()), [s.method for s in fake.requests()])

    await call(client, "update_knowledge_base_page", {"pageId": "1004", "content": "Rewritten", "title": "Design 4",
                                                      "version": 2})
    result = await call(client, "get_knowledge_base_page", {"pageId": "1004"})
    check(structured(result)["body"] == "<p>Rewritten</p>" and structured(result)["version"] == 3,
          "no stale page after the write")
    result = await call(client, "search_knowledge_base", {"query": "rewritten"})
    check([h["id"] for h in structured(result)["results"]] == ["1004"], "no stale search after the write")
    unasked = [(s.method, s.path) for s in fake.requests() if s.method in WRITES]
    check(unasked == [("PUT", "/wiki/api/v2/pages/1004")], unasked)


async def main():
    fake = confluence()
    async with provider_session(opts.toolhost, opts.plugin, "confluence", fake, {}, prefix="Basic ") as client:
        await tools(client, fake)
        await errors(client, fake)
    fake.stop()
    fake = confluence()
    async with provider_session(opts.toolhost, opts.plugin, "confluence", fake, {}, prefix="Basic ",
                                extra_toml=SPECULATION + '\nper_host = 8') as client:
        await prefetch(client, fake)
    fake.stop()
    print("ok: confluence")


run(main)
