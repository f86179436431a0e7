// The developer's browser on cobranca's development sign-in page, for the
// OAuth scripts (oauth.mjs, inspector-oauth.mjs): open the authorization URL,
// submit the page's form as a person would (it is plain HTML: no JavaScript
// runs), and return where the page redirects — the client's redirect URI with
// the code, or with an error.

// formOf reads the page's form: every input, checkboxes and radio buttons when
// checked (what a browser submits).
export function formOf(html) {
  const action = html.match(/<form method="post" action="([^"]*)">/)?.[1];
  if (!action) throw new Error("no form on the sign-in page");
  const fields = new URLSearchParams();
  for (const [, attrs] of html.matchAll(/<input ([^>]*)>/g)) {
    const a = Object.fromEntries([...attrs.matchAll(/(\w+)(?:="([^"]*)")?/g)].map(([, k, v]) => [k, v ?? "true"]));
    if (!a.name) continue;
    if ((a.type === "checkbox" || a.type === "radio") && !a.checked) continue;
    fields.append(a.name, unescape(a.value ?? ""));
  }
  return { action, fields };
}

function unescape(s) {
  return s.replace(/&(amp|lt|gt|quot|#39|#43);/g, (m, e) => ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", "#43": "+" })[e]);
}

// signIn signs in at authorizationUrl as subject, a "person" or an "agent",
// and returns the redirect's URL.
export async function signIn(authorizationUrl, { subject, kind }) {
  const page = await fetch(authorizationUrl, { headers: { "Accept-Language": "en" } });
  const html = await page.text();
  if (page.status !== 200) throw new Error(`the sign-in page answered ${page.status}: ${html.slice(0, 500)}`);
  const { action, fields } = formOf(html);
  fields.set("subject", subject);
  fields.set("kind", kind);
  fields.set("action", "allow");
  const answer = await fetch(new URL(action, authorizationUrl), {
    method: "POST",
    redirect: "manual",
    // What a browser sends with a form posted from the page itself.
    headers: {
      "Content-Type": "application/x-www-form-urlencoded",
      Origin: new URL(authorizationUrl).origin,
      "Sec-Fetch-Site": "same-origin",
    },
    body: fields.toString(),
  });
  const location = answer.headers.get("location");
  if (answer.status !== 303 || !location) {
    throw new Error(`the sign-in form answered ${answer.status}: ${(await answer.text()).slice(0, 500)}`);
  }
  return new URL(location);
}

// need reads a variable the Go test sets.
export function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this script through oauth_test.go`);
  return v;
}
