// The TypeScript client 2.x (@modelcontextprotocol/client), in the protocol
// era COMPAT_ERA names: legacy (the initialize handshake, 2025-11-25) or
// modern (pinned to 2026-07-28: no initialize, server/discover).
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { bearer, env, runCases } from "./lib.mjs";

const versionNegotiation = { legacy: { mode: "legacy" }, modern: { mode: { pin: "2026-07-28" } } }[env.era];
if (!versionNegotiation) {
  throw new Error(`COMPAT_ERA=${env.era}: want legacy or modern`);
}

await runCases(async (token, elicit, modes = { form: {} }) => {
  const capabilities = elicit ? { elicitation: modes } : {};
  const client = new Client({ name: "cobranca-compat-client2", version: "1.0.0" }, { versionNegotiation, capabilities });
  if (elicit) {
    client.setRequestHandler("elicitation/create", async (request) => elicit(request.params));
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(env.url), { requestInit: { headers: bearer(token) } }));
  return client;
});
process.exit(0);
