// The official TypeScript SDK's client (v2, `@modelcontextprotocol/client`)
// pinned to MCP 2026-07-28, calling through toolhost with the tasks
// extension's requester (`@modelcontextprotocol/ext-tasks`), over stdio and
// over streamable HTTP, compared with the same client connected to
// server-everything directly.
//
//   node ts_client.mjs --toolhost BIN --config TOML --plugins DIR \
//       --url HTTP_URL --everything DIST_INDEX_JS
//
// The caller owns the configuration (server-everything as upstream `ev_`)
// and the `toolhost serve --http` at HTTP_URL; over stdio this script
// starts toolhost itself, as a client launching a server does, and it ends
// with the script. Prints what it checked and exits 0, or prints what
// differed and exits 1.

import { parseArgs } from "node:util";

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

const { values: args } = parseArgs({
  options: Object.fromEntries(["toolhost", "config", "plugins", "url", "everything"].map((k) => [k, { type: "string" }])),
});
const REVISION = "2026-07-28";
const clientInfo = { name: "toolhost-ts-client", version: "1" };
// Forms only: a server asks the user through the tasks' `inputRequests`.
const clientCapabilities = { elicitation: { form: {} } };
const TASKS = "io.modelcontextprotocol/tasks";
const revisionMeta = {
  "io.modelcontextprotocol/protocolVersion": REVISION,
  "io.modelcontextprotocol/clientInfo": clientInfo,
  "io.modelcontextprotocol/clientCapabilities": { extensions: { [TASKS]: {} } },
};

function check(condition, message) {
  if (!condition) throw new Error(message);
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
    const headers = new Headers({
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": REVISION,
      "mcp-method": request.method,
      ...(name === undefined ? {} : { "mcp-name": name }),
    });
    // The requester's own (its `Mcp-Name` of a task) replace ours, whatever their case.
    for (const [key, value] of Object.entries(options.context?.headers ?? {})) headers.set(key, value);
    const response = await fetch(url, {
      method: "POST",
      signal: options.signal,
      body: JSON.stringify({ jsonrpc: "2.0", id, ...request }),
      headers,
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

/** `tool`, called through `session` until it ends: how it ran, the statuses it went through, its result. */
async function settled(session, tool, args) {
  const execution = await session.callTool(tool, args);
  const statuses = [];
  for await (const update of execution.updates()) {
    if (update.type === "task" && statuses.at(-1) !== update.task.status) statuses.push(update.task.status);
  }
  const { outcome } = await execution.settle();
  return { kind: execution.kind, statuses, content: resultFromTaskOutcome(outcome).content };
}

/**
 * What `client` sees: the tools' names; a plain call whose server asks a
 * question, accepted then declined; an echo called through a tasks
 * session; and server-everything's research task, plainly and, two at
 * once, where each asks the user to clarify its topic, unless
 * `direct` (ext-tasks 0.2.2 cannot match a 2025-11-25 task's question to
 * its task: "zero-matches").
 */
async function observe(client, rawDispatch, prefix, direct = false) {
  const tools = (await client.listTools()).tools.map((t) => t.name);
  // A question during a plain call: on 2026-07-28 it comes back as the
  // call's `input_required`, and the SDK's round-trip driver answers it here.
  let decline = false;
  client.setRequestHandler("elicitation/create", async () =>
    decline ? { action: "decline" } : { action: "accept", content: { name: "Ada", check: true } },
  );
  const elicited = [];
  for (const declined of [false, true]) {
    decline = declined;
    const result = await client.callTool({ name: `${prefix}trigger-elicitation-request`, arguments: {} });
    elicited.push(result.content);
  }
  const asked = [];
  const session = createTaskSessionFromClient(client, {
    endpointId: `toolhost-${prefix || "direct"}`,
    ...(rawDispatch ? { rawDispatch, v2RequestFraming: { protocolVersion: REVISION, clientInfo, clientCapabilities } } : {}),
    onInputRequest: async (request) => {
      if (request.kind !== "elicitation") return undefined;
      asked.push(request.params.message);
      const interpretation = request.params.message.includes('"glaciers"') ? "current" : "historical";
      return { action: "accept", content: { interpretation } };
    },
  });
  try {
    const echo = await settled(session, `${prefix}echo`, { message: "through" });
    const research = await settled(session, `${prefix}simulate-research-query`, { topic: "tides" });
    // Two at once, each asking its own question of the client.
    const clarified = direct
      ? undefined
      : await Promise.all(
          ["tides", "glaciers"].map((topic) => settled(session, `${prefix}simulate-research-query`, { topic, ambiguous: true })),
        );
    return { era: client.getProtocolEra(), tools, kind: echo.kind, content: echo.content, elicited, research, clarified, asked, session };
  } catch (e) {
    await session.close();
    throw e;
  }
}

const toolhostArgs = ["--no-cache", "--config", args.config, "--plugins", args.plugins, "serve"];

// Directly: server-everything speaks 2025-11-25, so the client negotiates down.
const direct = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: "auto" } });
await direct.connect(new StdioClientTransport({ command: "node", args: [args.everything, "stdio"], stderr: "ignore" }));
const expected = await observe(direct, undefined, "", true);
await expected.session.close();
await direct.close();
check(expected.content?.[0]?.text?.includes("through"), `direct echo: ${JSON.stringify(expected)}`);
check(expected.research.content?.[0]?.text?.includes("# Research Report: tides\n"), `direct research: ${JSON.stringify(expected.research)}`);
check(
  expected.elicited[0]?.[0]?.text?.includes("User provided") && expected.elicited[1]?.[0]?.text?.includes("declined"),
  `direct elicitation: ${JSON.stringify(expected.elicited)}`,
);

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
  // The server's question during a plain call is answered, accepted then
  // declined, and the tool reports each answer as it does directly.
  check(
    JSON.stringify(seen.elicited) === JSON.stringify(expected.elicited),
    `${transportName}: elicited ${JSON.stringify(seen.elicited)} != direct ${JSON.stringify(expected.elicited)}`,
  );
  // The research runs as a task of toolhost's and reports what it reports
  // directly; asked to clarify, the question reaches the client as the
  // task's input request, and the answer the server.
  const { research, clarified } = seen;
  check(
    [research, ...clarified].every((r) => r.kind === "task"),
    `${transportName}: research ran as ${[research, ...clarified].map((r) => r.kind)}`,
  );
  check(
    JSON.stringify(research.content) === JSON.stringify(expected.research.content),
    `${transportName}: report ${JSON.stringify(research.content)} != direct ${JSON.stringify(expected.research.content)}`,
  );
  check(
    JSON.stringify(seen.asked.map((m) => m.match(/^The research query "(\w+)" could have multiple interpretations/)?.[1]).sort()) ===
      JSON.stringify(["glaciers", "tides"]),
    `${transportName}: asked ${JSON.stringify(seen.asked)}`,
  );
  for (const [report, title] of [
    [clarified[0], "tides (historical)"],
    [clarified[1], "glaciers (current)"],
  ]) {
    check(report.statuses.includes("input_required"), `${transportName}: ${title}: statuses ${report.statuses}`);
    check(
      report.content?.[0]?.text?.includes(`# Research Report: ${title}`),
      `${transportName}: clarified report ${JSON.stringify(report.content)}`,
    );
  }
  // 2025-11-25's task requests are not the extension's; an id toolhost
  // never made names nothing.
  const result = await rawDispatch({ method: "tasks/result", params: { taskId: "t1", _meta: revisionMeta } });
  check(result.kind === "error" && result.error.code === -32601, `${transportName}: tasks/result answered ${JSON.stringify(result)}`);
  const got = await rawDispatch({ method: "tasks/get", params: { taskId: "t1", _meta: revisionMeta } });
  check(got.kind === "error" && got.error.code === -32602, `${transportName}: tasks/get answered ${JSON.stringify(got)}`);
  await seen.session.close();
  checked.push(
    `${transportName}: ${seen.tools.length} tools, echo as directly, a plain call's question accepted and declined ` +
      `as directly (input_required), research as a task reporting as directly, ` +
      `two at once clarified through their input requests (${clarified[0].statuses.join(" → ")}), ` +
      `tasks/result -32601, unknown task -32602`,
  );
}

// Over stdio.
const stdioTransport = new StdioClientTransport({ command: args.toolhost, args: toolhostArgs, stderr: "ignore" });
const overStdio = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: { pin: REVISION } } });
await overStdio.connect(stdioTransport);
await through("stdio", overStdio, dispatchOn(stdioTransport));
await overStdio.close();

// Over streamable HTTP.
const overHttp = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: { pin: REVISION } } });
await overHttp.connect(new StreamableHTTPClientTransport(new URL(args.url)));
await through("http", overHttp, dispatchOver(args.url));
await overHttp.close();
console.log(checked.join("\n"));
