"""Drive `toolhost serve --watch` (stdio) with the official Python MCP SDK
while its plugin directory changes, and check what an MCP client sees:

- a tool plugin copied into the directory: the client is sent
  tools/list_changed, the next tools/list has its tool, and calling it
  works;
- a file that is not a component dropped beside it: reported by name in the
  log, and the plugin already there is still served;
- the tool plugin removed: its tool is no longer listed.

Run by tests/mcp_python.rs; exits non-zero with a message on the first
check that fails.
"""

import argparse
import os
import shutil
import tempfile

from mcp import ClientSession, StdioServerParameters, stdio_client

from driver import check, read, recorder, run, stdio_env, text, wait_until


async def watch(args, top):
    plugins = os.path.join(top, "plugins")
    os.makedirs(plugins)
    os.makedirs(os.path.join(top, "root"))
    log_path = os.path.join(top, "toolhost.log")
    on_message, changed = recorder()
    command = ["--no-cache", "--plugins", plugins, "serve", "--watch"]
    with open(log_path, "w") as log:
        params = StdioServerParameters(command=args.toolhost, args=command, cwd=os.path.join(top, "root"), env=stdio_env())
        async with stdio_client(params, errlog=log) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream, message_handler=on_message) as session:
                await session.initialize()

                async def tools():
                    return {t.name for t in (await session.list_tools()).tools}

                async def next_change(what):
                    seen = len(changed)
                    await wait_until(lambda: len(changed) > seen, f"tools/list_changed after {what}")

                before = await tools()
                check("read" in before and "word_count" not in before, f"tools before: {sorted(before)}")

                # Written under another name and renamed in, as a build would.
                staged = os.path.join(top, "text-tools.wasm")
                shutil.copy(args.tool_plugin, staged)
                os.rename(staged, os.path.join(plugins, "20-text-tools.wasm"))
                await next_change("adding a tool plugin")
                after = await tools()
                check({"read", "word_count"} <= after, f"tools after adding: {sorted(after)}")
                r = await session.call_tool("word_count", {"text": "one two three"})
                check(not r.is_error and "3" in text(r), f"word_count: {text(r)}")

                with open(os.path.join(plugins, "30-broken.wasm"), "wb") as f:
                    f.write(b"not a component")
                await wait_until(lambda: "30-broken.wasm" in read(log_path), "the broken file named in the log")
                r = await session.call_tool("word_count", {"text": "still here"})
                check(not r.is_error and "2" in text(r), f"word_count beside a broken plugin: {text(r)}")

                os.remove(os.path.join(plugins, "20-text-tools.wasm"))
                os.remove(os.path.join(plugins, "30-broken.wasm"))
                await next_change("removing the tool plugin")
                gone = await tools()
                check("read" in gone and "word_count" not in gone, f"tools after removing: {sorted(gone)}")
    log = read(log_path)
    check("reloaded (plugins text-tools)" in log and "reloaded (no plugins)" in log, f"the reload is not logged:\n{log}")
    # One reload a change: a file's create, write and close settle into one.
    reloads = log.count("reloaded (")
    check(reloads == 3, f"{reloads} reloads for 3 changes:\n{log}")


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolhost", required=True)
    parser.add_argument("--tool-plugin", required=True, help="text_tools.wasm")
    args = parser.parse_args()
    await watch(args, tempfile.mkdtemp(prefix="toolhost-watch-"))
    print("ok: watch")


if __name__ == "__main__":
    run(main)
