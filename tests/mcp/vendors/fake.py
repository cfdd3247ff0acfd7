"""What the loopback fakes of the providers' APIs share, and the harness that
drives a provider's plugin through `toolhost serve` against its fake.

A fake is a `Fake` with routes: `(METHOD, path regex) -> handler`, each
handler given the `Seen` request and the regex's groups, answering
`(status, body[, headers])`. It follows the provider's documented shapes;
every request is recorded, so a test asserts the exact method, path, query,
body and the auth header the host injected. It can answer the next N
requests of a route with a rate limit, and delay every answer (a latency
model for the speculation replay).

`provider_session` writes a plugin directory with the provider's `.wasm`
and a `toolhost.toml` granting the fake's origin and the token secret,
then opens an MCP session with `toolhost serve` over stdio.
"""

import base64
import json
import os
import re
import sys
import tempfile
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from email import policy as email_policy
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from driver import check, connect, text  # noqa: E402

TOKEN = "tok-3f9a1c77e2b54d08"


@dataclass
class Seen:
    method: str
    path: str
    query: dict
    headers: dict
    body: object
    raw: bytes = b""

    def json(self):
        return self.body


@dataclass
class Route:
    method: str
    pattern: re.Pattern
    handler: object
    limited: int = 0
    retry_after: str = "1"
    limit_status: int = 429
    limit_message: str = "API rate limit exceeded"


class Fake:
    """A provider's API on a free loopback port, recording every request."""

    def __init__(self, name, delay_s=0.0):
        self.name = name
        self.delay_s = delay_s
        self.routes = []
        self.seen = []
        self.lock = threading.Lock()
        # Requests being answered at once, and the most seen: per-host
        # prefetch caps must hold here, at the server.
        self.in_flight = 0
        self.most_in_flight = 0

    def route(self, method, pattern):
        def register(handler):
            self.routes.append(Route(method, re.compile(f"^{pattern}$"), handler))
            return handler

        return register

    def rate_limit(self, method, pattern, times, retry_after="1", status=429, message="API rate limit exceeded"):
        """Answer the next `times` requests to this route `status` (429, or
        403 for GitHub's secondary rate limit) with `Retry-After`."""
        for r in self.routes:
            if r.method == method and r.pattern.pattern == f"^{pattern}$":
                r.limited, r.retry_after, r.limit_status, r.limit_message = times, retry_after, status, message
                return
        raise AssertionError(f"no route {method} {pattern}")

    def requests(self, method=None, path=None):
        with self.lock:
            return [s for s in self.seen if (method is None or s.method == method) and (path is None or s.path == path)]

    def clear(self):
        with self.lock:
            self.seen.clear()

    def last(self):
        with self.lock:
            check(self.seen, f"{self.name}: no request was made")
            return self.seen[-1]

    def expect(self, method, path, query=None, body=None, auth=None, auth_header="authorization"):
        """The last request was exactly this one, its token in `auth_header`
        (`auth`, by default `Bearer TOKEN`); returns it."""
        seen = self.last()
        check(
            (seen.method, seen.path) == (method, path),
            f"{self.name}: expected {method} {path}, got {seen.method} {seen.path}",
        )
        if query is not None:
            check(seen.query == query, f"{self.name}: {method} {path} query {seen.query} != {query}")
        if body is not None:
            check(seen.body == body, f"{self.name}: {method} {path} body {seen.body} != {body}")
        check(
            seen.headers.get(auth_header) == (auth if auth is not None else f"Bearer {TOKEN}"),
            f"{self.name}: {method} {path} {auth_header} header was {seen.headers.get(auth_header)!r}",
        )
        return seen

    def graphql(self, path, operations):
        """Serve GraphQL at POST `path`: `operations` maps an operation name
        (the document's `query Name(...)` / `mutation Name(...)`) to a
        handler given the `Seen` request and the variables, answering
        `(status, body[, headers])`. An unknown operation is a GraphQL
        validation error, as a real server answers."""

        def serve(seen):
            op = operation(seen.body)
            if op not in operations:
                return 400, {"errors": [{"message": f"Unknown operation {op!r}",
                                         "extensions": {"code": "GRAPHQL_VALIDATION_FAILED"}}]}
            return operations[op](seen, (seen.body or {}).get("variables") or {})

        self.route("POST", path)(serve)

    def operations(self, kind=None):
        """The GraphQL operation names seen, in order (`kind`: query or mutation)."""
        with self.lock:
            seen = list(self.seen)
        return [operation(s.body) for s in seen
                if s.method == "POST" and (kind is None or operation_kind(s.body) == kind)]

    def expect_graphql(self, path, op, variables=None, auth=None):
        """The last request was GraphQL operation `op` with exactly these
        variables; returns it."""
        seen = self.expect("POST", path, auth=auth)
        check(operation(seen.body) == op, f"{self.name}: expected operation {op}, got {operation(seen.body)}")
        if variables is not None:
            got = (seen.body or {}).get("variables")
            check(got == variables, f"{self.name}: {op} variables {got} != {variables}")
        return seen

    def start(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_one(self):
                url = urlsplit(self.path)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                seen = Seen(
                    self.command,
                    url.path,
                    dict(parse_qsl(url.query, keep_blank_values=True)),
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    raw,
                )
                with fake.lock:
                    fake.seen.append(seen)
                    fake.in_flight += 1
                    fake.most_in_flight = max(fake.most_in_flight, fake.in_flight)
                try:
                    self.answer(url, seen)
                finally:
                    with fake.lock:
                        fake.in_flight -= 1

            def answer(self, url, seen):
                if fake.delay_s:
                    time.sleep(fake.delay_s)
                status, payload, headers = 404, {"message": "Not Found"}, {}
                for r in fake.routes:
                    m = r.pattern.match(url.path)
                    if r.method == self.command and m:
                        if r.limited:
                            r.limited -= 1
                            status, payload = r.limit_status, {"message": r.limit_message}
                            headers = {"retry-after": r.retry_after}
                        else:
                            answer = r.handler(seen, *m.groups())
                            status, payload = answer[0], answer[1]
                            headers = answer[2] if len(answer) > 2 else {}
                        break
                data = payload if isinstance(payload, bytes) else (
                    payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                )
                self.send_response(status)
                ctype = "text/plain" if isinstance(payload, (str, bytes)) else "application/json"
                self.send_header("content-type", headers.pop("content-type", ctype))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_one

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        return self

    def stop(self):
        self.server.shutdown()


OPERATION = re.compile(r"^\s*(query|mutation)\s+(\w+)")


def operation(body):
    """The operation name of a GraphQL request body."""
    m = OPERATION.match((body or {}).get("query", "")) if isinstance(body, dict) else None
    return m.group(2) if m else None


def operation_kind(body):
    m = OPERATION.match((body or {}).get("query", "")) if isinstance(body, dict) else None
    return m.group(1) if m else None


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


# What a provider driver enables: prefetches of the loopback fake (the
# shipped defaults allow no loopback host).
SPECULATION = '[speculation]\nhosts = ["127.0.0.1"]'


@asynccontextmanager
async def provider_session(toolhost, wasm, name, fake, config, header="Authorization", prefix="Bearer ",
                           extra_toml="", transport="stdio", api_path=""):
    """An initialised MCP session with `toolhost serve`, serving the plugin
    `wasm` as NAME with `config` (plus `base_url` = the fake's URL and
    `api_path`) and the token granted as secret NAME for the fake's origin,
    in `header` after `prefix`."""
    work = tempfile.mkdtemp(prefix=f"toolhost-{name}-")
    plugins = os.path.join(work, "plugins")
    os.makedirs(plugins)
    os.symlink(wasm, os.path.join(plugins, f"{name}.wasm"))
    lines = [f"[plugin.{name}.config]", f"base_url = {toml_value(fake.url + api_path)}"]
    lines += [f"{k} = {toml_value(v)}" for k, v in config.items()]
    lines += [
        f"[plugin.{name}.grants]",
        f"http = [{toml_value(fake.url)}]",
        f"[plugin.{name}.grants.secrets.{name}]",
        f'env = "{name.upper()}_TOKEN"',
        f"header = {toml_value(header)}",
        f"prefix = {toml_value(prefix)}",
        f"hosts = [{toml_value(fake.url)}]",
        "allow_loopback_http = true",
        extra_toml,
    ]
    with open(os.path.join(work, "toolhost.toml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    log_path = os.path.join(work, "serve.log")
    argv = ["--config", os.path.join(work, "toolhost.toml"), "--plugins", plugins, "serve"]
    env = {f"{name.upper()}_TOKEN": TOKEN}
    async with connect(toolhost, argv, transport, work, log_path, env) as client:
        await client.initialize()
        client.log_path = log_path
        yield client


@dataclass
class Part:
    name: str
    filename: str
    content_type: str
    data: bytes


def multipart(seen):
    """The parts of a multipart/form-data request body, as a server reads
    them (the boundary from the request's `content-type`)."""
    ctype = seen.headers.get("content-type", "")
    check(ctype.startswith("multipart/form-data; boundary="), f"not a multipart body: {ctype!r}")
    message = BytesParser(policy=email_policy.HTTP).parsebytes(
        f"content-type: {ctype}\r\n\r\n".encode() + seen.raw)
    check(message.is_multipart(), "the multipart body does not parse")
    return [Part(p.get_param("name", header="content-disposition"), p.get_filename(),
                 p.get_content_type(), p.get_payload(decode=True)) for p in message.iter_parts()]


def blob(result):
    """The image blocks of a tool result: (mime type, bytes)."""
    return [(c.mime_type, base64.b64decode(c.data)) for c in result.content if getattr(c, "type", "") == "image"]


def structured(result):
    """The JSON block of a tool result (the plugin's structured value)."""
    if result.structured_content is not None:
        return result.structured_content
    for c in result.content:
        if getattr(c, "type", "") == "text":
            try:
                return json.loads(c.text)
            except ValueError:
                continue
    raise AssertionError(f"no structured value in {result}")


async def call(client, tool, args, error=False):
    """Call `tool`; check it failed or not as expected; returns the result."""
    result = await client.call_tool(tool, args)
    check(bool(result.is_error) == error, f"{tool}({args}): isError={result.is_error}: {text(result)}")
    check(TOKEN not in text(result), f"{tool}: the token leaked into the result")
    return result
