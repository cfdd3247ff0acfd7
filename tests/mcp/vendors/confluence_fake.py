"""A loopback fake of Confluence Cloud's REST API v2
(https://developer.atlassian.com/cloud/confluence/rest/v2/) and v1's CQL
search (`/wiki/rest/api/search`), following their documented shapes:

- v2 lists answer `{"results": [...], "_links": {"next": ...}}` and page by
  `limit` and an opaque `cursor`, with the next URL (site-relative) in the
  `Link` header;
- pages carry `version.number` and, with `body-format=storage`, the body in
  `body.storage`; an update must send the next version number, else 409;
- v2 errors are `{"errors": [{"status", "code", "title", "detail"}]}`; v1's
  are `{"statusCode", "message"}`;
- the CQL search understands the subset the plugin writes (`type = page`,
  `text ~ "..."`, `space = "..."`); anything else is a 400.
"""

import base64
import re

from fake import TOKEN, Fake

AUTH = f"Basic {TOKEN}"


def v2_error(status, code, title, detail=None):
    return status, {"errors": [{"status": status, "code": code, "title": title, "detail": detail}]}


def cursor(offset):
    return base64.urlsafe_b64encode(f"next:{offset}".encode()).decode()


def uncursor(c):
    return int(base64.urlsafe_b64decode(c.encode()).decode().split(":")[1])


def confluence(delay_s=0.0):
    fake = Fake("Confluence", delay_s)
    fake.revoked = False
    spaces = [{"id": str(100 + i), "key": key, "name": name, "type": "global", "status": "current",
               "homepageId": str(1000 + i * 100), "_links": {"webui": f"/spaces/{key}"}}
              for i, (key, name) in enumerate([("ENG", "Engineering"), ("OPS", "Operations"), ("HR", "People")])]
    pages = {}
    for i in range(12):
        pid = str(1000 + i)
        pages[pid] = {"id": pid, "status": "current", "title": f"Runbook {i}" if i % 2 else f"Design {i}",
                      "spaceId": "100", "parentId": "1000" if i else None, "parentType": "page" if i else None,
                      "authorId": "acc-alice", "createdAt": "2026-11-01T10:00:00.000Z",
                      "version": {"number": 1 + i % 3, "createdAt": "2026-11-02T10:00:00.000Z", "authorId": "acc-alice"},
                      "body": {"storage": {"representation": "storage", "value": f"<p>Body of page {i}</p>"}},
                      "_links": {"webui": f"/spaces/ENG/pages/{pid}"}}

    def guarded(handler):
        def check(seen, *groups):
            if fake.revoked or seen.headers.get("authorization") != AUTH:
                return v2_error(401, "UNAUTHORIZED", "Unauthorized", "Basic authentication with passwords is deprecated")
            return handler(seen, *groups)
        return check

    def route(method, pattern):
        def register(handler):
            fake.route(method, pattern)(guarded(handler))
            return handler
        return register

    def listing(seen, items, path):
        limit = int(seen.query.get("limit", 25))
        start = uncursor(seen.query["cursor"]) if "cursor" in seen.query else 0
        chunk = items[start:start + limit]
        body, headers = {"results": chunk, "_links": {"base": f"{fake.url}/wiki"}}, {}
        if start + limit < len(items):
            query = "&".join(f"{k}={v}" for k, v in {**seen.query, "cursor": cursor(start + limit)}.items())
            nxt = f"{path}?{query}"
            body["_links"]["next"] = nxt
            headers["link"] = f'<{nxt}>; rel="next"'
        return 200, body, headers

    def shown(page, body_format):
        out = {k: v for k, v in page.items() if k != "body"}
        out["body"] = {"storage": page["body"]["storage"]} if body_format == "storage" else {}
        return out

    @route("GET", "/wiki/api/v2/spaces")
    def list_spaces(seen):
        found = spaces
        if keys := seen.query.get("keys"):
            found = [s for s in spaces if s["key"] in keys.split(",")]
        return listing(seen, found, seen.path)

    @route("GET", r"/wiki/api/v2/spaces/(\d+)/pages")
    def space_pages(seen, space):
        if space not in {s["id"] for s in spaces}:
            return v2_error(404, "NOT_FOUND", "Not Found")
        found = [shown(p, seen.query.get("body-format")) for p in pages.values() if p["spaceId"] == space]
        return listing(seen, found, seen.path)

    @route("GET", r"/wiki/api/v2/pages/(\d+)")
    def get_page(seen, pid):
        if pid == "4030":
            return v2_error(403, "FORBIDDEN", "Forbidden", "You do not have permission to view this page")
        if pid not in pages:
            return v2_error(404, "NOT_FOUND", "Not Found", f"Page {pid} does not exist")
        return 200, shown(pages[pid], seen.query.get("body-format"))

    @route("POST", "/wiki/api/v2/pages")
    def create_page(seen):
        body = seen.body or {}
        if body.get("spaceId") not in {s["id"] for s in spaces}:
            return v2_error(400, "INVALID_REQUEST_PARAMETER", "Provided value {%s} for 'spaceId' is not the correct type."
                            % body.get("spaceId"))
        if any(p["title"] == body.get("title") and p["spaceId"] == body["spaceId"] for p in pages.values()):
            return v2_error(400, "INVALID_MESSAGE", "A page with this title already exists: A page already exists "
                            "with the same TITLE in this space")
        pid = str(1000 + len(pages))
        pages[pid] = {"id": pid, "status": body.get("status", "current"), "title": body["title"],
                      "spaceId": body["spaceId"], "parentId": body.get("parentId"), "authorId": "acc-alice",
                      "createdAt": "2026-12-01T10:00:00.000Z", "version": {"number": 1},
                      "body": {"storage": {"representation": "storage", "value": body["body"]["value"]}},
                      "_links": {"webui": f"/spaces/ENG/pages/{pid}"}}
        return 200, shown(pages[pid], "storage")

    @route("PUT", r"/wiki/api/v2/pages/(\d+)")
    def update_page(seen, pid):
        if pid not in pages:
            return v2_error(404, "NOT_FOUND", "Not Found")
        body, page = seen.body or {}, pages[pid]
        wanted = page["version"]["number"] + 1
        if body.get("version", {}).get("number") != wanted:
            return v2_error(409, "CONFLICT", "Version must be incremented on update. Current version is: %d"
                            % page["version"]["number"])
        page["title"] = body["title"]
        page["version"] = {"number": wanted}
        page["body"] = {"storage": {"representation": "storage", "value": body["body"]["value"]}}
        return 200, shown(page, "storage")

    @route("GET", "/wiki/rest/api/search")
    def search(seen):
        cql = seen.query.get("cql", "")
        preds = []
        for clause in cql.split(" AND "):
            q = r'"((?:[^"\\]|\\.)*)"'
            if clause == "type = page":
                continue
            if m := re.fullmatch(rf"text ~ {q}", clause):
                preds.append(lambda p, t=m[1].lower(): t in (p["title"] + p["body"]["storage"]["value"]).lower())
            elif m := re.fullmatch(rf"space = {q}", clause):
                ids = {s["id"] for s in spaces if s["key"] == m[1]}
                preds.append(lambda p, ids=ids: p["spaceId"] in ids)
            else:
                return 400, {"statusCode": 400, "message": f"Could not parse cql : {cql}", "data": {"authorized": True}}
        found = [p for p in pages.values() if all(f(p) for f in preds)]
        limit = int(seen.query.get("limit", 25))
        results = [{"content": {"id": p["id"], "type": "page", "status": "current", "title": p["title"]},
                    "title": p["title"], "excerpt": p["body"]["storage"]["value"][3:-4],
                    "url": p["_links"]["webui"], "lastModified": "2026-11-02T10:00:00.000Z"} for p in found[:limit]]
        return 200, {"results": results, "start": 0, "limit": limit, "size": len(results), "totalSize": len(found)}

    fake.spaces, fake.pages = spaces, pages
    return fake.start()
