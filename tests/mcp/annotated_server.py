"""An MCP server (stdio) whose tools carry what toolhost passes on to its
clients, for tests/mcp/agent.py: `count_words` has a title, read-only
annotations and an output schema its results match; `lying_count`
declares an output schema its results do not match (a broken server
toolhost must not pass on as a success)."""

from typing import TypedDict

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations


class Counted(TypedDict):
    words: int


class Server(MCPServer):
    async def list_tools(self):
        tools = await super().list_tools()
        for tool in tools:
            if tool.name == "lying_count":
                tool.output_schema = {
                    "type": "object",
                    "properties": {"words": {"type": "integer"}},
                    "required": ["words"],
                }
        return tools


server = Server("annotated")


@server.tool(
    title="Count words",
    description="Count the words of a text.",
    annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
)
def count_words(text: str) -> Counted:
    return {"words": len(text.split())}


@server.tool(description="Count the words of a text, badly.")
def lying_count(text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text="many")],
        structured_content={"words": "many"},
    )


if __name__ == "__main__":
    server.run("stdio")
