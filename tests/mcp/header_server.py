"""An MCP server over streamable HTTP, for tests/mcp/logs.py: its tool
`whoami` logs, at warning, the `Authorization` header it was sent (as a
server that echoes credentials would), and says whose it was: `configured`
(the value toolhost was configured to send it), `client` (the MCP client's
own token, which toolhost must never pass through) or `none`.

    header_server.py PORT CONFIGURED_VALUE CLIENT_TOKEN
"""

import sys

from mcp.server.mcpserver import Context, MCPServer

port, configured, client_token = int(sys.argv[1]), sys.argv[2], sys.argv[3]
server = MCPServer("headers")


@server.tool(description="Log the Authorization header received and say whose it is.")
async def whoami(ctx: Context) -> str:
    value = (ctx.headers or {}).get("authorization", "")
    await ctx.warning(f"authorization: {value}")
    if client_token in value:
        return "client"
    return "configured" if value == configured else "none"


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=port)
