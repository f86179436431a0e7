// The MCP Inspector CLI (@modelcontextprotocol/inspector --cli), run as a
// user runs it, one process per case, in the protocol era COMPAT_ERA names
// (its --protocol-era flag: legacy initializes with 2025-11-25, modern speaks
// 2026-07-28). Its JSON output ({"result":…} or {"error":{code,message}}) is
// mapped to the report every client script prints.
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { critical, env, journeyArgs, report, step, viewReport } from "./lib.mjs";

if (!["legacy", "modern"].includes(env.era)) {
  throw new Error(`COMPAT_ERA=${env.era}: want legacy or modern`);
}
const require = createRequire(import.meta.url);
const cli = join(dirname(require.resolve("@modelcontextprotocol/inspector/package.json")), "clients/launcher/build/index.js");

// inspect runs the CLI once and returns {result} or {error}, as step does.
function inspect(token, ...args) {
  const argv = [cli, "--cli", "--server-url", env.url, "--protocol-era", env.era, "--format", "json", "--quiet",
    // Never start an interactive OAuth flow: a missing token must fail.
    "--stored-auth-only",
    // Its 15 s default is short for a loaded CI machine running five at once.
    "--connect-timeout", "60000"];
  if (token) {
    argv.push("--header", `Authorization: Bearer ${token}`);
  }
  argv.push(...args);
  return new Promise((resolve) => {
    execFile(process.execPath, argv, { timeout: 150_000 }, (err, stdout, stderr) => {
      const line = [stdout, stderr].map((s) => s.trim().split("\n").pop()).find((s) => s.startsWith("{"));
      let out;
      try {
        out = JSON.parse(line);
      } catch {
        out = { error: { code: "unreadable", message: `exit ${err?.code}: ${stdout}${stderr}` } };
      }
      if (out.error) {
        resolve({ error: { name: String(out.error.code), message: String(out.error.message) } });
      } else {
        // A tool with an MCP App: the CLI adds its own probe of the app
        // (the tool's _meta.ui and the resource it read) beside the result.
        resolve(out.appInfo ? { result: out.result, appInfo: out.appInfo } : { result: out.result });
      }
    });
  });
}

const call = (token, args, tool = env.tool) =>
  inspect(token, "--method", "tools/call", "--tool-name", tool, "--tool-args-json", JSON.stringify(args));

// The medium-tier calls run in order: a repeat must find the first one done.
async function mediumCases() {
  const medium = (args) => call(env.token, args, env.mediumTool);
  const r = {};
  r.medium = await medium(env.mediumArgs);
  r.mediumRepeat = await medium(env.mediumArgs);
  r.mediumConflict = await medium(env.mediumConflictArgs);
  r.mediumDryRun = await medium(env.mediumDryRunArgs);
  return r;
}

// The journey's steps run in order, each a run of the CLI; the steps that
// ask a person to confirm are left out (the CLI has no one to ask). A step a
// person approves out of band is run: the CLI shows no URL elicitation, so
// on 2025-11-25 the person opens the URL approval_required carries and the
// CLI runs again; on 2026-07-28 the server refuses the CLI (no URL mode).
const journeyApprovals = {};
async function journey() {
  const out = [];
  for (const [i, s] of env.journey.entries()) {
    const args = journeyArgs(s, out);
    if (s.high || !args) {
      out.push(null);
    } else if (s.critical) {
      const { final, asked } = await critical(() => unwrap(call(env.token, args, s.tool)));
      out.push(final);
      if (asked) {
        journeyApprovals[i] = asked;
      }
    } else {
      out.push(await call(env.token, args, s.tool));
    }
  }
  return out;
}

// unwrap turns a run's {result} or {error} back into a value or a throw, for
// step (critical) to record again.
async function unwrap(run) {
  const r = await run;
  if (r.error) {
    throw Object.assign(new Error(r.error.message), { name: r.error.name });
  }
  return r.result;
}

// The result view as a host that renders MCP Apps reads it: the listing's
// resources, then the view the tool names.
async function view(list) {
  const tool = list.result?.tools?.find((t) => t.name === env.tool);
  const listed = await unwrap(inspect(env.token, "--method", "resources/list"));
  const read = await unwrap(inspect(env.token, "--method", "resources/read", "--uri", String(tool?._meta?.ui?.resourceUri)));
  return viewReport(tool, undefined, listed, read);
}

const listing = inspect(env.token, "--method", "tools/list");
const [list, viewed, valid, invalid, noToken, noScope, medium, steps] = await Promise.all([
  listing,
  listing.then((list) => step(() => view(list))),
  call(env.token, env.validArgs),
  call(env.token, env.invalidArgs),
  call("", env.validArgs),
  call(env.tokenNoScope, env.validArgs),
  mediumCases(),
  journey(),
]);
report({
  // Each run connects; the listing's stands for them all.
  connect: list.error ? list : { result: {} },
  tools: list.error ? list : { result: list.result.tools.map((t) => t.name) },
  toolDefs: list.error ? list : { result: list.result.tools.filter((t) => [env.mediumTool, env.highTool].includes(t.name)) },
  view: viewed,
  // The CLI's own MCP Apps probe, which came with the valid call.
  appInfo: valid.appInfo ? { result: valid.appInfo } : { error: { name: "none", message: "the valid call came without appInfo" } },
  valid,
  invalid,
  noToken,
  noScope,
  ...medium,
  journey: steps,
  journeyApprovals,
});
