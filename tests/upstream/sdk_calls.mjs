// The official TypeScript SDK's client making `read` calls one after
// another through toolhost, for the front bench: over stdio, starting
// `TOOLHOST --config TOML serve` itself as a client launching a server
// does, or over streamable HTTP at URL. Prints one JSON line: the calls
// made and their median in microseconds.
//
//   node sdk_calls.mjs --calls N --toolhost BIN --config TOML [--url URL]

import { parseArgs } from "node:util";

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const { values: args } = parseArgs({
  options: Object.fromEntries(["calls", "toolhost", "config", "url"].map((k) => [k, { type: "string" }])),
});
const transport = args.url
  ? new StreamableHTTPClientTransport(new URL(args.url))
  : new StdioClientTransport({ command: args.toolhost, args: ["--config", args.config, "serve"], stderr: "ignore" });
const client = new Client({ name: "toolhost-bench", version: "1" });
await client.connect(transport);
const read = { name: "read", arguments: { path: "small.txt" } };
// Warm: the first calls pay for the connection and the code's first runs.
for (let i = 0; i < 20; i++) await client.callTool(read);
const took = [];
for (let i = 0; i < Number(args.calls); i++) {
  const start = performance.now();
  const result = await client.callTool(read);
  took.push((performance.now() - start) * 1000);
  if (result.isError) throw new Error(`the call failed: ${JSON.stringify(result.content)}`);
}
took.sort((a, b) => a - b);
console.log(JSON.stringify({ calls: took.length, p50_us: took[Math.floor((took.length - 1) / 2)] }));
await client.close();
