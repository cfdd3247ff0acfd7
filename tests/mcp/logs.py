"""Log lines reaching an MCP client: drive `toolhost serve` (stdio or
streamable HTTP) with the official Python SDK and check its
`notifications/message`: the default level and `logging/setLevel` filter
the `fixture_attack_logs` plugin's lines, a flood is rate-limited with one
summary of what was dropped, and neither the plugin's granted secret (which
a loopback server echoes back to it, and it logs) nor the configured header
of an upstream server (which that server logs) ever reaches the client or
the host's log. Over HTTP the endpoint has `[auth]` with a bearer token:
the client sends it, and the upstream server must never see it.

Run by tests/mcp_python.rs; exits non-zero with a message on the first
check that fails.
"""

import argparse
import http.server
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from driver import check, read, run, text, wait_until

PLUGIN_SECRET = "plg-s3cret-4be1"
UPSTREAM_SECRET = "ups-s3cret-77d0"
CLIENT_TOKEN = "cli-t0ken-9a3f"


def echo_server():
    """A loopback HTTP server answering with the Authorization it got."""

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = f"you sent: {self.headers.get('authorization')}".encode()
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wait_for_port(port, process):
    with anyio.fail_after(60):
        while True:
            check(process.poll() is None, "the upstream server exited")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return
            except OSError:
                await anyio.sleep(0.05)


async def exercise(session, lines, echo_url):
    def seen(logger=None, needle=""):
        return [
            str(p.data)
            for p in lines
            if (logger is None or p.logger == logger) and needle in str(p.data)
        ]

    await session.initialize()

    # The default level is warning.
    r = await session.call_tool("log_levels", {})
    check(not r.is_error, f"log_levels: {text(r)}")
    await wait_until(lambda: seen("attack-logs", "level error"), "the error line")
    levels = [p.level for p in lines if p.logger == "attack-logs"]
    check(seen("attack-logs", "level warn") and levels == ["warning", "error"], f"default level: {levels}")

    await session.set_logging_level("debug")
    await session.call_tool("log_levels", {})
    await wait_until(lambda: len(seen("attack-logs", "level error")) == 2, "the second error line")
    got = seen("attack-logs", "level ")[2:]
    check(got == [f"level {n}" for n in ["trace", "debug", "info", "warn", "error"]], f"at debug: {got}")
    check([p.level for p in lines[-5:]] == ["debug", "debug", "info", "warning", "error"], f"{lines[-5:]}")

    await session.set_logging_level("error")
    await session.call_tool("log_levels", {})
    await wait_until(lambda: len(seen("attack-logs", "level error")) == 3, "the third error line")
    got = seen("attack-logs", "level ")[7:]
    check(got == ["level error"], f"at error: {got}")

    # A plugin that logs its own secret, echoed back by a granted host.
    await session.set_logging_level("warning")
    r = await session.call_tool("log_leak", {"url": echo_url})
    check(not r.is_error, f"log_leak: {text(r)}")
    await wait_until(lambda: seen("attack-logs", "leak via stderr"), "the leak lines")
    leaks = seen("attack-logs", "leak via")
    check(all("you sent: Bearer [redacted:token]" in line for line in leaks), f"not redacted: {leaks}")

    # An upstream server that logs the header it was configured with.
    r = await session.call_tool("up_whoami", {})
    check(text(r) == "configured", f"the upstream saw: {text(r)}")
    await wait_until(lambda: seen("headers", "authorization"), "the upstream's line")
    check(seen("headers") == ["authorization: [redacted:authorization]"], f"upstream line: {seen('headers')}")

    # Last, as it empties the bucket. A flood: the host keeps 200 lines of
    # a call and says it cut the rest (201 lines); the client is sent a
    # burst of them and then 20 a second, and each run of drops is counted
    # in one summary (one run, unless the client read so slowly that tokens
    # came back halfway). Wait until every line is sent or counted.
    before = len(lines)

    def flood():
        return [p for p in lines[before:] if p.logger == "attack-logs"]

    def dropped():
        return sum(int(re.match(r"(\d+) log lines dropped", s).group(1)) for s in seen("toolhost", "dropped"))

    started = time.monotonic()
    r = await session.call_tool("log_flood", {"count": 5000})
    check(text(r) == "logged 5000 lines", f"log_flood: {text(r)}")
    await wait_until(lambda: len(flood()) + dropped() == 201, "every line of the flood sent or counted as dropped")
    took = time.monotonic() - started
    check(dropped() > 0, "none of the flood was dropped")
    # At most a burst of 50, plus what refilled at 20 a second meanwhile.
    check(len(flood()) <= 50 + 20 * took + 1, f"{len(flood())} lines sent in {took:.1f} s")

    everything = "\n".join(str(p.data) for p in lines)
    for secret in [PLUGIN_SECRET, UPSTREAM_SECRET, CLIENT_TOKEN]:
        check(secret not in everything, f"{secret} reached the client")


def config(top, upstream_port, transport):
    path = os.path.join(top, "toolhost.toml")
    with open(path, "w") as f:
        f.write('root = "."\n')
        f.write(
            "[[upstream]]\n"
            'name = "headers"\n'
            f'url = "http://127.0.0.1:{upstream_port}/mcp"\n'
            f'headers = {{ Authorization = "Bearer {UPSTREAM_SECRET}" }}\n'
            'prefix = "up_"\n'
        )
        if transport == "http":
            f.write('[auth]\nbearer_token_env = "TOOLHOST_TEST_CLIENT_TOKEN"\n')
    return path


def plugins(top, plugin, echo_host):
    directory = os.path.join(top, "plugins")
    os.makedirs(directory)
    with open(plugin, "rb") as src, open(os.path.join(directory, "attack-logs.wasm"), "wb") as dst:
        dst.write(src.read())
    with open(os.path.join(directory, "attack-logs.toml"), "w") as f:
        f.write(
            f'[grants]\nhttp = ["http://{echo_host}"]\n'
            '[grants.secrets.token]\nenv = "TOOLHOST_TEST_PLUGIN_SECRET"\n'
            f'header = "Authorization"\nprefix = "Bearer "\nhosts = ["http://{echo_host}"]\nallow_loopback_http = true\n'
        )
    return directory


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolhost", required=True)
    parser.add_argument("--plugin", required=True, help="the fixture_attack_logs component")
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    args = parser.parse_args()
    top = tempfile.mkdtemp(prefix="toolhost-logs-")
    echo = echo_server()
    echo_host = f"127.0.0.1:{echo.server_address[1]}"
    upstream_port = free_port()
    here = os.path.dirname(os.path.abspath(__file__))
    upstream = subprocess.Popen(
        [sys.executable, os.path.join(here, "header_server.py"), str(upstream_port),
         f"Bearer {UPSTREAM_SECRET}", CLIENT_TOKEN],
        stderr=subprocess.DEVNULL,
    )
    env = dict(os.environ, TOOLHOST_TEST_PLUGIN_SECRET=PLUGIN_SECRET, TOOLHOST_TEST_CLIENT_TOKEN=CLIENT_TOKEN)
    log_path = os.path.join(top, "server.log")
    lines = []

    async def on_log(params):
        lines.append(params)

    try:
        await wait_for_port(upstream_port, upstream)
        common = ["-vv", "--no-cache", "--config", config(top, upstream_port, args.transport),
                  "--plugins", plugins(top, args.plugin, echo_host), "serve"]
        with open(log_path, "w") as log:
            if args.transport == "stdio":
                params = StdioServerParameters(command=args.toolhost, args=common, cwd=top, env=env)
                async with stdio_client(params, errlog=log) as (r, w):
                    async with ClientSession(r, w, logging_callback=on_log) as session:
                        await exercise(session, lines, f"http://{echo_host}/")
            else:
                server = subprocess.Popen([args.toolhost, *common, "--http", "127.0.0.1:0"], cwd=top, env=env,
                                          stderr=log)
                try:
                    with anyio.fail_after(120):
                        while not (m := re.search(r"serving MCP at (\S+)", read(log_path))):
                            check(server.poll() is None, "the server exited: " + read(log_path))
                            await anyio.sleep(0.05)
                    headers = {"Authorization": f"Bearer {CLIENT_TOKEN}"}
                    async with httpx2.AsyncClient(headers=headers, timeout=60) as client:
                        async with streamable_http_client(m.group(1), http_client=client) as streams:
                            async with ClientSession(streams[0], streams[1], logging_callback=on_log) as session:
                                await exercise(session, lines, f"http://{echo_host}/")
                finally:
                    server.terminate()
                    server.wait()
        host_log = read(log_path)
        check("leak via log" in host_log, "the host's log lacks the plugin's lines")
        for secret in [PLUGIN_SECRET, UPSTREAM_SECRET, CLIENT_TOKEN]:
            check(secret not in host_log, f"{secret} is in the host's log")
    finally:
        upstream.terminate()
        upstream.wait()
        echo.shutdown()
    print(f"ok: logs over {args.transport}")


if __name__ == "__main__":
    run(main)
