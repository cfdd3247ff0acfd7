"""An MCP server over stdio: `environ` answers the value of the environment
variable it is asked for, or `unset` (what toolhost passed on to a server
it started), `parent_environ` the environment of the process that started
it, read from `/proc` as any process of the user's may try, and `shout`
prints that value on its stderr (as is, reversed, in base64); the resource
`env://passed` has the value of TOOLHOST_TEST_PASSED in its description,
the prompt `refuse` fails quoting the variable it is given, `report`
quotes it in a progress notification, and `ask` and `sample` in a request
to the client (an elicitation, a sampling request); it says it on its
stderr too as it ends, and with TOOLHOST_TEST_LINGER set outlives its input
until sent SIGTERM."""

import base64
import os
import signal
import sys
import time

import mcp_types as types
from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

server = MCPServer("environ")


@server.tool(description="The value of one environment variable, or `unset`.", structured_output=False)
def environ(name: str) -> str:
    return os.environ.get(name, "unset")


@server.tool(description="The environment of the process that started this server.", structured_output=False)
def parent_environ() -> str:
    try:
        with open(f"/proc/{os.getppid()}/environ", "rb") as f:
            return f.read().replace(b"\0", b"\n").decode(errors="replace")
    except OSError as e:
        return f"unreadable: {e.strerror}"


@server.tool(description="Print one environment variable's value on stderr.", structured_output=False)
def shout(name: str) -> str:
    value = os.environ.get(name, "unset")
    encoded = base64.b64encode(value.encode()).decode()
    print(f"{name} is {value}, reversed {value[::-1]}, in base64 {encoded}", file=sys.stderr, flush=True)
    return "said"


@server.tool(description="Report progress quoting one environment variable's value.", structured_output=False)
async def report(name: str, ctx: Context) -> str:
    await ctx.report_progress(1, 2, f"{name} is {os.environ.get(name, 'unset')}")
    return "reported"


@server.resource("env://passed", description=f"holds {os.environ.get('TOOLHOST_TEST_PASSED', 'unset')}")
def passed() -> str:
    return "see the description"


@server.prompt(description="Fail, quoting one environment variable's value.")
def refuse(name: str) -> str:
    raise MCPError(code=-32602, message=f"{name} is {os.environ.get(name, 'unset')}")


class Confirmation(BaseModel):
    ok: bool


@server.tool(description="Ask the user, quoting one environment variable's value.", structured_output=False)
async def ask(name: str, ctx: Context) -> str:
    answer = await ctx.elicit(f"{name} is {os.environ.get(name, 'unset')}", Confirmation)
    return answer.action


@server.tool(description="Ask the client's model, quoting one environment variable's value.", structured_output=False)
async def sample(name: str, ctx: Context) -> str:
    text = types.TextContent(type="text", text=f"{name} is {os.environ.get(name, 'unset')}")
    await ctx.session.create_message(
        [types.SamplingMessage(role="user", content=text)], max_tokens=5, related_request_id=ctx.request_id
    )
    return "sampled"


def _terminated(*_):
    print("environ: terminated", file=sys.stderr, flush=True)
    sys.exit(0)


if __name__ == "__main__":
    server.run("stdio")
    # Last words, once toolhost has closed its input.
    print(f"environ: ending, TOOLHOST_TEST_PASSED is {os.environ.get('TOOLHOST_TEST_PASSED', 'unset')}", file=sys.stderr)
    if os.environ.get("TOOLHOST_TEST_LINGER"):
        # A server that outlives its input, until asked to stop.
        signal.signal(signal.SIGTERM, _terminated)
        while True:
            time.sleep(1)
