"""toolhost as a gateway: what an MCP client sees of an upstream server
through `toolhost serve` (stdio) against what it sees connected to the
server directly, field by field, the prefix aside. Each scenario opens
both sessions, to `@modelcontextprotocol/server-everything` (or, for what
it does not send, tests/mcp/content_server.py):

- `tools`: every field of every tool (title, annotations, outputSchema,
  icons, _meta, execution, the input schema and description).
- `text`, `image`, `annotations`, `resource-links` (two of them),
  `embedded-resource` (text and blob), `structured`, `audio`: a call
  returning that content, compared whole.
- `prompts`: prompts/list and prompts/get of each prompt.
- `resources`: resources/list, and resources/read of listed and of
  template-made URIs; `templates`: resources/templates/list.
- `completions`: of a prompt argument (with context) and of a template's.
- `subscriptions`: resources/subscribe and an update relayed, then
  resources/unsubscribe withdrawn upstream.
- `resources-changed`, `prompts-changed`: list changes reach the client
  and the next list has the new entry.
- `instructions`: the server's instructions under its name.
- `roots` (`@modelcontextprotocol/server-filesystem`, started with a
  directory of its own): the client's roots, not that directory, are what
  the server allows, as the server asks for them when it starts, before
  the client came; then the roots the client changes to. `roots-listed`
  (and `roots-listed-http`): server-everything's `get-roots-list`,
  likewise. With toolhost served over stdio only, where it serves one
  client whose roots they are.

Each scenario of server-everything's content, lists and instructions runs
again with the server over streamable HTTP, as `NAME-http`; and any with
toolhost served over streamable HTTP (`--front http`). Both sides are
compared as the JSON each sent (`wire`): a field one side left out and
the other sent with its default value is a difference.

Run by tests/mcp_upstreams.rs; exits non-zero with a message on the first
check that fails.
"""

import argparse
import contextlib
import json
import os
import sys
import tempfile

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from driver import check, connect, everything_over_http, read, recorder, run, wait_until, wire
from driver import text as text_of

HERE = os.path.dirname(os.path.abspath(__file__))

NOTICES = (
    types.ToolListChangedNotification,
    types.PromptListChangedNotification,
    types.ResourceListChangedNotification,
    types.ResourceUpdatedNotification,
)


async def _declines(context, params):
    return types.ElicitResult(action="decline")


async def _no_completion(context, params):
    return types.ErrorData(code=types.INVALID_REQUEST, message="no model here")


async def _no_roots(context):
    return types.ListRootsResult(roots=[])


DECLARED = {"elicitation_callback": _declines, "sampling_callback": _no_completion, "list_roots_callback": _no_roots}


class Roots:
    """The client's roots, directories the test changes: both sessions
    answer `roots/list` with them."""

    def __init__(self, *dirs):
        self.dirs = list(dirs)

    async def listed(self, context):
        return types.ListRootsResult(
            roots=[types.Root(uri=f"file://{d}", name=os.path.basename(d)) for d in self.dirs]
        )


class Pair:
    """One session to the server, one to toolhost serving it."""

    def __init__(self, prefix, direct, via, direct_seen, via_seen, direct_init, via_init, roots):
        self.prefix = prefix
        self.direct, self.via = direct, via
        self.direct_seen, self.via_seen = direct_seen, via_seen
        self.direct_init, self.via_init = direct_init, via_init
        self.roots = roots

    async def same(self, what, ask):
        """`ask(session, prefix)` of both gives the same answer. Some of
        server-everything's answers hold the time of day to the second, so
        a mismatch is asked again, a bounded number of times."""
        for _ in range(3):
            direct = wire(await ask(self.direct, ""))
            via = wire(await ask(self.via, self.prefix))
            if direct == via:
                return via
        raise AssertionError(f"{what}:\n  direct:         {direct}\n  through toolhost: {via}")


@contextlib.asynccontextmanager
async def pair(top, args, name, prefix, upstream, roots=None):
    """Both sessions to the server `upstream` reaches: its `[[upstream]]`
    keys, `command` and `args` (a stdio server) or `url`. toolhost is
    served over `args.front`, stdio or streamable HTTP. With `roots`, both
    clients declare roots and answer with them."""
    answers = {"list_roots_callback": roots.listed} if roots else {}
    os.makedirs(os.path.join(top, "root"), exist_ok=True)
    os.makedirs(os.path.join(top, "plugins"), exist_ok=True)
    config = os.path.join(top, "toolhost.toml")
    with open(config, "w") as f:
        f.write(f'root = "root"\n[[upstream]]\nname = {json.dumps(name)}\nprefix = {json.dumps(prefix)}\n')
        f.writelines(f"{key} = {json.dumps(value)}\n" for key, value in upstream.items())
    toolhost = [
        "-v", "--no-cache", "--config", config, "--plugins", os.path.join(top, "plugins"), "serve",
    ]  # fmt: skip
    on_direct, direct_seen = recorder(*NOTICES)
    on_via, via_seen = recorder(*NOTICES)
    log_path = os.path.join(top, "toolhost.log")
    with open(os.path.join(top, "direct.log"), "w") as direct_log:
        async with contextlib.AsyncExitStack() as stack:
            if "url" in upstream:
                d_read, d_write, *_ = await stack.enter_async_context(streamable_http_client(upstream["url"]))
            else:
                d_read, d_write = await stack.enter_async_context(
                    stdio_client(StdioServerParameters(command=upstream["command"], args=upstream["args"]),
                                 errlog=direct_log)
                )
            via = await stack.enter_async_context(
                connect(args.toolhost, toolhost, args.front, top, log_path, message_handler=on_via, **answers)
            )
            # Declaring what toolhost declares to its upstreams (it relays
            # them: tests/mcp/relay.py), so both see the same tools.
            direct = await stack.enter_async_context(
                ClientSession(d_read, d_write, message_handler=on_direct, **(DECLARED | answers))
            )
            yield Pair(
                prefix, direct, via, direct_seen, via_seen, await direct.initialize(), await via.initialize(), roots
            )


def everything(top, args, roots=None):
    return pair(top, args, "everything", "ev_", {"command": "node", "args": [args.everything, "stdio"]}, roots)


@contextlib.asynccontextmanager
async def everything_http(top, args, roots=None):
    """server-everything over streamable HTTP."""
    async with everything_over_http(args.everything, top) as url:
        async with pair(top, args, "everything", "ev_", {"url": url}, roots) as p:
            yield p


def content(top, args):
    return pair(
        top, args, "content", "ct_", {"command": sys.executable, "args": [os.path.join(HERE, "content_server.py")]}
    )


def directories(top, *names):
    """Directories under `top`, each holding a file named after it."""
    made = []
    for name in names:
        made.append(os.path.join(top, name))
        os.makedirs(made[-1], exist_ok=True)
        with open(os.path.join(made[-1], f"{name}.txt"), "w") as f:
            f.write(f"in {name}\n")
    return made


def filesystem(top, args):
    """server-filesystem started with a directory of its own, its client's
    roots another."""
    own, given = directories(top, "own", "given")
    upstream = {"command": "node", "args": [args.filesystem, own]}
    return pair(top, args, "filesystem", "fs_", upstream, roots=Roots(given))


def with_roots(server):
    """`server` (`everything`, `everything_http`) to clients whose roots are
    a directory of their own."""

    def start(top, args):
        (given,) = directories(top, "given")
        return server(top, args, Roots(given))

    return start


def kinds(result):
    return [block["type"] for block in result["content"]]


async def tools(p):
    direct = {t.name: wire(t) for t in (await p.direct.list_tools()).tools}
    via = {t.name: wire(t) for t in (await p.via.list_tools()).tools if t.name.startswith(p.prefix)}
    own = {name[len(p.prefix) :] for name in via}
    unconditional = {
        "echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference",
        "get-structured-content", "get-sum", "get-tiny-image", "gzip-file-as-resource",
        "toggle-simulated-logging", "toggle-subscriber-updates", "trigger-long-running-operation",
    }  # fmt: skip
    check(unconditional <= own, f"tools missing through toolhost: {sorted(unconditional - own)}")
    check(own <= set(direct), f"tools the server does not list: {sorted(own - set(direct))}")
    for name, tool in via.items():
        expected = dict(direct[name[len(p.prefix) :]], name=name)
        check(tool == expected, f"{name}:\n  direct:           {expected}\n  through toolhost: {tool}")
    # `execution` is compared with the rest above; rmcp's types have no
    # such field, so it is also checked to be there at all.
    executions = {name: tool.get("execution") for name, tool in via.items()}
    check(all(executions.values()), f"tools served without their `execution`: {executions}")
    research = executions.get(p.prefix + "simulate-research-query")
    check(research == {"taskSupport": "required"}, f"simulate-research-query's execution: {research}")
    served = via[p.prefix + "get-structured-content"]
    check(
        {"title", "annotations", "outputSchema"} <= set(served),
        f"the fields are not served: {served}",
    )


def call(name, arguments):
    return lambda session, prefix: session.call_tool(prefix + name, arguments)


async def text(p):
    r = await p.same("echo", call("echo", {"message": "through toolhost"}))
    check(kinds(r) == ["text"] and r["content"][0]["text"] == "Echo: through toolhost", f"echo: {r}")


async def image(p):
    r = await p.same("get-tiny-image", call("get-tiny-image", {}))
    check("image" in kinds(r), f"no image: {kinds(r)}")


async def annotations(p):
    for message in ["success", "error", "debug"]:
        r = await p.same(message, call("get-annotated-message", {"messageType": message, "includeImage": True}))
        check(kinds(r) == ["text", "image"], f"{message}: {kinds(r)}")
        check(all("annotations" in block for block in r["content"]), f"annotations lost: {r}")


async def resource_links(p):
    r = await p.same("get-resource-links", call("get-resource-links", {"count": 2}))
    links = [b for b in r["content"] if b["type"] == "resource_link"]
    check(len(links) == 2 and links[0]["uri"] != links[1]["uri"], f"links: {links}")
    check("structuredContent" not in r, f"links moved into structuredContent: {r}")


async def embedded_resource(p):
    for kind, body in [("Text", "text"), ("Blob", "blob")]:
        r = await p.same(kind, call("get-resource-reference", {"resourceType": kind, "resourceId": 2}))
        embedded = [b for b in r["content"] if b["type"] == "resource"]
        check(len(embedded) == 1 and body in embedded[0]["resource"], f"{kind}: {r}")


async def structured(p):
    r = await p.same("get-structured-content", call("get-structured-content", {"location": "Chicago"}))
    check(r.get("structuredContent", {}).get("temperature") == 36, f"structuredContent: {r}")
    check(kinds(r) == ["text"], f"content: {kinds(r)}")


async def audio(p):
    r = await p.same("audio", call("audio", {}))
    check(kinds(r) == ["text", "audio"], f"content: {kinds(r)}")
    clip = r["content"][1]
    check("annotations" in clip and "_meta" in clip, f"audio block: {clip}")


async def prompts(p):
    async def listed(session, prefix):
        return (await session.list_prompts()).prompts

    direct = {x.name: wire(x) for x in await listed(p.direct, "")}
    # toolhost's own `system-prompt` is listed beside the server's.
    via = {x.name: wire(x) for x in await listed(p.via, "") if x.name.startswith(p.prefix)}
    check(
        via == {p.prefix + name: dict(prompt, name=p.prefix + name) for name, prompt in direct.items()},
        f"prompts:\n  direct:           {direct}\n  through toolhost: {via}",
    )
    gets = [
        ("simple-prompt", None),
        ("args-prompt", {"city": "Lyon", "state": "Rhone"}),
        ("completable-prompt", {"department": "Sales", "name": "Eve"}),
        ("resource-prompt", {"resourceType": "Blob", "resourceId": "2"}),
    ]
    for name, arguments in gets:
        r = await p.same(name, lambda s, prefix, n=name, a=arguments: s.get_prompt(prefix + n, a))
        check(r["messages"], f"{name}: no messages")
    check(
        await fails(p.via.get_prompt("simple-prompt")),
        "a prompt is served without its prefix",
    )


async def fails(request):
    try:
        await request
    except Exception:  # noqa: BLE001 - any protocol error is the refusal
        return True
    return False


async def resources(p):
    listed = await p.same("resources/list", lambda s, _: s.list_resources())
    uris = [r["uri"] for r in listed["resources"]]
    check(len(uris) >= 2, f"resources: {uris}")
    for uri in [*uris[:2], "demo://resource/dynamic/text/3", "demo://resource/dynamic/blob/4"]:
        r = await p.same(uri, lambda s, _, u=uri: s.read_resource(u))
        check(r["contents"] and r["contents"][0]["uri"] == uri, f"{uri}: {r}")


async def templates(p):
    r = await p.same("resources/templates/list", lambda s, _: s.list_resource_templates())
    check(len(r["resourceTemplates"]) == 2, f"templates: {r}")


async def completions(p):
    def prompt(value, context=None):
        return lambda s, prefix: s.complete(
            types.PromptReference(type="ref/prompt", name=prefix + "completable-prompt"),
            {"name": "name" if context else "department", "value": value},
            context,
        )

    r = await p.same("department", prompt("S"))
    check(r["completion"]["values"] == ["Sales", "Support"], f"department: {r}")
    r = await p.same("name", prompt("", {"department": "Engineering"}))
    check(r["completion"]["values"] == ["Alice", "Bob", "Charlie"], f"name: {r}")
    template = types.ResourceTemplateReference(type="ref/resource", uri="demo://resource/dynamic/text/{resourceId}")
    r = await p.same("resourceId", lambda s, _: s.complete(template, {"name": "resourceId", "value": "7"}))
    check(r["completion"]["values"] == ["7"], f"resourceId: {r}")


def updates(seen, uri):
    return sum(1 for n in seen if isinstance(n, types.ResourceUpdatedNotification) and str(n.params.uri) == uri)


async def subscriptions(p):
    one, two = "demo://resource/dynamic/text/1", "demo://resource/dynamic/text/2"
    for session, prefix, seen in [(p.direct, "", p.direct_seen), (p.via, p.prefix, p.via_seen)]:
        await session.subscribe_resource(one)
        await session.subscribe_resource(two)
        # The server sends an update for each subscribed URI at once, then
        # every 5 s, while its updates are toggled on.
        r = await session.call_tool(prefix + "toggle-subscriber-updates", {})
        check(not r.is_error, f"toggle: {r}")
        await wait_until(lambda s=seen: updates(s, one) and updates(s, two), "updates of both resources")
    via = [wire(n) for n in p.via_seen if isinstance(n, types.ResourceUpdatedNotification)][:2]
    direct = [wire(n) for n in p.direct_seen if isinstance(n, types.ResourceUpdatedNotification)][:2]
    check(via == direct, f"updates:\n  direct:           {direct}\n  through toolhost: {via}")

    # Unsubscribed, `one` gets no more updates: toggled off and on, the
    # server updates what is still subscribed, in subscription order, so
    # once `two`'s update is in, `one`'s would have come before it.
    await p.via.unsubscribe_resource(one)
    before_one, before_two = updates(p.via_seen, one), updates(p.via_seen, two)
    for _ in range(2):
        await p.via.call_tool(p.prefix + "toggle-subscriber-updates", {})
    await wait_until(lambda: updates(p.via_seen, two) > before_two, "an update of the resource still subscribed")
    check(updates(p.via_seen, one) == before_one, "updates still relayed after resources/unsubscribe")


async def resources_changed(p):
    made = {"name": "hello.txt.gz", "data": "data:text/plain;base64,aGVsbG8K", "outputType": "resourceLink"}
    r = await p.same("gzip-file-as-resource", call("gzip-file-as-resource", made))
    check(kinds(r) == ["resource_link"], f"content: {kinds(r)}")
    link = r["content"][0]["uri"]
    changed = (types.ResourceListChangedNotification,)
    await wait_until(lambda: any(isinstance(n, changed) for n in p.via_seen), "resources/list_changed from toolhost")
    listed = await p.same("resources/list", lambda s, _: s.list_resources())
    check(link in [x["uri"] for x in listed["resources"]], f"{link} not listed: {listed}")
    read = await p.same(link, lambda s, _: s.read_resource(link))
    check(read["contents"][0].get("blob"), f"{link}: {read}")


async def prompts_changed(p):
    for session, prefix in [(p.direct, ""), (p.via, p.prefix)]:
        r = await session.call_tool(prefix + "add_prompt", {"name": "wave"})
        check(not r.is_error, f"add_prompt: {r}")
    changed = (types.PromptListChangedNotification,)
    await wait_until(lambda: any(isinstance(n, changed) for n in p.via_seen), "prompts/list_changed from toolhost")
    names = [x.name for x in (await p.via.list_prompts()).prompts if x.name != "system-prompt"]
    check(names == [p.prefix + "wave"], f"prompts after: {names}")
    r = await p.same("wave", lambda s, prefix: s.get_prompt(prefix + "wave"))
    check("wave says hello" in json.dumps(r), f"wave: {r}")


async def instructions(p):
    own = p.direct_init.instructions
    check(own and own.strip(), "the server gave no instructions")
    served = p.via_init.instructions or ""
    expected = f"## everything\n\nIts tool and prompt names carry the prefix `{p.prefix}` here.\n\n{own.strip()}"
    check(expected in served, f"instructions through toolhost:\n{served}")
    capabilities = p.via_init.capabilities
    check(
        capabilities.prompts and capabilities.resources and capabilities.resources.subscribe,
        f"capabilities: {capabilities}",
    )
    check(capabilities.completions is not None, f"completions not announced: {capabilities}")


async def both_say(p, tool, arguments, expected):
    """`tool`'s text names `expected`, directly and through toolhost, in
    time: a server asks for the roots on its own after it is told."""
    for session, prefix in [(p.direct, ""), (p.via, p.prefix)]:
        said = ""
        with anyio.move_on_after(60):
            while expected not in (said := text_of(await session.call_tool(prefix + tool, arguments))):
                await anyio.sleep(0.1)
        check(expected in said, f"{prefix}{tool} never said {expected}: {said}")


async def changed_roots(p, *dirs):
    p.roots.dirs = list(dirs)
    for session in (p.direct, p.via):
        await session.send_roots_list_changed()


async def roots(p):
    given = p.roots.dirs[0]
    top = os.path.dirname(given)
    own = os.path.join(top, "own")
    await both_say(p, "list_allowed_directories", {}, given)
    r = await p.same("read in the root", call("read_text_file", {"path": f"{given}/given.txt"}))
    check(r["content"][0]["text"] == "in given\n", f"read in the root: {r}")
    r = await p.same("read in its own directory", call("read_text_file", {"path": f"{own}/own.txt"}))
    check(r["isError"] and "Access denied" in r["content"][0]["text"], f"read outside the root: {r}")
    (moved,) = directories(top, "moved")
    await changed_roots(p, moved)
    await both_say(p, "list_allowed_directories", {}, moved)
    await p.same("listed", call("list_allowed_directories", {}))


async def roots_listed(p):
    await both_say(p, "get-roots-list", {}, f"file://{p.roots.dirs[0]}")
    (moved,) = directories(os.path.dirname(p.roots.dirs[0]), "moved")
    await changed_roots(p, moved)
    await both_say(p, "get-roots-list", {}, f"file://{moved}")
    await p.same("get-roots-list", call("get-roots-list", {}))


SCENARIOS = {
    "tools": (everything, tools),
    "text": (everything, text),
    "image": (everything, image),
    "annotations": (everything, annotations),
    "resource-links": (everything, resource_links),
    "embedded-resource": (everything, embedded_resource),
    "structured": (everything, structured),
    "audio": (content, audio),
    "prompts": (everything, prompts),
    "resources": (everything, resources),
    "templates": (everything, templates),
    "completions": (everything, completions),
    "subscriptions": (everything, subscriptions),
    "resources-changed": (everything, resources_changed),
    "prompts-changed": (content, prompts_changed),
    "instructions": (everything, instructions),
    "roots": (filesystem, roots),
    "roots-listed": (with_roots(everything), roots_listed),
    "roots-listed-http": (with_roots(everything_http), roots_listed),
}
# The same comparisons with the server over streamable HTTP: toolhost's
# HTTP client reads what rmcp's types drop, as its stdio reader does.
SCENARIOS.update(
    {
        f"{name}-http": (everything_http, SCENARIOS[name][1])
        for name in ("tools", "text", "image", "annotations", "resource-links", "embedded-resource", "structured",
                     "prompts", "resources", "templates", "instructions")
    }
)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolhost", required=True)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), required=True)
    parser.add_argument("--everything", help="server-everything's dist/index.js")
    parser.add_argument("--filesystem", help="server-filesystem's dist/index.js")
    parser.add_argument("--front", choices=["stdio", "http"], default="stdio", help="how toolhost is served")
    args = parser.parse_args()
    top = tempfile.mkdtemp(prefix="toolhost-gateway-")
    server, scenario = SCENARIOS[args.scenario]
    try:
        async with server(top, args) as p:
            await scenario(p)
    except AssertionError:
        log = os.path.join(top, "toolhost.log")
        if os.path.exists(log):
            print(f"toolhost log:\n{read(log)}", file=sys.stderr)
        raise
    print(f"ok: {args.scenario}")


if __name__ == "__main__":
    run(main)
