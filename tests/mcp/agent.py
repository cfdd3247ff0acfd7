"""Drive `toolhost serve --root DIR` with the official Python MCP SDK, over
stdio or streamable HTTP, and check what the agent is told of the tools:

- the initialize result's `instructions` and the `system-prompt` prompt:
  "Available tools" (each tool's snippet, else its description's first
  line) and "Guidelines" (each bullet once);
- each tool's `title` (a plugin's label), `annotations` (from the value
  models, over an upstream server's own) and `outputSchema` (native tools
  and an upstream's; the client checks every structured result against
  it), and an upstream result that does not match its schema turned into
  an error;
- `--root`: the file tools read below the directory given.

Run by tests/mcp_python.rs; exits non-zero with a message on the first
check that fails.
"""

import argparse
import os
import sys
import tempfile

from mcp.shared.exceptions import MCPError

from driver import check, connect, run, text

HERE = os.path.dirname(os.path.abspath(__file__))


def first_line(description):
    return next(line.strip() for line in description.splitlines() if line.strip())


async def exercise(client):
    init = await client.initialize()
    tools = (await client.list_tools()).tools
    by_name = {t.name: t for t in tools}
    for name in ["read", "write", "word_count", "an_count_words", "an_lying_count"]:
        check(name in by_name, f"{name} is not listed: {sorted(by_name)}")

    # The sections, rebuilt here from the listing as the seed's agents do.
    snippets = {"word_count": "word_count: count the words of a text"}
    lines = [snippets.get(t.name, f"{t.name}: {first_line(t.description)}") for t in tools]
    guidelines = [
        "Use grep or glob to find code before reading whole files or directories.",
        "Read a file before you edit it: `old_string` must match its text exactly.",
        "Use word_count instead of counting words yourself.",
    ]
    expected = (
        "Available tools:\n"
        + "".join(f"- {line}\n" for line in lines)
        + "\nGuidelines:\n"
        + "\n".join(f"- {g}" for g in guidelines)
    )
    check(init.instructions == expected, f"instructions:\n{init.instructions}\n--- expected:\n{expected}")

    prompts = (await client.list_prompts()).prompts
    check([p.name for p in prompts] == ["system-prompt"], f"prompts: {prompts}")
    got = await client.get_prompt("system-prompt")
    check(len(got.messages) == 1 and got.messages[0].content.text == expected, f"system-prompt: {got}")
    try:
        await client.get_prompt("nope")
        check(False, "an unknown prompt was served")
    except MCPError as e:
        check("system-prompt" in str(e), f"unknown prompt: {e}")

    def hints(name):
        a = by_name[name].annotations
        return a and (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)

    check(by_name["word_count"].title == "Word count", f"title: {by_name['word_count'].title}")
    check(by_name["read"].title == "Read file", f"title: {by_name['read'].title}")
    check(hints("read") == (True, None, True, False), f"read: {hints('read')}")
    check(hints("glob") == (True, None, None, False), f"glob: {hints('glob')}")
    check(hints("web_fetch") == (True, None, None, True), f"web_fetch: {hints('web_fetch')}")
    check(hints("write") == (False, True, None, False), f"write: {hints('write')}")
    # No value model, no HTTP grant: only that it stays in its sandbox.
    check(hints("word_count") == (None, None, None, False), f"word_count: {hints('word_count')}")
    # The server's own hints, with the user's `pure` laid over them.
    check(hints("an_count_words") == (True, None, True, False), f"an_count_words: {hints('an_count_words')}")
    counted = by_name["an_count_words"]
    check(counted.title == "Count words", f"upstream title: {counted.title}")
    check(
        counted.output_schema and counted.output_schema["properties"]["words"]["type"] == "integer",
        f"upstream outputSchema: {counted.output_schema}",
    )
    read_schema = by_name["read"].output_schema
    check(read_schema and "total_lines" in read_schema["required"], f"read outputSchema: {read_schema}")

    # The client validates each structured result against the tool's
    # outputSchema: these would raise if a native result did not match.
    r = await client.call_tool("read", {"path": "hello.txt"})
    check(not r.is_error and r.structured_content["content"].strip() == "hello", f"read under --root: {text(r)}")
    for name, args in [("glob", {"pattern": "*"}), ("grep", {"pattern": "hello"}), ("ls", {}),
                       ("write", {"path": "new.txt", "content": "x"}),
                       ("edit", {"path": "new.txt", "old_string": "x", "new_string": "y"})]:
        r = await client.call_tool(name, args)
        check(not r.is_error, f"{name}: {text(r)}")
    r = await client.call_tool("an_count_words", {"text": "a b c"})
    check(not r.is_error and r.structured_content == {"words": 3}, f"an_count_words: {text(r)}")
    r = await client.call_tool("an_lying_count", {"text": "a b c"})
    check(
        r.is_error and "does not match its output schema" in text(r) and "- words: expected integer" in text(r),
        f"an_lying_count: {text(r)}",
    )


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolhost", required=True)
    parser.add_argument("--plugins", required=True)
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    args = parser.parse_args()
    top = tempfile.mkdtemp(prefix="toolhost-agent-")
    os.makedirs(os.path.join(top, "root"))
    with open(os.path.join(top, "root", "hello.txt"), "w") as f:
        f.write("hello\n")
    config = os.path.join(top, "toolhost.toml")
    with open(config, "w") as f:
        f.write(
            "writable = true\n"
            "[[upstream]]\n"
            'name = "annotated"\n'
            f'command = "{sys.executable}"\n'
            f'args = ["{os.path.join(HERE, "annotated_server.py")}"]\n'
            'prefix = "an_"\n'
            "[tools.an_count_words]\n"
            'side_effect = "pure"\n'
        )
    argv = ["--no-cache", "--config", config, "--plugins", args.plugins, "serve", "--root", "root"]
    async with connect(args.toolhost, argv, args.transport, top, os.path.join(top, "server.log")) as client:
        await exercise(client)
    print(f"ok: agent over {args.transport}")


if __name__ == "__main__":
    run(main)
