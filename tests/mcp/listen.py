"""Listen on one toolhost replica for tool list changes, as an MCP
2026-07-28 client does (`subscriptions/listen`), and report the first one.

`--ready FILE` is written once the subscription is honoured, so that the
test changes the catalog only after that; the driver then waits (bounded)
for a `ToolsListChanged` event and prints `ok: listen`.

Run by tests/cluster.rs, where the change is made on another replica.
"""

import argparse

import anyio
from mcp import Client

from driver import check, run


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolhost", help="unused: the replica is already serving")
    parser.add_argument("--url", required=True)
    parser.add_argument("--ready", required=True)
    args = parser.parse_args()
    async with Client(args.url, mode="2026-07-28") as client:
        check(client.protocol_version == "2026-07-28", f"negotiated {client.protocol_version}")
        async with client.listen(tools_list_changed=True) as subscription:
            check(subscription.honored.tools_list_changed, f"not honoured: {subscription.honored}")
            with open(args.ready, "w") as f:
                f.write("listening\n")
            with anyio.fail_after(60):
                async for event in subscription:
                    check(type(event).__name__ == "ToolsListChanged", f"event: {event}")
                    break
    print("ok: listen")


if __name__ == "__main__":
    run(main)
