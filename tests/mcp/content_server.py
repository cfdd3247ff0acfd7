"""An MCP server (stdio) for what server-everything does not send, for
tests/mcp_upstreams.rs: `audio` returns an audio block with annotations
and `_meta`; `add_prompt(name)` registers a prompt `name`, then sends
notifications/prompts/list_changed. It also has instructions."""

import base64

import mcp.types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Prompt

server = MCPServer("content", instructions="Call `audio` for a sound.\nPrompts come and go.")

# The first bytes of a WAV file: enough to be audio, short enough to compare.
WAV = base64.b64encode(b"RIFF$\x00\x00\x00WAVEfmt ").decode()


@server.tool(description="Return a short audio clip.", structured_output=False)
def audio() -> list[types.ContentBlock]:
    return [
        types.TextContent(type="text", text="a clip:"),
        types.AudioContent(
            type="audio",
            data=WAV,
            mime_type="audio/wav",
            annotations=types.Annotations(audience=["user"], priority=0.25),
            _meta={"duration_ms": 0},
        ),
    ]


@server.tool(description="Register a prompt called `name`.")
async def add_prompt(name: str, ctx: Context) -> str:
    def prompt() -> str:
        return f"{name} says hello"

    server.add_prompt(Prompt.from_function(prompt, name=name, description=f"Says hello, as {name}."))
    await ctx.session.send_prompt_list_changed()
    return f"added {name}"


if __name__ == "__main__":
    server.run("stdio")
