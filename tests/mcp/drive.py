"""Drive `toolhost serve` with the official Python MCP SDK, over stdio or
streamable HTTP, and check what an MCP client sees: the tool list, each
native tool, a before-call block, an invalid-args error naming its field,
progress, a cancelled call, and (with --upstream) a proxied third-party
server whose `echo` tool an enricher adapted.

Run by tests/mcp_python.rs; exits non-zero with a message on the first
check that fails.
"""

import argparse
import os
import tempfile

import anyio

from driver import check, connect, read, run, text, wait_until


async def exercise(session, log_path, upstream):
    await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    for name in ["read", "glob", "grep", "ls", "web_fetch", "word_count", "slow_count"]:
        check(name in tools, f"{name} is not listed: {sorted(tools)}")

    r = await session.call_tool("read", {"path": "hello.txt", "offset": 2, "limit": 1})
    check(not r.is_error, f"read failed: {text(r)}")
    check(r.structured_content["content"] == "second needle", f"read: {r.structured_content}")
    check(r.structured_content["lines"] == [2, 2], f"read lines: {r.structured_content}")
    r = await session.call_tool("glob", {"pattern": "**/*.txt"})
    check(r.structured_content["paths"] == ["hello.txt", "sub/deep.txt"], f"glob: {r.structured_content}")
    r = await session.call_tool("grep", {"pattern": "needle"})
    found = [(m["path"], m["line"]) for m in r.structured_content["matches"]]
    check(found == [("hello.txt", 2), ("sub/deep.txt", 1)], f"grep: {found}")
    r = await session.call_tool("ls", {"path": "sub"})
    check([e["name"] for e in r.structured_content["entries"]] == ["deep.txt"], f"ls: {r.structured_content}")
    r = await session.call_tool("web_fetch", {"url": "https://example.com/"})
    check(r.is_error and "not allowed" in text(r), f"web_fetch to an unlisted host: {text(r)}")
    r = await session.call_tool("read", {"path": "../outside.txt"})
    check(r.is_error and "outside the tool root" in text(r), f"escape: {text(r)}")

    r = await session.call_tool("word_count", {"text": "a FORBIDDEN word"})
    check(r.is_error and text(r) == "text mentions a forbidden word", f"block: {text(r)}")
    r = await session.call_tool("word_count", {"unique": True})
    check(r.is_error, "invalid args were accepted")
    check(
        text(r).startswith('Validation failed for tool "word_count":\n  - text: required property missing'),
        f"invalid args: {text(r)}",
    )
    r = await session.call_tool("word_count", {"input": "one two"})
    check(not r.is_error and r.structured_content == {"words": 2}, f"prepare-arguments: {text(r)}")

    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total))

    r = await session.call_tool("slow_count", {"n": 3}, progress_callback=on_progress)
    check(text(r) == "counted to 3", f"slow_count: {text(r)}")
    # A report not yet sent is replaced by a newer one: some of the first
    # may be skipped, never the final one.
    check(
        seen and seen[-1] == (3, 3) and all(t == 3 for _, t in seen)
        and all(a[0] < b[0] for a, b in zip(seen, seen[1:])),
        f"progress: {seen}",
    )

    # Cancel a call that would run for minutes once it has reported progress;
    # the SDK sends notifications/cancelled and the server logs the outcome.
    started = anyio.Event()

    async def on_first(progress, total, message):
        started.set()

    async with anyio.create_task_group() as group:

        async def long_call():
            await session.call_tool("slow_count", {"n": 10_000_000}, progress_callback=on_first)

        group.start_soon(long_call)
        await started.wait()
        group.cancel_scope.cancel()
    await wait_until(lambda: "slow_count cancelled" in read(log_path), "the server logs the cancellation")
    r = await session.call_tool("word_count", {"text": "still serving"})
    check(r.structured_content == {"words": 2}, f"after cancel: {text(r)}")

    if upstream:
        echo = tools.get("ev_echo")
        check(echo is not None, f"the upstream echo is not listed: {sorted(tools)}")
        check("shout" in echo.input_schema["properties"], f"echo not enriched: {echo.input_schema}")
        check("set `shout`" in echo.description, f"echo description: {echo.description}")
        r = await session.call_tool("ev_echo", {"message": "hello", "shout": True})
        check(not r.is_error and text(r) == "Echo: HELLO", f"ev_echo: {text(r)}")
        r = await session.call_tool("ev_echo", {"message": 42})
        check(text(r) == "Echo: 42", f"ev_echo coerced: {text(r)}")


def workspace():
    top = tempfile.mkdtemp(prefix="toolhost-mcp-")
    root = os.path.join(top, "root")
    os.makedirs(os.path.join(root, "sub"))
    with open(os.path.join(root, "hello.txt"), "w") as f:
        f.write("first\nsecond needle\nthird\n")
    with open(os.path.join(root, "sub", "deep.txt"), "w") as f:
        f.write("needle deep\n")
    with open(os.path.join(top, "outside.txt"), "w") as f:
        f.write("needle outside\n")
    return top, root


def config(top, args):
    path = os.path.join(top, "toolhost.toml")
    with open(path, "w") as f:
        f.write('root = "root"\n')
        if args.upstream:
            f.write(
                "[[upstream]]\n"
                'name = "everything"\n'
                'command = "node"\n'
                f'args = ["{args.upstream}", "stdio"]\n'
                'category = "demo"\n'
                'prefix = "ev_"\n'
            )
    return path


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolhost", required=True)
    parser.add_argument("--plugins", required=True)
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    parser.add_argument("--upstream", help="server-everything's dist/index.js")
    args = parser.parse_args()
    top, root = workspace()
    common = ["-v", "--no-cache", "--config", config(top, args), "--plugins", args.plugins, "serve"]
    log_path = os.path.join(top, "server.log")
    async with connect(args.toolhost, common, args.transport, top, log_path) as client:
        await exercise(client, log_path, args.upstream)
    print(f"ok: {args.transport}" + (" with upstream" if args.upstream else ""))


if __name__ == "__main__":
    run(main)
