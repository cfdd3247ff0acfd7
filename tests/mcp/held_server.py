"""An MCP server (stdio) slow to start, as one `npx` is still fetching,
for tests/mcp_upstreams.rs: each start adds a line to the file `--starts`
names, then it reads nothing until the file `--release` names exists, and
then serves the tool `echo` and the prompt `greet`."""

import argparse
import os
import time

from mcp.server.mcpserver import MCPServer

parser = argparse.ArgumentParser()
parser.add_argument("--starts", required=True)
parser.add_argument("--release", required=True)
# `--toolhost BINARY`, which every driver here is given, is not this one's.
options, _ = parser.parse_known_args()

with open(options.starts, "a") as starts:
    starts.write("started\n")
while not os.path.exists(options.release):
    time.sleep(0.05)

server = MCPServer("held")


@server.tool(description="Answers its text.", structured_output=False)
def echo(text: str) -> str:
    return text


@server.prompt(description="A greeting.")
def greet() -> str:
    return "Hello."


if __name__ == "__main__":
    server.run("stdio")
