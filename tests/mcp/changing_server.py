"""An MCP server (stdio) whose tool list changes at run time, for
tests/mcp_upstreams.rs: `add_tool(name)` registers a tool `name` that
greets, then sends notifications/tools/list_changed."""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("changing")


@server.tool(description="Register a new greeting tool called `name`.")
async def add_tool(name: str, ctx: Context) -> str:
    def greet(who: str) -> str:
        return f"{name} greets {who}"

    server.add_tool(greet, name=name, description=f"Greets, as {name}.")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


if __name__ == "__main__":
    server.run("stdio")
