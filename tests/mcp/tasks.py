"""MCP 2025-11-25 tasks through `toolhost serve`, with the official Python
client, to server-everything's `simulate-research-query` (a tool whose
`execution.taskSupport` is `required`; it runs four stages of a second).
Each scenario:

- `lifecycle` (stdio): the tasks capability is declared; a task-augmented
  call answers a task under an id of toolhost's own; `tasks/get` gives its
  status, `tasks/list` lists it, `tasks/result` its result (with the
  related task named by that same id), the server's status notifications
  reach the client under that id, `tasks/cancel` cancels another.
- `elicitation` (stdio): an ambiguous research task asks the client to
  clarify (`input_required`), through `tasks/result`; the client's answer
  (a decline) reaches the server, whose report says so.
- `sessions` (HTTP, two sessions): the task tool is listed with its
  `execution` over HTTP too; a task id of one session is refused in the
  other (get, result, cancel) and not in its list.
- `flood` (stdio): a session's tasks are capped; the one beyond is refused
  naming the cap, before it reaches the server.
- `forbidden` (stdio): a task-augmented call of a tool that may not run as
  one is refused naming it.
- `giant` (stdio, tests/mcp/task_server.py): a task whose `tasks/result` is
  over the upstream's message cap is answered with an error naming the
  cap, and the session still serves.

Run by tests/mcp_upstreams.rs; exits non-zero with a message on the first
check that fails.
"""

import argparse
import json
import os
import re
import sys
import tempfile

import mcp.types as types
from mcp.client.extension import NotificationBinding
from mcp.shared.exceptions import MCPError

from driver import check, run, wait_until
from relay import everything, http_session, over_http, over_stdio

RESEARCH = "ev_simulate-research-query"
MAX_LIVE_TASKS = 16


async def start(session, topic, tool=RESEARCH, arguments=None):
    """A task-augmented `tools/call`: its task. The SDK (2.3) checks any
    `tools/call` answer against `CallToolResult`, whatever the request asked
    for, so the call is sent as its session sends every request, unchecked,
    and the answer read as the `CreateTaskResult` 2025-11-25 defines."""
    params = types.CallToolRequestParams(
        name=tool, arguments=arguments or {"topic": topic}, task=types.TaskMetadata(ttl=60_000)
    )
    data = params.model_dump(by_alias=True, mode="json", exclude_none=True)
    raw = await session._dispatcher.send_raw_request("tools/call", data, {})
    return types.CreateTaskResult.model_validate(raw, by_name=False).task


async def get(session, task_id):
    params = types.GetTaskRequestParams(task_id=task_id)
    return await session.send_request(types.GetTaskRequest(params=params), types.GetTaskResult)


async def result(session, task_id):
    params = types.GetTaskPayloadRequestParams(task_id=task_id)
    return await session.send_request(types.GetTaskPayloadRequest(params=params), types.CallToolResult)


async def cancel(session, task_id):
    params = types.CancelTaskRequestParams(task_id=task_id)
    return await session.send_request(types.CancelTaskRequest(params=params), types.CancelTaskResult)


async def listed(session):
    return await session.send_request(types.ListTasksRequest(), types.ListTasksResult)


async def refused(what, request, says):
    """`request` (awaitable) fails with an error whose message holds `says`."""
    try:
        answer = await request
    except MCPError as e:
        check(says in str(e), f"{what}: refused, but not saying {says!r}: {e}")
        return
    raise AssertionError(f"{what}: answered, not refused: {answer}")


async def ready(session):
    """server-everything's task tool is served, with its `execution`."""
    tools = {t.name: t for t in (await session.list_tools()).tools}
    check(RESEARCH in tools, f"{RESEARCH} is not served: {sorted(tools)}")
    execution = tools[RESEARCH].execution
    check(execution and execution.task_support == "required", f"{RESEARCH}'s execution: {execution}")


async def lifecycle(args, top):
    # The SDK surfaces 2025-11-25's `notifications/tasks/status` only to a
    # binding of that method.
    seen = []

    async def on_status(params):
        seen.append(params)

    binding = NotificationBinding(
        method="notifications/tasks/status", params_type=types.TaskStatusNotificationParams, handler=on_status
    )
    async with over_stdio(args, top, everything(args), notification_bindings=[binding]) as session:
        capabilities = session.initialize_result.capabilities
        check(capabilities.tasks and capabilities.tasks.requests, f"tasks not declared: {capabilities}")
        await ready(session)
        task = await start(session, "tidal energy")
        check(re.fullmatch(r"[0-9a-f]{32}", task.task_id), f"not toolhost's own id: {task.task_id}")
        check(task.status == "working", f"a new task's status: {task.status}")
        status = await get(session, task.task_id)
        check(status.task_id == task.task_id, f"tasks/get names another task: {status.task_id}")
        check(status.status in ("working", "completed"), f"tasks/get status: {status.status}")
        ids = [t.task_id for t in (await listed(session)).tasks]
        check(task.task_id in ids, f"tasks/list: {ids}")
        done = await result(session, task.task_id)
        body = " ".join(c.text for c in done.content if c.type == "text")
        check("Research Report: tidal energy" in body, f"tasks/result: {body[:300]}")
        related = (done.meta or {}).get("io.modelcontextprotocol/related-task", {})
        check(related.get("taskId") == task.task_id, f"related task: {related}")
        check((await get(session, task.task_id)).status == "completed", "not completed after its result")
        statuses = lambda: [(n.task_id, n.status) for n in seen]  # noqa: E731
        await wait_until(lambda: (task.task_id, "completed") in statuses(), "the completed status notified")
        check(all(i == task.task_id for i, _ in statuses()), f"statuses of other ids: {statuses()}")

        other = await start(session, "a task to cancel")
        cancelled = await cancel(session, other.task_id)
        check(cancelled.task_id == other.task_id, f"tasks/cancel names another task: {cancelled.task_id}")
        check(cancelled.status == "cancelled", f"tasks/cancel status: {cancelled.status}")
        check((await get(session, other.task_id)).status == "cancelled", "not cancelled after tasks/cancel")


async def elicitation(args, top):
    asked = []

    async def declines(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="decline")

    async with over_stdio(args, top, everything(args), elicitation_callback=declines) as session:
        await ready(session)
        task = await start(session, "", arguments={"topic": "python", "ambiguous": True})
        done = await result(session, task.task_id)
        body = " ".join(c.text for c in done.content if c.type == "text")
        check(len(asked) == 1 and "python" in asked[0], f"the client was asked: {asked}")
        check("User declined" in body, f"the client's answer did not reach the task: {body[:400]}")


async def sessions(args, top):
    async with over_http(args, top, everything(args)) as url:
        async with http_session(url) as a, http_session(url) as b:
            capabilities = a.initialize_result.capabilities
            check(capabilities.tasks and capabilities.tasks.requests, f"tasks not declared over HTTP: {capabilities}")
            await ready(a)
            task = await start(a, "owned by a")
            says = f"no task {task.task_id} in this session"
            await refused("tasks/get of another session's task", get(b, task.task_id), says)
            await refused("tasks/result of another session's task", result(b, task.task_id), says)
            await refused("tasks/cancel of another session's task", cancel(b, task.task_id), says)
            check(task.task_id not in [t.task_id for t in (await listed(b)).tasks], "listed in b")
            check((await get(a, task.task_id)).status in ("working", "completed"), "a lost its task")


async def flood(args, top):
    async with over_stdio(args, top, everything(args)) as session:
        await ready(session)
        for n in range(MAX_LIVE_TASKS):
            await start(session, f"flood {n}")
        await refused("a task beyond the cap", start(session, "one too many"), f"holds {MAX_LIVE_TASKS} tasks")


async def forbidden(args, top):
    async with over_stdio(args, top, everything(args)) as session:
        await refused("a task of a tool that may not run as one", start(session, "", tool="ev_echo", arguments={"message": "x"}), "cannot run as a task")


async def giant(args, top):
    server = os.path.join(os.path.dirname(os.path.abspath(__file__)), "task_server.py")
    upstream = (
        '[[upstream]]\nname = "tasks"\nprefix = "ts_"\n'
        f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([server])}\n"
    )
    async with over_stdio(args, top, upstream) as session:
        task = await start(session, "", tool="ts_giant", arguments={})
        check((await get(session, task.task_id)).status == "completed", "the giant task is not completed")
        await refused("a giant task result", result(session, task.task_id), "over the cap")
        check(task.task_id in [t.task_id for t in (await listed(session)).tasks], "the session lost its task")


SCENARIOS = {"lifecycle": lifecycle, "elicitation": elicitation, "sessions": sessions, "flood": flood, "forbidden": forbidden, "giant": giant}


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--toolhost", required=True)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), required=True)
    parser.add_argument("--everything", required=True, help="server-everything's dist/index.js")
    args = parser.parse_args()
    top = tempfile.mkdtemp(prefix="toolhost-tasks-")
    await SCENARIOS[args.scenario](args, top)
    print(f"ok: {args.scenario}")


if __name__ == "__main__":
    run(main)
