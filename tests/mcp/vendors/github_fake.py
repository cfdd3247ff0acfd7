"""A loopback fake of GitHub's REST API v3 (https://docs.github.com/rest),
for one repository, following its documented shapes: issues (pull requests
appear in the issues list with a `pull_request` key), issue comments,
`Link` header pagination (`per_page`, `page`), 401 `Bad credentials`, 404
`Not Found`, 422 validation errors."""

import re

from fake import TOKEN, Fake

OWNER, REPO = "acme", "widgets"


def user(login):
    return {"login": login, "id": abs(hash(login)) % 10_000, "type": "User"}


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


def github(delay_s=0.0):
    fake = Fake("GitHub", delay_s)
    issues = {n: make_issue(n, f"Issue {n}", labels=("bug",) if n % 3 == 0 else ()) for n in range(1, 46)}
    issues[7] = make_issue(7, "A pull request", pr=True)
    comments = {n: [{"id": 500 + n * 10 + c, "user": user("octocat"), "body": f"Comment {c} on {n}",
                     "created_at": "2026-11-03T10:00:00Z"} for c in range(2)] for n in issues}
    base = f"/repos/{OWNER}/{REPO}"

    def authorised(seen):
        return seen.headers.get("authorization") == f"Bearer {TOKEN}"

    def page(seen, items, path):
        per_page, page_no = int(seen.query.get("per_page", 30)), int(seen.query.get("page", 1))
        start = (page_no - 1) * per_page
        chunk = items[start:start + per_page]
        headers = {}
        if start + per_page < len(items):
            query = "&".join(f"{k}={v}" for k, v in {**seen.query, "page": page_no + 1}.items())
            headers["link"] = f'<{fake.url}{path}?{query}>; rel="next"'
        return 200, chunk, headers

    @fake.route("GET", f"{base}/issues")
    def list_issues(seen):
        if not authorised(seen):
            return 401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}
        state = seen.query.get("state", "open")
        found = [i for i in sorted(issues.values(), key=lambda i: -i["number"]) if state in ("all", i["state"])]
        if labels := seen.query.get("labels"):
            want = set(labels.split(","))
            found = [i for i in found if want <= {l["name"] for l in i["labels"]}]
        return page(seen, found, seen.path)

    @fake.route("GET", f"{base}/issues/(\\d+)")
    def get_issue(seen, n):
        if int(n) not in issues:
            return 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
        return 200, issues[int(n)]

    @fake.route("GET", f"{base}/issues/(\\d+)/comments")
    def list_comments(seen, n):
        if int(n) not in issues:
            return 404, {"message": "Not Found"}
        return page(seen, comments[int(n)], seen.path)

    fake.issues, fake.comments = issues, comments
    return fake.start()
