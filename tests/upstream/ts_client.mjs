// The official TypeScript SDK's client (v2, `@modelcontextprotocol/client`)
// pinned to MCP 2026-07-28, calling through toolhost with the tasks
// extension's requester (`@modelcontextprotocol/ext-tasks`), over stdio and
// over streamable HTTP, compared with the same client connected to
// server-everything directly.
//
//   node ts_client.mjs --toolhost BIN --everything DIST_INDEX_JS --dir DIR
//
// DIR is an empty directory of the caller's (the test's temporary one):
// toolhost's configuration and log go there. Prints what it checked and
// exits 0, or prints what differed and exits 1.

import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync, openSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

const { values: args } = parseArgs({
  options: { toolhost: { type: "string" }, everything: { type: "string" }, dir: { type: "string" } },
});
const REVISION = "2026-07-28";
const clientInfo = { name: "toolhost-ts-client", version: "1" };
const clientCapabilities = {};
const TASKS = "io.modelcontextprotocol/tasks";
const revisionMeta = {
  "io.modelcontextprotocol/protocolVersion": REVISION,
  "io.modelcontextprotocol/clientInfo": clientInfo,
  "io.modelcontextprotocol/clientCapabilities": { extensions: { [TASKS]: {} } },
};

function fail(message) {
  console.error(`FAIL: ${message}`);
  process.exit(1);
}

function check(condition, message) {
  if (!condition) fail(message);
}

/** Requests sent on the client's own transport, their answers taken before the SDK sees them. */
function dispatchOn(transport) {
  const pending = new Map();
  let next = 0;
  const inner = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const resolve = pending.get(message?.id);
    if (resolve === undefined) return inner?.(message, extra);
    pending.delete(message.id);
    resolve(message);
  };
  return (request) =>
    new Promise((resolve, reject) => {
      const id = `raw-${++next}`;
      pending.set(id, (m) => resolve(m.error ? { kind: "error", error: m.error } : { kind: "result", result: m.result }));
      transport.send({ jsonrpc: "2.0", id, ...request }).catch(reject);
    });
}

/** Requests POSTed by hand to `url`, their answer read whatever the HTTP status. */
function dispatchOver(url) {
  let next = 0;
  return async (request, options = {}) => {
    const id = `raw-${++next}`;
    const params = request.params ?? {};
    const name = request.method === "tools/call" ? params.name : params.taskId;
    const response = await fetch(url, {
      method: "POST",
      signal: options.signal,
      body: JSON.stringify({ jsonrpc: "2.0", id, ...request }),
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": REVISION,
        "mcp-method": request.method,
        ...(name === undefined ? {} : { "mcp-name": name }),
        ...(options.context?.headers ?? {}),
      },
    });
    const text = await response.text();
    const messages = (response.headers.get("content-type") ?? "").includes("text/event-stream")
      ? text
          .split("\n")
          .filter((l) => l.startsWith("data:") && l.slice(5).trim())
          .map((l) => JSON.parse(l.slice(5)))
      : [JSON.parse(text)];
    const message = messages.find((m) => m.id === id);
    check(message !== undefined, `no answer to ${request.method} (HTTP ${response.status}): ${text.slice(0, 300)}`);
    return message.error ? { kind: "error", error: message.error } : { kind: "result", result: message.result };
  };
}

/** What `client` sees: the tools' names, and an echo called through a tasks session. */
async function observe(client, rawDispatch, prefix) {
  const tools = (await client.listTools()).tools.map((t) => t.name);
  const session = createTaskSessionFromClient(client, {
    endpointId: `toolhost-${prefix || "direct"}`,
    ...(rawDispatch ? { rawDispatch, v2RequestFraming: { protocolVersion: REVISION, clientInfo, clientCapabilities } } : {}),
  });
  try {
    const execution = await session.callTool(`${prefix}echo`, { message: "through" });
    const { outcome } = await execution.settle();
    const result = resultFromTaskOutcome(outcome);
    return { era: client.getProtocolEra(), tools, kind: execution.kind, content: result.content };
  } finally {
    await session.close();
  }
}

const top = args.dir;
mkdirSync(join(top, "plugins"), { recursive: true });
const config = join(top, "toolhost.toml");
writeFileSync(
  config,
  `root = "."\n[[upstream]]\nname = "everything"\nprefix = "ev_"\ncommand = "node"\n` +
    `args = ${JSON.stringify([args.everything, "stdio"])}\n`,
);
const toolhostArgs = ["--no-cache", "--config", config, "--plugins", join(top, "plugins"), "serve"];

// Directly: server-everything speaks 2025-11-25, so the client negotiates down.
const direct = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: "auto" } });
await direct.connect(new StdioClientTransport({ command: "node", args: [args.everything, "stdio"], stderr: "ignore" }));
const expected = await observe(direct, undefined, "");
await direct.close();
check(expected.content?.[0]?.text?.includes("through"), `direct echo: ${JSON.stringify(expected)}`);

const checked = [];
async function through(transportName, client, rawDispatch) {
  const seen = await observe(client, rawDispatch, "ev_");
  check(seen.era === "modern", `${transportName}: the client negotiated ${seen.era}, not ${REVISION}`);
  const missing = expected.tools.filter((t) => !seen.tools.includes(`ev_${t}`));
  check(missing.length === 0, `${transportName}: tools missing through toolhost: ${missing}`);
  check(seen.kind === "immediate", `${transportName}: echo ran as ${seen.kind}`);
  check(
    JSON.stringify(seen.content) === JSON.stringify(expected.content),
    `${transportName}: echo content ${JSON.stringify(seen.content)} != direct ${JSON.stringify(expected.content)}`,
  );
  // The tasks extension is not served yet: its requests are unknown methods,
  // the same on each transport.
  const got = await rawDispatch({ method: "tasks/get", params: { taskId: "t1", _meta: revisionMeta } });
  check(got.kind === "error" && got.error.code === -32601, `${transportName}: tasks/get answered ${JSON.stringify(got)}`);
  checked.push(`${transportName}: ${seen.tools.length} tools, echo as directly, tasks/get -32601`);
}

// Over stdio.
const stdioTransport = new StdioClientTransport({ command: args.toolhost, args: toolhostArgs, cwd: top, stderr: "ignore" });
const overStdio = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: { pin: REVISION } } });
await overStdio.connect(stdioTransport);
await through("stdio", overStdio, dispatchOn(stdioTransport));
await overStdio.close();

// Over streamable HTTP.
const logPath = join(top, "toolhost-http.log");
const server = spawn(args.toolhost, [...toolhostArgs, "--http", "127.0.0.1:0"], {
  cwd: top,
  stdio: ["ignore", "ignore", openSync(logPath, "w")],
});
try {
  let url;
  for (let i = 0; i < 600 && url === undefined; i++) {
    check(server.exitCode === null, `toolhost --http exited: ${readFileSync(logPath, "utf8")}`);
    url = /serving MCP at (\S+)/.exec(readFileSync(logPath, "utf8"))?.[1];
    if (url === undefined) await new Promise((r) => setTimeout(r, 50));
  }
  check(url !== undefined, `toolhost --http never served: ${readFileSync(logPath, "utf8")}`);
  const overHttp = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: { pin: REVISION } } });
  await overHttp.connect(new StreamableHTTPClientTransport(new URL(url)));
  await through("http", overHttp, dispatchOver(url));
  await overHttp.close();
} finally {
  server.kill();
}
console.log(checked.join("\n"));
