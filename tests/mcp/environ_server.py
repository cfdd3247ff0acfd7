"""An MCP server over stdio: `environ` answers the value of the environment
variable it is asked for, or `unset` (what toolhost passed on to a server
it started), and `shout` prints that value on its stderr; the resource
`env://passed` has the value of TOOLHOST_TEST_PASSED in its description,
and the prompt `refuse` fails quoting the variable it is given."""

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

server = MCPServer("environ")


@server.tool(description="The value of one environment variable, or `unset`.", structured_output=False)
def environ(name: str) -> str:
    return os.environ.get(name, "unset")


@server.tool(description="Print one environment variable's value on stderr.", structured_output=False)
def shout(name: str) -> str:
    print(f"{name} is {os.environ.get(name, 'unset')}", file=sys.stderr, flush=True)
    return "said"


@server.resource("env://passed", description=f"holds {os.environ.get('TOOLHOST_TEST_PASSED', 'unset')}")
def passed() -> str:
    return "see the description"


@server.prompt(description="Fail, quoting one environment variable's value.")
def refuse(name: str) -> str:
    raise MCPError(code=-32602, message=f"{name} is {os.environ.get(name, 'unset')}")


if __name__ == "__main__":
    server.run("stdio")
