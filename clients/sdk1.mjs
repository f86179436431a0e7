// The TypeScript SDK 1.x client (@modelcontextprotocol/sdk), the one most
// hosts embed. It speaks the 2025 protocol revisions only.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { bearer, env, runCases } from "./lib.mjs";

await runCases(async (token, elicit, modes = { form: {} }) => {
  const capabilities = elicit ? { elicitation: modes } : {};
  const client = new Client({ name: "cobranca-compat-sdk1", version: "1.0.0" }, { capabilities });
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => elicit(request.params));
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(env.url), { requestInit: { headers: bearer(token) } }));
  return client;
});
process.exit(0);
