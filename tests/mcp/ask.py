"""A plugin that asks the user before a call runs (contract 0.3's `ask`),
driven with the official Python MCP SDK, over stdio and streamable HTTP,
against `toolhost serve` with the `fixture_asker` component:

- accepted: the SDK's elicitation callback gets a form whose first line
  names the plugin and the tool, and whose one property is the host's
  yes-or-no `confirm`; answering yes lets the call run;
- declined: the call does not run, and says so;
- a client that declared no elicitation gets an error naming the plugin,
  never a hang.

Run by tests/ask_user.rs; exits non-zero with a message on the first check
that fails.
"""

import argparse
import os
import shutil
import tempfile

import anyio
import mcp.types as types

from driver import check, connect, run, text


def answering(answer):
    """An elicitation callback answering `answer`, and what it was asked."""
    asked = []

    async def on_elicit(context, params):
        asked.append(params)
        return answer

    return on_elicit, asked


async def delete(args, top, transport, **callbacks):
    """`delete notes.md` through a fresh session: its result."""
    argv = ["--no-cache", "--plugins", os.path.join(top, "plugins"), "serve"]
    log_path = os.path.join(top, f"toolhost-{transport}.log")
    async with connect(args.toolhost, argv, transport, top, log_path, **callbacks) as client:
        await client.initialize()
        with anyio.fail_after(60):
            return await client.call_tool("delete", {"path": "notes.md"})


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolhost", required=True)
    parser.add_argument("--plugin", required=True, help="fixture_asker.wasm")
    args = parser.parse_args()
    top = tempfile.mkdtemp(prefix="toolhost-ask-")
    os.makedirs(os.path.join(top, "plugins"))
    shutil.copy(args.plugin, os.path.join(top, "plugins", "asker.wasm"))

    for transport in ("stdio", "http"):
        on_elicit, asked = answering(types.ElicitResult(action="accept", content={"confirm": True}))
        result = await delete(args, top, transport, elicitation_callback=on_elicit)
        check(not result.is_error and text(result) == "deleted notes.md", f"{transport}, accepted: {text(result)}")
        check(len(asked) == 1, f"{transport}: asked {len(asked)} times")
        message, schema = asked[0].message, asked[0].requested_schema
        check(message.startswith("The plugin `asker` asks before the tool `delete` runs:")
              and message.endswith("Delete notes.md?"), f"{transport}: shown {message!r}")
        check(list(schema["properties"]) == ["confirm"] and schema["properties"]["confirm"]["type"] == "boolean",
              f"{transport}: form {schema}")

        on_elicit, _ = answering(types.ElicitResult(action="decline"))
        result = await delete(args, top, transport, elicitation_callback=on_elicit)
        check(result.is_error and text(result) == "the user declined", f"{transport}, declined: {text(result)}")

    result = await delete(args, top, "stdio")
    check(result.is_error and "plugin `asker` asks the user before `delete` runs" in text(result)
          and "did not declare form elicitation" in text(result), f"no elicitation: {text(result)}")
    print("ok: ask")


if __name__ == "__main__":
    run(main)
