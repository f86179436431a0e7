// The TypeScript SDK 1.x client's OAuth (@modelcontextprotocol/sdk's
// OAuthClientProvider) signing in to cobranca in development mode, unattended:
// the SDK discovers the development authorization server, registers, and asks
// to be sent to the authorization URL; redirectToAuthorization plays the
// developer's browser — it fetches the sign-in page, submits its form (plain
// HTML: no JavaScript needed) and keeps the code from the redirect — and
// transport.finishAuth(code) redeems it. Then the client lists the tools and
// calls a low-tier one. Like the other scripts it only reports what happened;
// oauth_test.go holds the expectations.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { randomBytes } from "node:crypto";
import { need, signIn } from "./signin.mjs";

const url = new URL(need("OAUTH_URL"));
const tool = need("OAUTH_TOOL");
const args = JSON.parse(need("OAUTH_ARGS"));
const subject = need("OAUTH_SUBJECT");
const kind = need("OAUTH_KIND");
// Nothing listens there: the browser's redirect is read, not followed.
const redirectUrl = "http://127.0.0.1:9/oauth/callback";

const report = { steps: [] };
const note = (s) => report.steps.push(s);

let state;
let code;
const provider = {
  client: undefined,
  tokenSet: undefined,
  verifier: undefined,
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return {
      client_name: "cobranca oauth test (TypeScript SDK)",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  state() { state = randomBytes(16).toString("hex"); return state; },
  clientInformation() { return this.client; },
  saveClientInformation(info) { this.client = info; report.registered = info; },
  tokens() { return this.tokenSet; },
  saveTokens(tokens) {
    this.tokenSet = tokens;
    report.tokens = { token_type: tokens.token_type, scope: tokens.scope, expires_in: tokens.expires_in, refresh: "refresh_token" in tokens };
  },
  saveCodeVerifier(v) { this.verifier = v; },
  codeVerifier() { return this.verifier; },
  // The developer's browser: open the page, sign in, come back with the code.
  async redirectToAuthorization(authorizationUrl) {
    report.authorizationRequest = Object.fromEntries(authorizationUrl.searchParams);
    const back = await signIn(authorizationUrl, { subject, kind });
    report.redirect = { to: back.origin + back.pathname, stateEchoed: back.searchParams.get("state") === state, iss: back.searchParams.get("iss") };
    code = back.searchParams.get("code");
  },
};

async function connect() {
  const client = new Client({ name: "cobranca-oauth-sdk1", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  await client.connect(transport);
  return { client, transport };
}

try {
  // No tokens yet: the SDK runs the authorization and stops at the redirect.
  const client = new Client({ name: "cobranca-oauth-sdk1", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  try {
    await client.connect(transport);
    note("connected without signing in");
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
    note("unauthorized: sign-in started");
  }
  if (!code) throw new Error("no authorization code came back");
  await transport.finishAuth(code);
  note("finishAuth: tokens saved");

  const { client: signedIn } = await connect();
  note("connected with the token");
  const { tools } = await signedIn.listTools();
  report.tools = tools.map((t) => t.name);
  report.call = await signedIn.callTool({ name: tool, arguments: args });
  await signedIn.close();
} catch (e) {
  report.error = { name: String(e?.name), message: String(e?.message ?? e) };
}
process.stdout.write(JSON.stringify(report) + "\n");
process.exit(0);
