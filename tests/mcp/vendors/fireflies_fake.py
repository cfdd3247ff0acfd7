"""A loopback fake of Fireflies' GraphQL API (https://docs.fireflies.ai),
following its documented shapes: `POST /graphql` with a Bearer API key;
`transcripts(keyword, scope, fromDate, toDate, limit ≤ 50, skip,
host_email, participant_email)` newest first; `transcript(id)` with
`sentences` and `speakers`; errors in the body as `errors[]` with
`message`, `code` and `extensions {code, status}` (`auth_failed` 401,
`object_not_found` 404, `invalid_arguments` 400, `too_many_requests` 429)."""

import re

from fake import TOKEN, Fake

PEOPLE = ["ada@acme.test", "alan@acme.test", "grace@acme.test"]


def error(message, code, status):
    return 200, {"data": None, "errors": [{"message": message, "code": code, "friendly": True,
                                           "extensions": {"code": code, "status": status}}]}


def fireflies(delay_s=0.0):
    fake = Fake("Fireflies", delay_s)
    meetings = []
    for n in range(60, 0, -1):
        day = f"2026-{10 + n // 31:02d}-{n % 31 + 1:02d}"
        meetings.append({
            "id": f"t-{n}", "title": "Roadmap review" if n % 10 == 0 else f"Standup {n}",
            "dateString": f"{day}T09:00:00.000Z", "duration": 30.5, "host_email": PEOPLE[n % 3],
            "organizer_email": PEOPLE[n % 3],
            "participants": sorted({PEOPLE[n % 3], PEOPLE[(n + 1) % 3]} | ({PEOPLE[2]} if n % 4 == 0 else set())),
            "transcript_url": f"https://app.fireflies.ai/view/t-{n}",
            "summary": {"overview": f"Overview {n}", "short_summary": None, "action_items": f"- follow up {n}",
                        "keywords": ["roadmap"] if n % 10 == 0 else ["standup"], "topics_discussed": []},
            "speakers": [{"id": 0, "name": "Ada"}, {"id": 1, "name": "Alan"}],
            "sentences": [{"index": i, "speaker_name": ["Ada", "Alan"][i % 2], "speaker_id": i % 2,
                           "text": f"Sentence {i} of {n}" + (" about pricing" if n == 33 and i == 1 else ""),
                           "raw_text": "", "start_time": 1.5 * i, "end_time": 1.5 * i + 1.2} for i in range(3)],
        })
    fake.meetings = meetings
    fake.revoked = False

    def guarded(handler):
        def serve(seen, v):
            if seen.headers.get("authorization") != f"Bearer {TOKEN}" or fake.revoked:
                return error("Invalid API key", "auth_failed", 401)
            return handler(seen, v)
        return serve

    def said(m, keyword, scope):
        k = keyword.lower()
        in_title = k in m["title"].lower()
        in_words = any(k in s["text"].lower() for s in m["sentences"])
        return {"title": in_title, "sentences": in_words}.get(scope, in_title or in_words)

    def transcripts(seen, v):
        limit = v.get("limit", 50)
        if limit > 50:
            return error("Invalid argument(s) were provided: limit must not be greater than 50",
                         "invalid_arguments", 400)
        for arg in ("fromDate", "toDate"):
            if v.get(arg) and not re.match(r"^\d{4}-\d{2}-\d{2}", v[arg]):
                return error(f"Invalid argument(s) were provided: {arg} must be a Date instance",
                             "invalid_arguments", 400)
        found = [m for m in meetings
                 if (not v.get("keyword") or said(m, v["keyword"], v.get("scope", "title")))
                 and (not v.get("fromDate") or m["dateString"] >= v["fromDate"])
                 and (not v.get("toDate") or m["dateString"] <= v["toDate"])
                 and (not v.get("host_email") or m["host_email"] == v["host_email"])
                 and (not v.get("participant_email") or v["participant_email"] in m["participants"])]
        skip = v.get("skip", 0)
        return 200, {"data": {"transcripts": found[skip:skip + limit]}}

    def transcript(seen, v):
        found = next((m for m in meetings if m["id"] == v["id"]), None)
        if not found:
            return error("Transcript not found", "object_not_found", 404)
        return 200, {"data": {"transcript": found}}

    fake.graphql("/graphql", {"Transcripts": guarded(transcripts), "Transcript": guarded(transcript)})
    return fake.start()
