"""An MCP server over stdio with one tool, `environ`, answering the value of
the environment variable it is asked for, or `unset`: what toolhost passed
on to a server it started."""

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("environ")


@server.tool(description="The value of one environment variable, or `unset`.", structured_output=False)
def environ(name: str) -> str:
    return os.environ.get(name, "unset")


if __name__ == "__main__":
    server.run("stdio")
