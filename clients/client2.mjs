// The TypeScript client 2.x (@modelcontextprotocol/client), in the protocol
// era COMPAT_ERA names: legacy (the initialize handshake, 2025-11-25) or
// modern (pinned to 2026-07-28: no initialize, server/discover).
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { env, report, step } from "./lib.mjs";

const versionNegotiation = { legacy: { mode: "legacy" }, modern: { mode: { pin: "2026-07-28" } } }[env.era];
if (!versionNegotiation) {
  throw new Error(`COMPAT_ERA=${env.era}: want legacy or modern`);
}

async function connect(token) {
  const client = new Client({ name: "cobranca-compat-client2", version: "1.0.0" }, { versionNegotiation });
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(env.url), { requestInit: { headers } }));
  return client;
}

const r = {};
let client;
r.connect = await step(async () => {
  client = await connect(env.token);
  return {};
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
