"""What an upstream server asks of its client during a call, relayed by
`toolhost serve` to the client that made the call, driven with the
official Python MCP SDK over `@modelcontextprotocol/server-everything`
(stdio) and tests/mcp/hostile_server.py:

- `listed`: the tools that ask their client (elicitation, URL
  elicitation, sampling) are served through toolhost.
- `elicitation`: a form elicitation answered accept (the client's
  content reaches the server), decline and cancel.
- `url`: a URL elicitation reaches the client with its URL.
- `sampling`: a sampling request answered with the client's completion.
- `undeclared`: a client that declared neither capability: the server
  is told so at once, and the call's result says it.
- `forged-answer` (HTTP): another session posts an answer to the calling
  session's elicitation under its id: it is not taken; the caller's is.
- `ambiguous` (HTTP): with a call of one session in flight on a stdio
  server, an elicitation another session's call causes cannot be told
  apart: it is refused, and the first session's is still answered.
- `concurrent-http`: server-everything reached by `url` (streamable
  HTTP), two toolhost sessions asked at once: each question arrives on
  its call's response stream, so each goes to its own caller and each
  call gets its own caller's answer.
- `progress`: a server's progress on a call reaches the client that made
  it, under the client's own progress token.
- `cancelled`: a call the client cancels is cancelled upstream.
- `flood`: a server asking 12 questions at once: 4 reach the client, the
  rest are refused at once, the 4 unanswered end at `relay_timeout_s`.

Run by tests/mcp_upstreams.rs; exits non-zero with a message on the first
check that fails.
"""

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from driver import check, everything_over_http, read, run, stdio_env, text, wait_until

ELICITS = "ev_trigger-elicitation-request"
URL_ELICITS = "ev_trigger-url-elicitation"
SAMPLES = "ev_trigger-sampling-request"


def workspace(top, upstream):
    """toolhost.toml serving `upstream` (TOML), an empty plugin directory;
    the arguments of `toolhost serve`."""
    os.makedirs(os.path.join(top, "root"), exist_ok=True)
    os.makedirs(os.path.join(top, "plugins"), exist_ok=True)
    config = os.path.join(top, "toolhost.toml")
    with open(config, "w") as f:
        f.write('root = "root"\n' + upstream)
    return ["-v", "--no-cache", "--config", config, "--plugins", os.path.join(top, "plugins"), "serve"]


def everything(args):
    return (
        '[[upstream]]\nname = "everything"\nprefix = "ev_"\ncommand = "node"\n'
        f"args = {json.dumps([args.everything, 'stdio'])}\n"
    )


def hostile(args):
    return (
        '[[upstream]]\nname = "hostile"\nprefix = "h_"\n'
        f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([args.hostile])}\n"
        "relay_timeout_s = 1\n"
    )


@contextlib.asynccontextmanager
async def over_stdio(args, top, upstream, **callbacks):
    """An initialised session to toolhost over stdio, with `callbacks`
    (which declare the client's capabilities)."""
    argv = workspace(top, upstream)
    with open(os.path.join(top, "toolhost.log"), "w") as log:
        params = StdioServerParameters(command=args.toolhost, args=argv, cwd=top, env=stdio_env())
        async with stdio_client(params, errlog=log) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream, **callbacks) as session:
                await session.initialize()
                yield session


@contextlib.asynccontextmanager
async def over_http(args, top, upstream):
    """toolhost serving streamable HTTP: its URL."""
    argv = workspace(top, upstream)
    log_path = os.path.join(top, "toolhost.log")
    with open(log_path, "w") as log:
        server = subprocess.Popen([args.toolhost, *argv, "--http", "127.0.0.1:0"], cwd=top, stderr=log)
        try:
            await wait_until(
                lambda: server.poll() is not None or "serving MCP at" in read(log_path),
                "toolhost serving HTTP",
            )
            check(server.poll() is None, "toolhost exited: " + read(log_path))
            yield re.search(r"serving MCP at (\S+)", read(log_path)).group(1)
        finally:
            server.terminate()
            server.wait()


@contextlib.asynccontextmanager
async def http_session(url, **callbacks):
    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1], **callbacks) as session:
            await session.initialize()
            yield session


async def listed(session, names):
    """The tools served once `names` are among them: server-everything
    lists the tools that ask its client only after `initialized`."""
    with anyio.fail_after(60):
        while True:
            have = {t.name for t in (await session.list_tools()).tools}
            if names <= have:
                return have
            await anyio.sleep(0.05)


def answering(*answers):
    """An elicitation callback giving `answers` in turn; what it was asked."""
    asked = []

    async def on_elicit(context, params):
        asked.append(params)
        return answers[len(asked) - 1]

    return on_elicit, asked


async def on_sample(context, params):
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="forty-two, said the client"),
        model="relay-test-model",
        stop_reason="endTurn",
    )


async def tools_listed(args, top):
    on_elicit, _ = answering()
    async with over_stdio(args, top, everything(args), elicitation_callback=on_elicit, sampling_callback=on_sample) as s:
        await listed(s, {ELICITS, URL_ELICITS, SAMPLES})


async def elicitation(args, top):
    on_elicit, asked = answering(
        types.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True}),
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="cancel"),
    )
    async with over_stdio(args, top, everything(args), elicitation_callback=on_elicit) as s:
        await listed(s, {ELICITS})
        r = await s.call_tool(ELICITS, {})
        check(not r.is_error and "- Name: Ada Lovelace" in text(r) and "- Agreed to terms: true" in text(r), f"accept: {text(r)}")
        check(len(asked) == 1 and asked[0].message.startswith("Please provide inputs"), f"asked: {asked}")
        check("name" in asked[0].requested_schema["properties"], f"the schema: {asked[0].requested_schema}")
        r = await s.call_tool(ELICITS, {})
        check(not r.is_error and "User declined" in text(r), f"decline: {text(r)}")
        r = await s.call_tool(ELICITS, {})
        check(not r.is_error and "User cancelled" in text(r), f"cancel: {text(r)}")
        check(len(asked) == 3, f"asked {len(asked)} times")


async def url(args, top):
    on_elicit, asked = answering(types.ElicitResult(action="accept"))
    async with over_stdio(args, top, everything(args), elicitation_callback=on_elicit) as s:
        await listed(s, {URL_ELICITS})
        link = "https://example.com/relay-test"
        r = await s.call_tool(URL_ELICITS, {"url": link, "message": "Sign in, please.", "elicitationId": "e-7"})
        check(not r.is_error and "completed the URL elicitation" in text(r), f"url: {text(r)}")
        check(len(asked) == 1, f"asked {len(asked)} times")
        p = asked[0]
        check(p.mode == "url" and p.url == link and p.message == "Sign in, please." and p.elicitation_id == "e-7", f"asked: {p}")


async def sampling(args, top):
    sampled = []

    async def on_sample_recorded(context, params):
        sampled.append(params)
        return await on_sample(context, params)

    async with over_stdio(args, top, everything(args), sampling_callback=on_sample_recorded) as s:
        await listed(s, {SAMPLES})
        r = await s.call_tool(SAMPLES, {"prompt": "what is six times seven?", "maxTokens": 40})
        t = text(r)
        check(not r.is_error and "forty-two, said the client" in t and "relay-test-model" in t, f"sampling: {t}")
        check(len(sampled) == 1 and "six times seven" in sampled[0].messages[0].content.text, f"sampled: {sampled}")
        check(sampled[0].max_tokens == 40, f"sampled: {sampled}")


async def undeclared(args, top):
    # No callbacks: the client declares neither capability.
    async with over_stdio(args, top, everything(args)) as s:
        await listed(s, {ELICITS, SAMPLES})
        with anyio.fail_after(60):
            r = await s.call_tool(ELICITS, {})
        check(r.is_error and "the calling client did not declare the elicitation capability" in text(r), f"elicitation: {text(r)}")
        with anyio.fail_after(60):
            r = await s.call_tool(SAMPLES, {"prompt": "hi", "maxTokens": 10})
        check(r.is_error and "the calling client did not declare the sampling capability" in text(r), f"sampling: {text(r)}")
    log = read(os.path.join(top, "toolhost.log"))
    check("upstream `everything`: elicitation/create not relayed" in log, "the refusal is not logged")


def post(url, body, headers):
    """A raw JSON-RPC POST: status, headers, body."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **headers}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def held():
    """An elicitation callback that holds its answer until released."""
    state = {"asked": anyio.Event(), "release": anyio.Event(), "ids": []}

    async def on_elicit(context, params):
        state["ids"].append(context.request_id)
        state["asked"].set()
        await state["release"].wait()
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    return on_elicit, state


async def forged_answer(args, top):
    on_elicit, state = held()
    async with over_http(args, top, everything(args)) as url, http_session(url, elicitation_callback=on_elicit) as a:
        await listed(a, {ELICITS})
        result = {}

        async def call():
            result["r"] = await a.call_tool(ELICITS, {})

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(call)
            with anyio.fail_after(60):
                await state["asked"].wait()
            # Mallory: a session of her own, answering the request A was sent.
            headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
            send = lambda body: anyio.to_thread.run_sync(post, url, body, headers)  # noqa: E731
            init = {
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                           "clientInfo": {"name": "mallory", "version": "1"}},
            }  # fmt: skip
            status, got, body = await send(init)
            check(status == 200 and got.get("mcp-session-id"), f"initialize: {status} {body}")
            headers["Mcp-Session-Id"] = got.get("mcp-session-id")
            status, _, body = await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            check(status == 202, f"initialized: {status} {body}")
            forged = {"jsonrpc": "2.0", "id": state["ids"][0], "result": {"action": "accept", "content": {"name": "Mallory"}}}
            status, _, body = await send(forged)
            check(status in (200, 202), f"the forged answer: {status} {body}")
            # A round trip on her session after it: the forged answer was read.
            status, _, body = await send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
            check(status == 200, f"ping: {status} {body}")
            state["release"].set()
        t = text(result["r"])
        check("- Name: Ada" in t and "Mallory" not in t, f"the call's result: {t}")
        check(len(state["ids"]) == 1, f"asked {len(state['ids'])} times")


async def ambiguous(args, top):
    on_elicit, state = held()
    b_asked, _ = answering()
    b_seen = []

    async def on_elicit_b(context, params):
        b_seen.append(params)
        return await b_asked(context, params)

    async with over_http(args, top, everything(args)) as url:
        async with http_session(url, elicitation_callback=on_elicit) as a, http_session(url, elicitation_callback=on_elicit_b) as b:
            await listed(a, {ELICITS})
            result = {}

            async def call():
                result["r"] = await a.call_tool(ELICITS, {})

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call)
                with anyio.fail_after(60):
                    await state["asked"].wait()
                # A's call is in flight on the stdio server, which cannot
                # say which call its next question is for.
                with anyio.fail_after(60):
                    r = await b.call_tool(ELICITS, {})
                check(r.is_error and "calls of several callers are in flight" in text(r), f"B: {text(r)}")
                check(not b_seen, f"B was asked: {b_seen}")
                state["release"].set()
            t = text(result["r"])
            check(not result["r"].is_error and "- Name: Ada" in t, f"A: {t}")


async def flood(args, top):
    asked = []

    async def on_elicit(context, params):
        asked.append(params)
        await anyio.sleep_forever()

    async with over_stdio(args, top, hostile(args), elicitation_callback=on_elicit) as s:
        with anyio.fail_after(60):
            r = await s.call_tool("h_flood", {"n": 12})
        t = text(r)
        check(len(asked) == 4, f"the client was asked {len(asked)} questions:\n{t}")
        check(
            "8 x toolhost did not relay elicitation/create: 4 requests to the calling client are in flight already" in t,
            f"the flood's excess is not refused at once:\n{t}",
        )
        check(
            "4 x toolhost did not relay elicitation/create: the calling client: no answer within 1 s (`relay_timeout_s`)"
            in t,
            f"the questions asked did not end at their deadline:\n{t}",
        )


async def concurrent_http(args, top):
    both = anyio.Event()
    asked = []

    def answering_as(name):
        async def on_elicit(context, params):
            asked.append(name)
            if len(asked) == 2:
                both.set()
            # Neither answers until both were asked: both calls in flight.
            await both.wait()
            return types.ElicitResult(action="accept", content={"name": name})

        return on_elicit

    async with (
        everything_over_http(args.everything, top) as everything,
        over_http(args, top, f'[[upstream]]\nname = "everything"\nprefix = "ev_"\nurl = "{everything}"\n') as url,
        http_session(url, elicitation_callback=answering_as("Ada")) as a,
        http_session(url, elicitation_callback=answering_as("Bob")) as b,
    ):
        await listed(a, {ELICITS})
        await listed(b, {ELICITS})
        results = {}

        async def call(name, session):
            results[name] = await session.call_tool(ELICITS, {})

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call, "Ada", a)
                tasks.start_soon(call, "Bob", b)
        for name, other in (("Ada", "Bob"), ("Bob", "Ada")):
            t = text(results[name])
            check(f"- Name: {name}" in t and other not in t, f"{name}'s call: {t}")
        check(sorted(asked) == ["Ada", "Bob"], f"asked: {asked}")


async def progress(args, top):
    seen = []

    async def on_progress(done, total, message):
        seen.append((done, total))

    async with over_stdio(args, top, everything(args)) as s:
        r = await s.call_tool(
            "ev_trigger-long-running-operation", {"duration": 0.3, "steps": 3}, progress_callback=on_progress
        )
        check(not r.is_error and "Steps: 3" in text(r), f"the call: {text(r)}")
        check(seen and seen[-1] == (3, 3) and all(t == 3 for _, t in seen), f"progress seen: {seen}")


async def cancelled(args, top):
    mark = os.path.join(top, "cancelled.txt")
    async with over_stdio(args, top, hostile(args)) as s:
        with anyio.move_on_after(60) as waited:
            async with anyio.create_task_group() as tasks:

                async def call():
                    await s.call_tool("h_linger", {"mark": os.path.join(top, "started.txt"), "cancelled": mark})

                tasks.start_soon(call)
                await wait_until(lambda: os.path.exists(os.path.join(top, "started.txt")), "the upstream call started")
                # Leaving the scope cancels the call: the SDK sends notifications/cancelled.
                tasks.cancel_scope.cancel()
        check(not waited.cancel_called, "the call did not start")
        await wait_until(lambda: os.path.exists(mark), "the upstream call cancelled")
        # The session still serves.
        r = await s.call_tool("h_echo", {"text": "still here"})
        check(text(r) == "still here", f"after: {text(r)}")


SCENARIOS = {
    "listed": tools_listed,
    "elicitation": elicitation,
    "url": url,
    "sampling": sampling,
    "undeclared": undeclared,
    "forged-answer": forged_answer,
    "ambiguous": ambiguous,
    "flood": flood,
    "concurrent-http": concurrent_http,
    "progress": progress,
    "cancelled": cancelled,
}


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolhost", required=True)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), required=True)
    parser.add_argument("--everything", required=True, help="server-everything's dist/index.js")
    parser.add_argument("--hostile", required=True, help="tests/mcp/hostile_server.py")
    args = parser.parse_args()
    top = tempfile.mkdtemp(prefix="toolhost-relay-")
    await SCENARIOS[args.scenario](args, top)
    print(f"ok: {args.scenario}")


if __name__ == "__main__":
    run(main)
