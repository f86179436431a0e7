// What every client script shares: the case, read from the environment the
// Go test (compat_test.go) sets, and the report, one JSON object on stdout.
// The scripts only observe; every expectation is in the Go test.

function need(name) {
  const v = process.env[name];
  if (v === undefined || v === "") {
    throw new Error(`${name} is not set: run these scripts through compat_test.go`);
  }
  return v;
}

export const env = {
  url: need("COMPAT_URL"),
  token: need("COMPAT_TOKEN"),
  tokenNoScope: need("COMPAT_TOKEN_NO_SCOPE"),
  tool: need("COMPAT_TOOL"),
  validArgs: JSON.parse(need("COMPAT_VALID_ARGS")),
  invalidArgs: JSON.parse(need("COMPAT_INVALID_ARGS")),
  // legacy (2025-11-25 and before) or modern (2026-07-28), for the clients
  // that speak both.
  era: process.env.COMPAT_ERA || "legacy",
};

// step runs one case and records what the client made of it: its result, or
// the error it threw (with the HTTP status when the client exposes one).
export async function step(fn) {
  try {
    return { result: await fn() };
  } catch (e) {
    // An HTTP status, where the client keeps one (SDK 1.x puts it in code,
    // where a JSON-RPC error keeps its negative code).
    const http = (v) => (Number.isInteger(v) && v >= 100 && v <= 599 ? v : undefined);
    const status = http(e?.status) ?? http(e?.code);
    return { error: { name: String(e?.name ?? typeof e), message: String(e?.message ?? e), status } };
  }
}

export function report(r) {
  process.stdout.write(JSON.stringify(r) + "\n");
}

// runCases runs every case with an SDK client — connect(token) returns one
// connected with that bearer token (none for "") — and prints the report.
export async function runCases(connect) {
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
}

// bearer is the headers that present token, if any.
export function bearer(token) {
  return token ? { Authorization: `Bearer ${token}` } : {};
}
