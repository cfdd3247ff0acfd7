"""What the Python MCP drivers under tests/mcp/ share: checks that fail
with a message, waiting on a condition (not a clock), the text of a tool
result, a recorder of server notifications, a model as the JSON it came
from, a client session with `toolhost serve` over stdio or streamable
HTTP, and the `__main__` wrapper that turns a failed check into a message
and exit status 1.

A driver writes only inside one temporary directory of its own, removed
when it exits: every `tempfile` directory it makes, and the cache (compiled
plugin code, the statistics of each `toolhost serve`) of the servers it
starts."""

import atexit
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from contextlib import asynccontextmanager

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.stdio import get_default_environment
from mcp.client.streamable_http import streamable_http_client

tempfile.tempdir = tempfile.mkdtemp(prefix="toolhost-driver-")
os.environ["XDG_CACHE_HOME"] = os.path.join(tempfile.tempdir, "cache")
atexit.register(shutil.rmtree, tempfile.tempdir, ignore_errors=True)


def check(ok, what):
    if not ok:
        raise AssertionError(what)


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


async def wait_until(condition, what):
    """Wait for a condition, not a clock: the bound only keeps a broken
    server from hanging the test."""
    with anyio.move_on_after(60):
        while not condition():
            await anyio.sleep(0.05)
        return
    raise AssertionError(f"never happened: {what}")


def recorder(*kinds):
    """A message handler and the notifications of `kinds` it saw (by
    default tools/list_changed)."""
    kinds = kinds or (types.ToolListChangedNotification,)
    seen = []

    async def on_message(message):
        if isinstance(message, kinds):
            seen.append(message)

    return on_message, seen


def wire(model):
    """A protocol object as the JSON it travelled as: the fields its sender
    set, none filled in with the SDK's defaults (an `isError` left out is
    not `false`), for comparing what two servers sent field by field."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)


def stdio_env(env=None):
    """The environment of a `toolhost` started over stdio: this process's
    with `env` added, if given; else the few variables the SDK passes a
    stdio server, and the caches: this run's (XDG_CACHE_HOME) and, if the
    tests share one, their compiled code's (TOOLHOST_CODE_CACHE)."""
    if env:
        return {**os.environ, **env}
    kept = {k: v for k, v in os.environ.items() if k in ("XDG_CACHE_HOME", "TOOLHOST_CODE_CACHE")}
    return {**get_default_environment(), **kept}


@asynccontextmanager
async def connect(toolhost, argv, transport, cwd, log_path, env=None, **callbacks):
    """A client session (not yet initialised) with `toolhost ARGV`, which
    ends in `serve`: over stdio, or over streamable HTTP on a free loopback
    port. The server's stderr goes to `log_path`; `env` is added to its
    environment (the SDK passes a stdio server only a few variables);
    `callbacks` (`elicitation_callback`, ...) declare what the client can
    be asked."""
    with open(log_path, "w") as log:
        if transport == "stdio":
            params = StdioServerParameters(command=toolhost, args=argv, cwd=cwd, env=stdio_env(env))
            async with stdio_client(params, errlog=log) as (read_stream, write_stream):
                async with ClientSession(read_stream, write_stream, **callbacks) as client:
                    yield client
            return
        server = subprocess.Popen([toolhost, *argv, "--http", "127.0.0.1:0"], cwd=cwd, stderr=log,
                                  env={**os.environ, **(env or {})})
        try:
            with anyio.fail_after(120):
                while not (m := re.search(r"serving MCP at (\S+)", read(log_path))):
                    check(server.poll() is None, "the server exited: " + read(log_path))
                    await anyio.sleep(0.05)
            async with streamable_http_client(m.group(1)) as streams:
                async with ClientSession(streams[0], streams[1], **callbacks) as client:
                    yield client
        finally:
            server.terminate()
            server.wait()


@asynccontextmanager
async def everything_over_http(everything, top):
    """`@modelcontextprotocol/server-everything` (its `dist/index.js`,
    `everything`) serving streamable HTTP on a free loopback port, its log
    in `top`: the URL of its MCP endpoint."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log_path = os.path.join(top, "everything.log")
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            ["node", everything, "streamableHttp"], env={**os.environ, "PORT": str(port)}, stdout=log, stderr=log
        )
    try:
        await wait_until(
            lambda: server.poll() is not None or f"listening on port {port}" in read(log_path),
            "server-everything listening",
        )
        check(server.poll() is None, "server-everything exited: " + read(log_path))
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait()


def run(main):
    """Run the driver's async `main`; a failed check exits 1 with its message."""
    try:
        anyio.run(main)
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
