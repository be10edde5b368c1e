import type { ConsentDescription } from "@cloudflare/workers-oauth-provider";
import { AUTHORIZE_PATH, OAUTH_SCOPES, type OAuthScope } from "./authorization-server";

/**
 * The consent page, server-rendered, with no script and no external asset. Everything a client chose (its
 * name, redirect host, requested scopes) is escaped, and the Content-Security-Policy allows no script at
 * all, so a hostile client name stays text even if escaping were ever missed.
 */

const SCOPE_TEXT: Record<OAuthScope, string> = {
  read: "Search and read your memories, documents and conversations.",
  write: "Also store, change and prune them (includes read).",
};

export interface ConsentForm {
  handle: string;
  /** Scopes ticked: what the client asked for, or what the person ticked before an error. */
  checked: readonly string[];
  projects: string;
  error?: string;
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

export function consentPage(details: ConsentDescription, form: ConsentForm, nonce: string): string {
  const name = escapeHtml(details.clientName);
  const provenance = details.clientDomain
    ? `Published by <strong>${escapeHtml(details.clientDomain)}</strong> (its client ID is a document on that domain).`
    : "This app registered itself: its name is not verified.";
  const requested = details.scope.length
    ? details.scope.map((s) => `<code>${escapeHtml(s)}</code>`).join(" ")
    : "no particular scopes";
  const loopback = details.redirectIsLoopback
    ? `<p class="warn">Access goes to an app on this computer. Continue only if you just started connecting from it.</p>`
    : "";
  const scopes = OAUTH_SCOPES.map(
    (
      scope,
    ) => `<label class="scope"><input type="checkbox" name="scope" value="${scope}"${form.checked.includes(scope) ? " checked" : ""}>
        <span><strong>${scope}</strong> ${SCOPE_TEXT[scope]}</span></label>`,
  ).join("\n      ");
  const error = form.error ? `<p class="error" role="alert">${escapeHtml(form.error)}</p>` : "";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>Connect ${name} to Context Edge</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<main>
  <h1>Connect <span class="client" id="client-name">${name}</span> to Context Edge?</h1>
  <p class="muted">${provenance}</p>
  <dl>
    <dt>Access goes to</dt><dd id="redirect-host"><strong>${escapeHtml(details.redirectHost)}</strong></dd>
    <dt>It asks for</dt><dd id="requested-scopes">${requested}</dd>
  </dl>
  ${loopback}
  ${error}
  <form method="post" action="${AUTHORIZE_PATH}">
    <input type="hidden" name="handle" value="${escapeHtml(form.handle)}">
    <label for="api_key">Sign in with your API key</label>
    <input id="api_key" name="api_key" type="password" autocomplete="off" spellcheck="false" placeholder="ce_…" required>
    <p class="muted">A key of your tenant with the <code>write</code> or <code>admin</code> scope. The app acts as this key,
      never beyond it, and loses access when the key is revoked.</p>
    <fieldset>
      <legend>Allow</legend>
      ${scopes}
    </fieldset>
    <label for="projects">Limit to projects (optional, comma-separated)</label>
    <input id="projects" name="projects" type="text" autocomplete="off" value="${escapeHtml(form.projects)}" placeholder="every project the key reaches">
    <div class="actions">
      <button type="submit" name="decision" value="approve" class="primary">Approve</button>
      <button type="submit" name="decision" value="deny" formnovalidate>Deny</button>
    </div>
  </form>
</main>
</body>
</html>`;
}

/** A page for a request that cannot go back to the client (unknown client, unregistered redirect URI, expired form). */
export function errorPage(title: string, message: string, nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>
<style nonce="${nonce}">${STYLE}</style></head>
<body><main><h1>${escapeHtml(title)}</h1><p class="error" role="alert">${escapeHtml(message)}</p>
<p class="muted">Start connecting again from your app.</p></main></body>
</html>`;
}

const STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --bg: #f6f8fa; --card: #fff; --accent: #0b6bcb; --bad: #b42318; --warn: #8a5a00; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9da7b3; --line: #30363d; --bg: #0d1117; --card: #161b22; --accent: #4493f8; --bad: #f85149; --warn: #d29922; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
main { max-width: 34rem; margin: 3rem auto; padding: 2rem; background: var(--card); border: 1px solid var(--line); border-radius: 12px; }
h1 { font-size: 1.35rem; margin: 0 0 .5rem; overflow-wrap: anywhere; }
.client { color: var(--accent); }
.muted { color: var(--muted); font-size: .9rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: 1rem 0; }
dt { color: var(--muted); } dd { margin: 0; overflow-wrap: anywhere; }
code { background: var(--bg); border: 1px solid var(--line); border-radius: 4px; padding: 0 .3rem; font-size: .85rem; }
label { display: block; font-weight: 600; margin: 1rem 0 .35rem; }
input[type=password], input[type=text] { width: 100%; padding: .55rem .65rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); font: inherit; }
fieldset { border: 1px solid var(--line); border-radius: 8px; margin: 1rem 0 0; padding: .5rem .9rem .8rem; }
legend { font-weight: 600; padding: 0 .3rem; }
label.scope { display: flex; gap: .6rem; align-items: flex-start; font-weight: 400; margin: .5rem 0 0; }
label.scope input { margin-top: .3rem; }
.actions { display: flex; gap: .75rem; margin-top: 1.5rem; }
button { padding: .55rem 1.2rem; border-radius: 6px; border: 1px solid var(--line); background: var(--card); color: var(--fg); font: inherit; cursor: pointer; }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; font-weight: 600; }
.error { color: var(--bad); border: 1px solid var(--bad); border-radius: 6px; padding: .5rem .75rem; overflow-wrap: anywhere; }
.warn { color: var(--warn); border: 1px solid var(--warn); border-radius: 6px; padding: .5rem .75rem; }
`;
