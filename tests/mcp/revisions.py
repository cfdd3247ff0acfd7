"""Drive `toolhost serve --watch` with the official Python MCP client pinned
to one protocol revision (`--mode legacy`: the 2025-11-25 `initialize`
handshake and its session; `--mode 2026-07-28`: no session, per-request
metadata), over stdio or streamable HTTP, and check what the client sees:

- the negotiated revision, and the tools list (the same order on every
  listing; from 2026-07-28 on, with its cache hints);
- two long calls of one client run at once: each reports progress before
  either ends (calls of one session are not serialised);
- a list change (the tool plugin removed from the watched directory)
  reaches the client: as `notifications/tools/list_changed` on the legacy
  session, on a `subscriptions/listen` stream on 2026-07-28.

Run by tests/mcp_python.rs; exits non-zero with a message on the first
check that fails.
"""

import argparse
import os
import re
import shutil
import subprocess
import tempfile

import anyio
from mcp import Client, StdioServerParameters, stdio_client

from driver import check, read, recorder, run, stdio_env, text, wait_until

NEGOTIATED = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}


async def names(client):
    listed = await client.list_tools(cache_mode="bypass")
    return [t.name for t in listed.tools], listed


async def overlapping_calls(client):
    """Two slow_count calls in flight at once: both report progress before
    the first of them ends. Serialised calls would end the first before the
    second starts."""
    events = []
    both_started = anyio.Event()

    def progress(label):
        async def on_progress(value, total, message):
            if ("progress", label) not in events:
                events.append(("progress", label))
            if sum(kind == "progress" for kind, _ in events) == 2:
                both_started.set()

        return on_progress

    async def slow(label):
        await client.call_tool("slow_count", {"n": 100_000}, progress_callback=progress(label))
        events.append(("done", label))

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            group.start_soon(slow, "a")
            group.start_soon(slow, "b")
            await both_started.wait()
            group.cancel_scope.cancel()
    first_done = next((i for i, (kind, _) in enumerate(events) if kind == "done"), len(events))
    started = {label for kind, label in events[:first_done] if kind == "progress"}
    check(started == {"a", "b"}, f"the calls did not overlap: {events}")


async def exercise(client, args, plugins, on_change):
    check(client.protocol_version == NEGOTIATED[args.mode], f"negotiated {client.protocol_version}")
    first, listed = await names(client)
    check({"read", "word_count", "slow_count"} <= set(first), f"tools: {first}")
    again, _ = await names(client)
    check(first == again, f"the order changed between two listings: {first} then {again}")
    if args.mode == "2026-07-28":
        check(listed.ttl_ms == 0, f"ttlMs: {listed.ttl_ms}")
        check(listed.cache_scope == "private", f"cacheScope: {listed.cache_scope}")
    r = await client.call_tool("word_count", {"text": "one two three"})
    check(not r.is_error and r.structured_content == {"words": 3}, f"word_count: {text(r)}")

    await overlapping_calls(client)
    r = await client.call_tool("read", {"path": "hello.txt"})
    check(not r.is_error and "hello" in text(r), f"read after the overlapping calls: {text(r)}")

    await on_change(lambda: os.remove(os.path.join(plugins, "20-text-tools.wasm")))
    after, _ = await names(client)
    check("read" in after and "word_count" not in after, f"tools after the change: {after}")


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolhost", required=True)
    parser.add_argument("--tool-plugin", required=True, help="text_tools.wasm")
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    parser.add_argument("--mode", choices=list(NEGOTIATED), required=True)
    args = parser.parse_args()
    top = tempfile.mkdtemp(prefix="toolhost-revisions-")
    plugins = os.path.join(top, "plugins")
    root = os.path.join(top, "root")
    os.makedirs(plugins)
    os.makedirs(root)
    shutil.copy(args.tool_plugin, os.path.join(plugins, "20-text-tools.wasm"))
    with open(os.path.join(root, "hello.txt"), "w") as f:
        f.write("hello\n")
    command = ["--no-cache", "--plugins", plugins, "serve", "--watch"]
    on_message, changed = recorder()

    async def legacy_change(change):
        seen = len(changed)
        change()
        await wait_until(lambda: len(changed) > seen, "tools/list_changed on the session")

    async def with_client(server, log_path):
        async with Client(server, mode=args.mode, message_handler=on_message) as client:

            async def listened_change(change):
                async with client.listen(tools_list_changed=True) as subscription:
                    check(subscription.honored.tools_list_changed, f"not honoured: {subscription.honored}")
                    change()
                    with anyio.fail_after(60):
                        async for event in subscription:
                            check(type(event).__name__ == "ToolsListChanged", f"event: {event}")
                            break

            on_change = legacy_change if args.mode == "legacy" else listened_change
            await exercise(client, args, plugins, on_change)
        log = read(log_path)
        check("reloaded (no plugins)" in log, f"the reload is not logged:\n{log}")

    log_path = os.path.join(top, "server.log")
    with open(log_path, "w") as log:
        if args.transport == "stdio":
            params = StdioServerParameters(command=args.toolhost, args=command, cwd=root, env=stdio_env())
            await with_client(stdio_client(params, errlog=log), log_path)
        else:
            server = subprocess.Popen([args.toolhost, *command, "--http", "127.0.0.1:0"], cwd=root, stderr=log)
            try:
                with anyio.fail_after(120):
                    while not (m := re.search(r"serving MCP at (\S+)", read(log_path))):
                        check(server.poll() is None, "the server exited: " + read(log_path))
                        await anyio.sleep(0.05)
                await with_client(m.group(1), log_path)
            finally:
                server.terminate()
                server.wait()
    print(f"ok: {args.transport} {args.mode}")


if __name__ == "__main__":
    run(main)
