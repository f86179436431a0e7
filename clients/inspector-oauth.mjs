// The MCP Inspector CLI (@modelcontextprotocol/inspector --cli) signing in to
// cobranca in development mode, unattended. The CLI does OAuth itself: it
// discovers the development authorization server, registers, listens on its
// loopback callback URL and prints "Please navigate to: <authorization URL>";
// this script is the developer's browser — it signs in on that page (signin.mjs)
// and follows the redirect to the CLI's callback, which redeems the code. The
// CLI stores the token it got (under HOME), so the second run calls a tool with
// --stored-auth-only: no sign-in again. It reports what each run answered.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { need, signIn } from "./signin.mjs";

const url = need("OAUTH_URL");
const callbackUrl = need("OAUTH_CALLBACK_URL");
const tool = need("OAUTH_TOOL");
const args = need("OAUTH_ARGS");
const subject = need("OAUTH_SUBJECT");
const kind = need("OAUTH_KIND");
const require = createRequire(import.meta.url);
const cli = join(dirname(require.resolve("@modelcontextprotocol/inspector/package.json")), "clients/launcher/build/index.js");

const report = { signIn: null };

// inspect runs the CLI once; when it asks for a sign-in, signs in and follows
// the redirect to its callback. It returns the CLI's JSON answer.
function inspect(...extra) {
  const argv = [cli, "--cli", "--server-url", url, "--format", "json", "--callback-url", callbackUrl,
    "--connect-timeout", "60000", ...extra];
  return new Promise((resolve) => {
    // Without a terminal the CLI runs its OAuth only with MCP_AUTO_OPEN_ENABLED=true;
    // it then prints the URL and opens a browser through xdg-open, which runs
    // $BROWSER when no desktop is named: true, which does nothing. This script
    // is the browser.
    // MCP_INSPECTOR_SECRET_STORE=file: the tokens outlive the run (under HOME), as
    // on a desktop with a keyring; without one the CLI keeps them in memory.
    const env = { ...process.env, MCP_AUTO_OPEN_ENABLED: "true", BROWSER: "true", MCP_INSPECTOR_SECRET_STORE: "file" };
    for (const v of ["DISPLAY", "WAYLAND_DISPLAY", "XDG_CURRENT_DESKTOP", "DESKTOP_SESSION"]) delete env[v];
    const child = spawn(process.execPath, argv, { env });
    let stdout = "";
    let stderr = "";
    let asked = false;
    const timer = setTimeout(() => child.kill(), 150_000);
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", async (d) => {
      stderr += d;
      const m = stderr.match(/Please navigate to: (\S+)/);
      if (!m || asked) return;
      asked = true;
      try {
        const authorizationUrl = new URL(m[1]);
        const back = await signIn(authorizationUrl, { subject, kind });
        report.signIn = {
          request: Object.fromEntries(authorizationUrl.searchParams),
          redirect: back.origin + back.pathname,
          code: back.searchParams.has("code"),
          iss: back.searchParams.get("iss"),
        };
        // The browser follows the redirect to the CLI's callback listener.
        const cb = await fetch(back);
        report.signIn.callback = cb.status;
      } catch (e) {
        report.signIn = { error: String(e?.message ?? e) };
        child.kill();
      }
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      const line = [stdout, stderr].map((s) => s.trim().split("\n").pop()).find((s) => s.startsWith("{"));
      try {
        resolve(JSON.parse(line));
      } catch {
        resolve({ error: { code: "unreadable", message: `exit ${code}: ${stdout}\n${stderr}`.slice(-3000) } });
      }
    });
  });
}

report.list = await inspect("--method", "tools/list");
report.call = await inspect("--stored-auth-only", "--method", "tools/call", "--tool-name", tool, "--tool-args-json", args);
process.stdout.write(JSON.stringify(report) + "\n");
process.exit(0);
