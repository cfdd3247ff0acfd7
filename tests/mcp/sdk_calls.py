"""The Python SDK's client making `read` calls one after another through
toolhost, for the front bench: over stdio, starting `TOOLHOST --config TOML
serve` itself as a client launching a server does, or over streamable HTTP
at URL. Prints one JSON line: the calls made and their median in
microseconds.

    python sdk_calls.py --toolhost BIN --config TOML --calls N [--url URL]
"""

import argparse
import json
import os
import statistics
import time

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


async def calls(session: ClientSession, n: int) -> list[float]:
    # Warm: the first calls pay for the connection and the code's first runs.
    for _ in range(20):
        await session.call_tool("read", {"path": "small.txt"})
    took = []
    for _ in range(n):
        start = time.perf_counter()
        result = await session.call_tool("read", {"path": "small.txt"})
        took.append((time.perf_counter() - start) * 1e6)
        if result.is_error:
            raise SystemExit(f"the call failed: {result.content}")
    return took


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolhost", required=True)
    parser.add_argument("--config", required=True)
    parser.add_argument("--calls", type=int, required=True)
    parser.add_argument("--url")
    args = parser.parse_args()
    if args.url:
        async with streamable_http_client(args.url) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                took = await calls(session, args.calls)
    else:
        server = StdioServerParameters(command=args.toolhost, args=["--config", args.config, "serve"])
        with open(os.devnull, "w") as quiet:
            async with stdio_client(server, errlog=quiet) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    took = await calls(session, args.calls)
    print(json.dumps({"calls": len(took), "p50_us": statistics.median(took)}))


anyio.run(main)
