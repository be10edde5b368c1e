/**
 * The dashboard's one HTML page: a shell that loads the bundled client (assets/dashboard, built by
 * scripts/build-dashboard.mjs) from this Worker. No inline script or style, nothing from another origin.
 */

/**
 * Scripts and styles from this origin only, no inline code, no plugins or frames, fetches to this origin
 * only (/jsonrpc and /admin). Trusted Types with no policy: any assignment of a string to innerHTML and
 * similar sinks throws, so no stored text can ever become markup.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join("; ");

export const DASHBOARD_HEADERS: Record<string, string> = {
  "content-security-policy": DASHBOARD_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=()",
};

export function dashboardPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Context Edge dashboard</title>
<link rel="stylesheet" href="/dashboard/assets/app.css">
<script type="module" src="/dashboard/assets/app.js"></script>
</head>
<body>
<div id="app"><noscript>The dashboard needs JavaScript.</noscript></div>
</body>
</html>`;
}
