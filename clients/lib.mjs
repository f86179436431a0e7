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
  // The test tools with side effects: a medium-tier one (its arguments, and
  // other arguments under the same idempotency key) and a high-tier one
  // (the arguments of the call a person accepts, and of the one declined).
  mediumTool: need("COMPAT_MEDIUM_TOOL"),
  mediumArgs: JSON.parse(need("COMPAT_MEDIUM_ARGS")),
  mediumConflictArgs: JSON.parse(need("COMPAT_MEDIUM_CONFLICT_ARGS")),
  mediumDryRunArgs: JSON.parse(need("COMPAT_MEDIUM_DRY_RUN_ARGS")),
  highTool: need("COMPAT_HIGH_TOOL"),
  highAcceptArgs: JSON.parse(need("COMPAT_HIGH_ACCEPT_ARGS")),
  highDeclineArgs: JSON.parse(need("COMPAT_HIGH_DECLINE_ARGS")),
  highBareArgs: JSON.parse(need("COMPAT_HIGH_BARE_ARGS")),
  highUrlOnlyArgs: JSON.parse(need("COMPAT_HIGH_URL_ONLY_ARGS")),
  // The product's tools, called in order as an operator's agent would:
  // [{tool, args, from?, answer?, high?, critical?}] — from fills arguments
  // from earlier steps' results (journeyArgs); answer is the person's reply
  // to a confirmation the step asks for; high marks the steps a client
  // without an elicitation handler (the Inspector CLI) leaves out; critical
  // the steps a person approves out of band, at a URL (openApproval).
  journey: JSON.parse(need("COMPAT_JOURNEY")),
};

// openApproval is the person opening an approval's URL: the test server
// answers it by approving the call as a stepped-up person (approval.Decider),
// standing in for the page where a person signs in and approves.
export async function openApproval(url) {
  const res = await fetch(url);
  if (!res.ok) {
    throw new Error(`opening the approval ${url}: HTTP ${res.status} ${await res.text()}`);
  }
}

// approvalURL is the approval URL an approval_required tool error carries in
// its message, or undefined for any other result.
export function approvalURL(result) {
  const code = result?._meta?.["io.cobranca/error"]?.code;
  if (!result?.isError || code !== "approval_required") {
    return undefined;
  }
  const text = result.content?.map((c) => c.text ?? "").join(" ") ?? "";
  return text.match(/https?:\/\/\S+\/approvals\/a_[a-z2-7]{26}/)?.[0];
}

// critical runs a critical step as an agent would on a client that cannot be
// asked in-band (MCP 2025-11-25, or no URL elicitation): the call, and when
// it is answered approval_required, the person opens the URL it carries and
// the agent makes the same call again. It returns the final step and the
// first answer (asked), if it was approval_required.
export async function critical(call) {
  const first = await step(call);
  const url = approvalURL(first.result);
  if (!url) {
    return { final: first };
  }
  await openApproval(url);
  return { final: await step(call), asked: first };
}

// journeyArgs are the arguments of the journey's step s, done being the
// steps run before it: its args, and for each {argument: {step, field}} of
// its from, that field of that step's structuredContent (the planHash of a
// dry run, the id the real call answered). undefined when an earlier step
// has no such field (it failed, or was left out): the step is not run.
export function journeyArgs(s, done) {
  const args = { ...s.args };
  for (const [name, { step, field }] of Object.entries(s.from ?? {})) {
    const v = done[step]?.result?.structuredContent?.[field];
    if (v === undefined) {
      return undefined;
    }
    args[name] = v;
  }
  return args;
}

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
    // A JSON-RPC error code (negative), where the client keeps one.
    const code = Number.isInteger(e?.code) && e.code < 0 ? e.code : undefined;
    return { error: { name: String(e?.name ?? typeof e), message: String(e?.message ?? e), status, code, data: e?.data } };
  }
}

export function report(r) {
  process.stdout.write(JSON.stringify(r) + "\n");
}

// runCases runs every case with an SDK client — connect(token, elicit,
// modes) returns one connected with that bearer token (none for ""),
// declaring the elicitation capability (modes, by default {form: {}}) and
// answering elicitation/create with elicit(params) when elicit is given —
// and prints the report.
export async function runCases(connect) {
  const r = { elicited: [] };
  // The person's answer to the next confirmation: what the client's
  // elicitation handler returns, having noted what it was shown.
  let answer;
  // Where the elicitations shown are noted: the high-tier cases', then the
  // journey's.
  let shown = r.elicited;
  const elicit = async (params) => {
    shown.push(params);
    // A URL-mode elicitation is an approval: the person opens it first.
    if (params?.mode === "url") {
      await openApproval(params.url);
    }
    return answer;
  };
  let client;
  r.connect = await step(async () => {
    // Forms (confirmations) and URLs (approvals).
    client = await connect(env.token, elicit, { form: {}, url: {} });
    return {};
  });
  if (client) {
    // Listing first also arms the client's output-schema validation of calls.
    const listed = await step(async () => (await client.listTools()).tools);
    r.tools = listed.error ? listed : { result: listed.result.map((t) => t.name) };
    r.toolDefs = listed.error ? listed : { result: listed.result.filter((t) => [env.mediumTool, env.highTool].includes(t.name)) };
    // A host that renders MCP Apps: the tool's view, listed and read.
    r.view = await step(async () => {
      const tool = listed.result?.find((t) => t.name === env.tool);
      return viewReport(tool, client.getServerCapabilities?.(), await client.listResources(),
        await client.readResource({ uri: tool?._meta?.ui?.resourceUri }));
    });
    r.valid = await step(() => client.callTool({ name: env.tool, arguments: env.validArgs }));
    r.invalid = await step(() => client.callTool({ name: env.tool, arguments: env.invalidArgs }));
    // Medium tier: a call with an idempotency key, its repeat, other
    // arguments under the same key, and a dry run.
    const medium = (args) => step(() => client.callTool({ name: env.mediumTool, arguments: args }));
    r.medium = await medium(env.mediumArgs);
    r.mediumRepeat = await medium(env.mediumArgs);
    r.mediumConflict = await medium(env.mediumConflictArgs);
    r.mediumDryRun = await medium(env.mediumDryRunArgs);
    // High tier: a person accepts, then declines, the confirmation.
    const high = (args) => step(() => client.callTool({ name: env.highTool, arguments: args }));
    answer = { action: "accept", content: { confirm: true } };
    r.highAccept = await high(env.highAcceptArgs);
    answer = { action: "decline" };
    r.highDecline = await high(env.highDeclineArgs);
    // The product's tools, in order, on the same client.
    r.journey = [];
    r.journeyElicited = [];
    r.journeyApprovals = {};
    shown = r.journeyElicited;
    for (const [i, s] of env.journey.entries()) {
      answer = s.answer;
      const args = journeyArgs(s, r.journey);
      const call = () => client.callTool({ name: s.tool, arguments: args });
      if (!args) {
        r.journey.push(null);
      } else if (s.critical) {
        const { final, asked } = await critical(call);
        r.journey.push(final);
        if (asked) {
          r.journeyApprovals[i] = asked;
        }
      } else {
        r.journey.push(await step(call));
      }
    }
    shown = r.elicited;
    await client.close();
  }
  // A fresh client with token — declaring the elicitation modes given, its
  // handler accepting, or no elicitation capability — lists (which arms its
  // output-schema validation) and calls tool with args.
  const callAlone = (token, tool, args, modes) =>
    step(async () => {
      answer = { action: "accept", content: { confirm: true } };
      const c = await connect(token, modes && elicit, modes);
      try {
        await c.listTools();
        return await c.callTool({ name: tool, arguments: args });
      } finally {
        await c.close();
      }
    });
  // High tier from a client that declared no elicitation capability, and
  // from one that shows URL-mode elicitations only, not a form.
  r.highNoElicitation = await callAlone(env.token, env.highTool, env.highBareArgs);
  r.highUrlOnly = await callAlone(env.token, env.highTool, env.highUrlOnlyArgs, { url: {} });
  r.noToken = await step(async () => {
    const c = await connect("");
    return c.callTool({ name: env.tool, arguments: env.validArgs });
  });
  r.noScope = await callAlone(env.tokenNoScope, env.tool, env.validArgs);
  report(r);
}

// viewReport is what a client made of the MCP Apps result view (SEP-1865):
// the tool's _meta (the view's URI under ui, and the flat key older hosts
// read), the server's extensions capability, the resources listed, and the
// contents read.
export function viewReport(tool, capabilities, listed, read) {
  return { toolMeta: tool?._meta ?? null, extensions: capabilities?.extensions ?? null, resources: listed.resources, contents: read.contents };
}

// bearer is the headers that present token, if any.
export function bearer(token) {
  return token ? { Authorization: `Bearer ${token}` } : {};
}
