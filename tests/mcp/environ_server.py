"""An MCP server over stdio: `environ` answers the value of the environment
variable it is asked for, or `unset` (what toolhost passed on to a server
it started), and `shout` prints that value on its stderr."""

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("environ")


@server.tool(description="The value of one environment variable, or `unset`.", structured_output=False)
def environ(name: str) -> str:
    return os.environ.get(name, "unset")


@server.tool(description="Print one environment variable's value on stderr.", structured_output=False)
def shout(name: str) -> str:
    print(f"{name} is {os.environ.get(name, 'unset')}", file=sys.stderr, flush=True)
    return "said"


if __name__ == "__main__":
    server.run("stdio")
