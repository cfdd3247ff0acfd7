"""An MCP server (stdio) that starts serving only once another has started,
for tests/mcp_upstreams.rs: it writes the file `--mine`, then waits (up to
a minute) for the file `--theirs` before it reads its first message. Two
of them, each the other's `--theirs`, are both served only by a client
that starts them at once."""

import argparse
import os
import time

from mcp.server.mcpserver import MCPServer

parser = argparse.ArgumentParser()
parser.add_argument("--mine", required=True)
parser.add_argument("--theirs", required=True)
# `--toolhost BINARY`, which every driver here is given, is not this one's.
options, _ = parser.parse_known_args()

server = MCPServer("rendezvous")


@server.tool(description="Say which server this is.")
def hello() -> str:
    return os.path.basename(options.mine)


if __name__ == "__main__":
    open(options.mine, "w").close()
    deadline = time.monotonic() + 60
    while not os.path.exists(options.theirs) and time.monotonic() < deadline:
        time.sleep(0.01)
    server.run("stdio")
