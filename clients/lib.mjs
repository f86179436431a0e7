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
