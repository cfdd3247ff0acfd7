"""Drive `toolhost serve` (stdio) with the official Python MCP SDK over
upstream MCP servers, and check what an MCP client sees:

- `--scenario http`: server-everything in its streamable-HTTP mode, reached
  by `url`, is listed and called through toolhost; an upstream URL with
  nothing listening is reported by name and the rest is still served.
- `--scenario list-changed`: an upstream (tests/mcp/changing_server.py)
  that adds a tool at run time: the client is sent tools/list_changed, the
  next tools/list has the new tool, and calling it works.
- `--scenario list-changed-http`: the same with toolhost serving streamable
  HTTP to two client sessions: the one that did not trigger the change is
  told too.

Run by tests/mcp_upstreams.rs; exits non-zero with a message on the first
check that fails.
"""

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from driver import check, read, recorder, run, stdio_env, text, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def workspace(top, upstreams):
    """The tool root, an empty plugin directory and toolhost.toml with
    `upstreams`; the arguments of `toolhost serve`."""
    os.makedirs(os.path.join(top, "root"), exist_ok=True)
    with open(os.path.join(top, "root", "hello.txt"), "w") as f:
        f.write("hello\n")
    os.makedirs(os.path.join(top, "plugins"), exist_ok=True)
    config = os.path.join(top, "toolhost.toml")
    with open(config, "w") as f:
        f.write('root = "root"\n' + upstreams)
    return ["-v", "--no-cache", "--config", config, "--plugins", os.path.join(top, "plugins"), "serve"]


async def serve(args, top, upstreams, exercise):
    """Run toolhost over stdio with `upstreams` (TOML) and a client session
    that records tools/list_changed notifications."""
    common = workspace(top, upstreams)
    log_path = os.path.join(top, "toolhost.log")
    on_message, changed = recorder()
    with open(log_path, "w") as log:
        params = StdioServerParameters(command=args.toolhost, args=common, cwd=top, env=stdio_env())
        async with stdio_client(params, errlog=log) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream, message_handler=on_message) as session:
                await session.initialize()
                await exercise(session, log_path, changed)


async def over_http(args, top):
    port = free_port()
    log_path = os.path.join(top, "everything.log")
    # Bound but not listening: connections to it are refused, and no other
    # process can take the port while the test runs.
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead_port = dead.getsockname()[1]
    with open(log_path, "w") as log:
        everything = subprocess.Popen(
            ["node", args.everything, "streamableHttp"],
            env={**os.environ, "PORT": str(port)},
            stdout=log,
            stderr=log,
        )
        try:
            await wait_until(
                lambda: everything.poll() is not None or f"listening on port {port}" in read(log_path),
                "server-everything listening",
            )
            check(everything.poll() is None, "server-everything exited: " + read(log_path))
            upstreams = (
                "[[upstream]]\n"
                'name = "everything"\n'
                f'url = "http://127.0.0.1:{port}/mcp"\n'
                'headers = { "X-Test" = "toolhost" }\n'
                'prefix = "ev_"\n'
                "[[upstream]]\n"
                'name = "nowhere"\n'
                f'url = "http://127.0.0.1:{dead_port}/mcp"\n'
                'prefix = "no_"\n'
            )

            async def exercise(session, toolhost_log, changed):
                listed = (await session.list_tools()).tools
                tools = {t.name for t in listed}
                check({"ev_echo", "ev_get-sum", "read"} <= tools, f"tools: {sorted(tools)}")
                # Read from the server's event stream past rmcp's types.
                research = next((t for t in listed if t.name == "ev_simulate-research-query"), None)
                execution = research and research.execution and research.execution.task_support
                check(execution == "required", f"ev_simulate-research-query's execution over HTTP: {execution}")
                check(not any(t.startswith("no_") for t in tools), f"tools of a dead upstream: {sorted(tools)}")
                r = await session.call_tool("ev_echo", {"message": "over http"})
                check(not r.is_error and text(r) == "Echo: over http", f"ev_echo: {text(r)}")
                r = await session.call_tool("ev_get-sum", {"a": 2, "b": 40})
                check(not r.is_error and "42" in text(r), f"ev_get-sum: {text(r)}")
                log = read(toolhost_log)
                check(
                    f"upstream `nowhere`: cannot connect to http://127.0.0.1:{dead_port}/mcp" in log,
                    f"the dead upstream is not reported by name:\n{log}",
                )
                check("refused" in log.lower(), f"the reason is not given:\n{log}")
                r = await session.call_tool("read", {"path": "hello.txt"})
                check(not r.is_error and "hello" in text(r), f"read: {text(r)}")

            await serve(args, top, upstreams, exercise)
        finally:
            everything.terminate()
            everything.wait()
            dead.close()


CHANGING = (
    "[[upstream]]\n"
    'name = "changing"\n'
    f'command = "{sys.executable}"\n'
    f'args = ["{os.path.join(HERE, "changing_server.py")}"]\n'
    'prefix = "up_"\n'
)


async def list_changed(args, top):
    upstreams = CHANGING

    async def exercise(session, toolhost_log, changed):
        tools = {t.name for t in (await session.list_tools()).tools}
        check("up_add_tool" in tools and "up_greet" not in tools, f"tools before: {sorted(tools)}")
        r = await session.call_tool("up_add_tool", {"name": "greet"})
        check(not r.is_error and text(r) == "added greet", f"up_add_tool: {text(r)}")
        await wait_until(lambda: changed, "tools/list_changed from toolhost")
        tools = {t.name for t in (await session.list_tools()).tools}
        check({"up_add_tool", "up_greet", "read"} <= tools, f"tools after: {sorted(tools)}")
        r = await session.call_tool("up_greet", {"who": "the client"})
        check(not r.is_error and text(r) == "greet greets the client", f"up_greet: {text(r)}")
        r = await session.call_tool("up_greet", {})
        check(r.is_error and "who" in text(r), f"the new tool's schema is not enforced: {text(r)}")
        check(len(changed) == 1, f"tools/list_changed sent {len(changed)} times")

    await serve(args, top, upstreams, exercise)


async def list_changed_over_http(args, top):
    common = workspace(top, CHANGING)
    log_path = os.path.join(top, "toolhost.log")
    with open(log_path, "w") as log:
        server = subprocess.Popen([args.toolhost, *common, "--http", "127.0.0.1:0"], cwd=top, stderr=log)
        try:
            await wait_until(
                lambda: server.poll() is not None or "serving MCP at" in read(log_path),
                "toolhost serving HTTP",
            )
            check(server.poll() is None, "toolhost exited: " + read(log_path))
            url = re.search(r"serving MCP at (\S+)", read(log_path)).group(1)
            on_first, first_changed = recorder()
            on_second, second_changed = recorder()
            async with streamable_http_client(url) as one, streamable_http_client(url) as two:
                async with (
                    ClientSession(one[0], one[1], message_handler=on_first) as first,
                    ClientSession(two[0], two[1], message_handler=on_second) as second,
                ):
                    await first.initialize()
                    await second.initialize()
                    r = await first.call_tool("up_add_tool", {"name": "wave"})
                    check(not r.is_error and text(r) == "added wave", f"up_add_tool: {text(r)}")
                    await wait_until(lambda: first_changed and second_changed, "tools/list_changed to both sessions")
                    tools = {t.name for t in (await second.list_tools()).tools}
                    check("up_wave" in tools, f"tools after: {sorted(tools)}")
                    r = await second.call_tool("up_wave", {"who": "everyone"})
                    check(not r.is_error and text(r) == "wave greets everyone", f"up_wave: {text(r)}")
        finally:
            server.terminate()
            server.wait()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolhost", required=True)
    parser.add_argument("--scenario", choices=["http", "list-changed", "list-changed-http"], required=True)
    parser.add_argument("--everything", help="server-everything's dist/index.js")
    args = parser.parse_args()
    top = tempfile.mkdtemp(prefix="toolhost-upstreams-")
    if args.scenario == "http":
        await over_http(args, top)
    elif args.scenario == "list-changed":
        await list_changed(args, top)
    else:
        await list_changed_over_http(args, top)
    print(f"ok: {args.scenario}")


if __name__ == "__main__":
    run(main)
