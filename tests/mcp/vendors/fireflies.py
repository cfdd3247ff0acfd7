"""Fireflies end to end: `toolhost serve` with fireflies.wasm alone (no
`[bind]`) against the loopback fake of Fireflies' GraphQL API
(fireflies_fake.py), through the Python MCP client. Every tool's operation
and variables are checked exactly, with the Bearer key the host injected;
results, errors in the body (auth_failed, object_not_found,
invalid_arguments), rate limits, `limit`/`skip` pages of at most 50, and the
meetings → transcript prefetch, which never runs anything but a read.

    fireflies.py --toolhost PATH --plugin fireflies.wasm
"""

import argparse

from fake import SPECULATION, TOKEN, call, check, provider_session, structured, text
from driver import run, wait_until
from fireflies_fake import fireflies

parser = argparse.ArgumentParser()
parser.add_argument("--toolhost", required=True)
parser.add_argument("--plugin", required=True)
opts = parser.parse_args()


def expect(fake, op, variables=None):
    return fake.expect_graphql("/graphql", op, variables, auth=f"Bearer {TOKEN}")


def ids(result):
    return [m["id"] for m in structured(result)["meetings"]]


def pages(fake):
    return [(s.body["variables"]["limit"], s.body["variables"]["skip"]) for s in fake.requests("POST")]


async def tools(client, fake):
    names = {t.name for t in (await client.list_tools()).tools}
    check({"get_meeting_notes", "get_meeting_transcript", "search_meeting_notes"} <= names, f"served: {sorted(names)}")

    result = await call(client, "get_meeting_notes", {"limit": 5})
    expect(fake, "Transcripts", {"limit": 6, "skip": 0})
    check(ids(result) == [f"t-{n}" for n in range(60, 55, -1)], ids(result))
    first = structured(result)["meetings"][0]
    check((first["title"], first["date"], first["host"], first["summary"], first["action_items"])
          == ("Roadmap review", "2026-11-30T09:00:00.000Z", "ada@acme.test", "Overview 60", "- follow up 60"), first)
    check(structured(result)["has_more"] is True and "5 Fireflies meeting(s)" in text(result), text(result))

    fake.clear()
    result = await call(client, "get_meeting_notes", {"limit": 50})
    check(pages(fake) == [(50, 0), (1, 50)], f"pages of at most 50, one more to see the end: {pages(fake)}")
    check(len(ids(result)) == 50 and structured(result)["has_more"] is True, "50 and more")
    fake.clear()
    result = await call(client, "get_meeting_notes", {"limit": 50, "offset": 20})
    check(pages(fake) == [(50, 20)] and len(ids(result)) == 40, f"the last 40: {pages(fake)}")
    check(structured(result)["has_more"] is False, "no more")

    result = await call(client, "get_meeting_notes", {"from_date": "2026-11-01", "to_date": "2026-11-10T23:59:59Z",
                                                      "host_email": "ada@acme.test"})
    expect(fake, "Transcripts", {"fromDate": "2026-11-01", "toDate": "2026-11-10T23:59:59Z",
                                 "host_email": "ada@acme.test", "limit": 21, "skip": 0})
    check(ids(result) == ["t-39", "t-36", "t-33"], ids(result))

    fake.clear()
    result = await call(client, "get_meeting_notes", {"participants": ["alan@acme.test", "Grace@acme.test"],
                                                      "limit": 3, "offset": 1})
    expect(fake, "Transcripts", {"participant_email": "alan@acme.test", "limit": 50, "skip": 0})
    check(ids(result) == ["t-58", "t-55", "t-52"], f"attended by both: {ids(result)}")

    result = await call(client, "search_meeting_notes", {"query": "pricing"})
    expect(fake, "Transcripts", {"keyword": "pricing", "scope": "all", "limit": 21, "skip": 0})
    check(ids(result) == ["t-33"] and "matching `pricing`" in text(result), text(result))
    result = await call(client, "search_meeting_notes", {"query": "roadmap", "limit": 2, "offset": 1})
    expect(fake, "Transcripts", {"keyword": "roadmap", "scope": "all", "limit": 3, "skip": 1})
    check(ids(result) == ["t-50", "t-40"] and structured(result)["has_more"] is True, ids(result))

    result = await call(client, "get_meeting_transcript", {"meeting_id": "t-33"})
    expect(fake, "Transcript", {"id": "t-33"})
    value = structured(result)
    check(value["speakers"] == ["Ada", "Alan"] and len(value["sentences"]) == 3, value)
    check(value["sentences"][1] == {"index": 1, "speaker": "Alan", "text": "Sentence 1 of 33 about pricing",
                                    "start_s": 1.5, "end_s": 2.7}, value["sentences"][1])
    check("3 sentence(s) by 2 speaker(s)" in text(result), text(result))

    # Errors in the body, each naming Fireflies and the tool.
    result = await call(client, "get_meeting_transcript", {"meeting_id": "t-999"}, error=True)
    check("Fireflies get_meeting_transcript: not found" in text(result) and "Transcript not found" in text(result),
          text(result))
    result = await call(client, "get_meeting_notes", {"from_date": "last week"}, error=True)
    check("Fireflies get_meeting_notes: invalid arguments" in text(result)
          and "fromDate must be a Date instance" in text(result), text(result))
    fake.revoked = True
    result = await call(client, "search_meeting_notes", {"query": "x"}, error=True)
    check("401 Unauthorized" in text(result) and "secret `fireflies`" in text(result)
          and "Invalid API key" in text(result), text(result))
    fake.revoked = False

    fake.clear()
    fake.rate_limit("POST", "/graphql", times=1, retry_after="1")
    await call(client, "get_meeting_transcript", {"meeting_id": "t-1"})
    check(len(fake.requests("POST")) == 2, "429 then a retry")
    fake.rate_limit("POST", "/graphql", times=1, retry_after="3600")
    result = await call(client, "get_meeting_transcript", {"meeting_id": "t-2"}, error=True)
    check("rate limited" in text(result) and "3600 s" in text(result), text(result))


async def prefetch(client, fake):
    result = await call(client, "get_meeting_notes", {"limit": 3})
    listed = ids(result)

    def fetched():
        return {s.body["variables"]["id"] for s in fake.requests("POST")
                if s.body.get("query", "").startswith("query Transcript(")}

    await wait_until(lambda: fetched(), f"a transcript of {listed} prefetched")
    check(fetched() <= set(listed), f"only listed meetings: {fetched()}")
    check(set(fake.operations()) <= {"Transcripts", "Transcript"}, f"only reads: {fake.operations()}")
    meeting = sorted(fetched())[0]
    fake.clear()
    result = await call(client, "get_meeting_transcript", {"meeting_id": meeting})
    # Other listed meetings' prefetches may still arrive: only this one counts.
    check(meeting not in fetched() and structured(result)["meeting_id"] == meeting, "served from the prefetch")


async def main():
    fake = fireflies()
    async with provider_session(opts.toolhost, opts.plugin, "fireflies", fake, {}) as client:
        await tools(client, fake)
    fake.stop()
    fake = fireflies()
    async with provider_session(opts.toolhost, opts.plugin, "fireflies", fake, {},
                                extra_toml=SPECULATION) as client:
        await prefetch(client, fake)
    fake.stop()
    print("ok: fireflies")


run(main)
