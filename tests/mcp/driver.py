"""What the Python MCP drivers under tests/mcp/ share: checks that fail
with a message, waiting on a condition (not a clock), the text of a tool
result, a recorder of server notifications, a model as the JSON it came
from, and the `__main__` wrapper that turns a failed check into a message
and exit status 1."""

import sys

import anyio
import mcp.types as types


def check(ok, what):
    if not ok:
        raise AssertionError(what)


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


async def wait_until(condition, what):
    """Wait for a condition, not a clock: the bound only keeps a broken
    server from hanging the test."""
    with anyio.move_on_after(60):
        while not condition():
            await anyio.sleep(0.05)
        return
    raise AssertionError(f"never happened: {what}")


def recorder(*kinds):
    """A message handler and the notifications of `kinds` it saw (by
    default tools/list_changed)."""
    kinds = kinds or (types.ToolListChangedNotification,)
    seen = []

    async def on_message(message):
        if isinstance(message, kinds):
            seen.append(message)

    return on_message, seen


def wire(model):
    """A protocol object as the JSON it travels as (unset fields left out),
    for comparing what two servers sent field by field."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def run(main):
    """Run the driver's async `main`; a failed check exits 1 with its message."""
    try:
        anyio.run(main)
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
