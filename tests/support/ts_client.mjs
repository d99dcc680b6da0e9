// A client built on the TypeScript SDK (@modelcontextprotocol/sdk 1.x), driven by one JSON argument:
//
//   node ts_client.mjs '{"stdio": {"command": "...", "args": [...], "env": {...}, "cwd": "..."},
//                        "calls": [{"name": "tool", "arguments": {...}}, ...]}'
//   node ts_client.mjs '{"url": "http://127.0.0.1:PORT/mcp", "calls": [...]}'
//
// It connects (StdioClientTransport or StreamableHTTPClientTransport), lists every tool (all
// pages), then makes each call, and prints ONE JSON document on stdout:
//
//   {"server": {...}, "tools": [...],
//    "calls": [{"name", "arguments", "result": {"content", "isError", "structuredContent"}}
//             | {"name", "arguments", "thrown": {"name", "code", "message", "data"}}],
//    "fatal": null | {"name", "code", "message"}}
//
// so a test can tell "the client threw" (thrown) from "the client got isError: true" (result).
// The SDK client validates structuredContent against the tool's outputSchema from the listing and
// throws McpError -32602 "Structured content does not match the tool's output schema" when it
// does not match: that is reported as `thrown`, like any other error of callTool.
// tests/support/node.py copies this file next to the node_modules it imports from.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

function describe(error) {
  if (error === null || typeof error !== 'object') return { name: typeof error, code: null, message: String(error) };
  return {
    name: error.constructor?.name ?? 'Error',
    code: typeof error.code === 'number' ? error.code : null,
    message: String(error.message ?? error),
    data: error.data ?? null,
  };
}

const spec = JSON.parse(process.argv[2] ?? '{}');
const output = { server: null, tools: null, calls: [], fatal: null };
const client = new Client({ name: 'mcp-schema-gate-ts-client', version: '1.0.0' }, { capabilities: {} });
let transport;
try {
  if (spec.url) {
    transport = new StreamableHTTPClientTransport(new URL(spec.url));
  } else {
    const { command, args = [], env = {}, cwd } = spec.stdio;
    transport = new StdioClientTransport({ command, args, env: { ...process.env, ...env }, cwd, stderr: 'inherit' });
  }
  await client.connect(transport);
  output.server = client.getServerVersion() ?? null;

  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  output.tools = tools;

  for (const call of spec.calls ?? []) {
    const entry = { name: call.name, arguments: call.arguments ?? {} };
    try {
      const result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} });
      entry.result = {
        content: result.content ?? null,
        isError: result.isError ?? false,
        structuredContent: result.structuredContent ?? null,
      };
    } catch (error) {
      entry.thrown = describe(error);
    }
    output.calls.push(entry);
  }
} catch (error) {
  output.fatal = describe(error);
} finally {
  try {
    if (transport instanceof StreamableHTTPClientTransport && transport.sessionId) {
      await transport.terminateSession(); // DELETE: the gate ends this session's upstream
    }
  } catch (error) {
    output.terminate = describe(error);
  }
  try {
    await client.close();
  } catch {
    // closing is best effort; the document below is what counts
  }
}
process.stdout.write(JSON.stringify(output) + '\n');
process.exit(0);
