// The TypeScript SDK 1.x client (@modelcontextprotocol/sdk), the one most
// hosts embed. It speaks the 2025 protocol revisions only.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { env, report, step } from "./lib.mjs";

async function connect(token) {
  const client = new Client({ name: "cobranca-compat-sdk1", version: "1.0.0" });
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(env.url), { requestInit: { headers } });
  await client.connect(transport);
  return client;
}

const r = {};
let client;
r.connect = await step(async () => {
  client = await connect(env.token);
  return { protocolVersion: client.transport?.protocolVersion ?? null };
});
if (client) {
  // Listing first also arms the client's output-schema validation of calls.
  r.tools = await step(async () => (await client.listTools()).tools.map((t) => t.name));
  r.valid = await step(() => client.callTool({ name: env.tool, arguments: env.validArgs }));
  r.invalid = await step(() => client.callTool({ name: env.tool, arguments: env.invalidArgs }));
  await client.close();
}
r.noToken = await step(async () => {
  const c = await connect("");
  return c.callTool({ name: env.tool, arguments: env.validArgs });
});
r.noScope = await step(async () => {
  const c = await connect(env.tokenNoScope);
  try {
    await c.listTools();
    return await c.callTool({ name: env.tool, arguments: env.validArgs });
  } finally {
    await c.close();
  }
});
report(r);
process.exit(0);
