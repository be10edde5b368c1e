// The admin API (/admin) of a deployment, for the operator CLI (bin/context-edge.mjs) and the scripts: requests
// with the admin token, and failures as CliError with the exit code a script can branch on.

/** Exit codes: 0 done; 1 the server refused or failed; 2 bad usage, argument or file; 3 unreachable; 4 token refused. */
export const EXIT = { ok: 0, failed: 1, usage: 2, unreachable: 3, unauthorized: 4 };

export class CliError extends Error {
  constructor(message, code = EXIT.failed) {
    super(message);
    this.code = code;
  }
}

/** A client for `url`'s admin API with `token`; checks the URL up front. */
export function adminClient(url, token) {
  let base;
  try {
    base = new URL(url);
  } catch {
    throw new CliError(
      `--url '${url}' is not a URL (e.g. http://localhost:8787 or https://<worker>.workers.dev)`,
      EXIT.usage,
    );
  }
  if (base.protocol !== "http:" && base.protocol !== "https:")
    throw new CliError(`--url must be http or https (got ${base.protocol})`, EXIT.usage);
  if (!token)
    throw new CliError(
      "no admin token: pass --token or set CONTEXT_EDGE_ADMIN_TOKEN (locally: dev-admin-token)",
      EXIT.usage,
    );
  const origin = base.origin + base.pathname.replace(/\/+$/, "");

  /** The raw response of an admin request; `body` is JSON or a stream/string sent as is. */
  async function send(method, path, body, headers = {}) {
    const init = { method, headers: { authorization: `Bearer ${token}`, ...headers } };
    if (body !== undefined) {
      const raw = typeof body === "string" || body instanceof ReadableStream;
      init.body = raw ? body : JSON.stringify(body);
      if (!raw) init.headers["content-type"] = "application/json";
      if (body instanceof ReadableStream) init.duplex = "half";
    }
    let response;
    try {
      response = await fetch(`${origin}/admin${path}`, init);
    } catch (error) {
      throw new CliError(
        `cannot reach ${origin}: ${error.cause?.code ?? error.cause?.message ?? error.message}`,
        EXIT.unreachable,
      );
    }
    if (response.status === 401)
      throw new CliError(`the admin token was refused by ${origin} (HTTP 401)`, EXIT.unauthorized);
    if (!response.ok) {
      const text = await response.text();
      let message = text.slice(0, 300);
      try {
        const parsed = JSON.parse(text);
        message = parsed.error?.message ?? message;
      } catch {}
      throw new CliError(`${method} /admin${path}: HTTP ${response.status}: ${message}`, EXIT.failed);
    }
    return response;
  }
  return {
    origin,
    send,
    json: async (method, path, body) => (await send(method, path, body)).json(),
  };
}
