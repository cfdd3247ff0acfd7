"""A hostile MCP server (stdio, JSON-RPC by hand) that runs its one tool,
`giant`, as an MCP 2025-11-25 task, for tests/mcp/tasks.py: the task
completes at once, and its `tasks/result` is 17 MiB of text, over
toolhost's default message cap (16 MiB). Its other answers are as the
protocol says.
"""

import json
import sys
from datetime import datetime, timezone

GIANT = 17 << 20
NOW = datetime.now(timezone.utc).isoformat()
TOOL = {
    "name": "giant",
    "description": "A task whose result is too big.",
    "inputSchema": {"type": "object", "properties": {}},
    "execution": {"taskSupport": "optional"},
}
tasks = {}


def task(task_id):
    return {"taskId": task_id, "status": "completed", "createdAt": NOW, "lastUpdatedAt": NOW, "ttl": 60_000}


def answer(request):
    method, params = request["method"], request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {
                "tools": {},
                "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
            },
            "serverInfo": {"name": "task-server", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call" and "task" in params:
        task_id = f"t{len(tasks)}"
        tasks[task_id] = True
        return {"task": task(task_id)}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "not as a task"}]}
    if method in ("tasks/get", "tasks/cancel"):
        return task(params["taskId"])
    if method == "tasks/result":
        return {"content": [{"type": "text", "text": "x" * GIANT}]}
    if method == "tasks/list":
        return {"tasks": [task(t) for t in tasks]}
    if method == "ping":
        return {}
    return None


for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request or "method" not in request:
        continue
    result = answer(request)
    if result is None:
        reply = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no such method"}}
    else:
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
