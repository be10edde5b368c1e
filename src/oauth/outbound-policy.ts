/**
 * What the OAuth library may fetch. @cloudflare/workers-oauth-provider fetches a client ID metadata
 * document (CIMD: a client_id that is an https URL), and a CIMD client's jwks_uri, with the global fetch;
 * it bounds each fetch (10 s, 5 KiB for a document) but follows redirects and fetches any host. The CIMD
 * draft wants no redirects (only a 200 is a document), and a client named by a URL must not make this
 * Worker fetch an internal address. The library takes no fetch of its own, so its requests (known by their
 * User-Agent) go through a wrapper on the global fetch that refuses what is not https on a public DNS name
 * and does not follow redirects. In production `global_fetch_strictly_public` also keeps every fetch on
 * the public Internet; this check holds under `wrangler dev` too, and refuses before anything is sent.
 */

import { specialUseName } from "../shared/public-address";

/** The User-Agent of the library's own outbound requests (`workers-oauth-provider/<version> (+...)`). */
const LIBRARY_USER_AGENT = "workers-oauth-provider/";
type Fetch = typeof fetch;

/** The wrappers this module made (a mock or wrapper may copy a function's own properties, so no marker on it). */
const guards = new WeakSet<Fetch>();

/** Why the library may not fetch this URL, or null when it may. */
export function outboundRefusal(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "not a URL";
  }
  if (parsed.protocol !== "https:") return "only https is fetched";
  if (parsed.username || parsed.password) return "a URL with credentials is not fetched";
  const host = parsed.hostname.replace(/\.$/, "").toLowerCase();
  // WHATWG URL parsing has already turned 2130706433, 0x7f.1 and the like into dotted IPv4.
  if (/^\d+\.\d+\.\d+\.\d+$/.test(host) || host.startsWith("["))
    return "an IP address is not fetched: a client is named by its domain";
  return specialUseName(host);
}

/**
 * The global fetch with the policy applied to the library's requests: the URL checked first, then fetched
 * with `redirect: "manual"`; a 3xx is an error (the library turns it into CimdFetchError, shown as "could
 * not be verified" on the consent page and `invalid_client` at the token endpoint). Other requests pass
 * through untouched.
 */
export function guardOAuthFetch(inner: Fetch): Fetch {
  const guarded: Fetch = async (input, init) => {
    if (!fromLibrary(input, init)) return inner(input, init);
    const url = input instanceof Request ? input.url : String(input);
    const refusal = outboundRefusal(url);
    if (refusal) throw new Error(`Refused to fetch ${url}: ${refusal}`);
    const response =
      input instanceof Request
        ? await inner(new Request(input, { ...init, redirect: "manual" }))
        : await inner(input, { ...init, redirect: "manual" });
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel().catch(() => undefined);
      throw new Error(
        `Refused to follow the redirect of ${url} (HTTP ${response.status}): a client metadata document is served without redirects`,
      );
    }
    return response;
  };
  guards.add(guarded);
  return guarded;
}

/**
 * Puts the guard on the global fetch if it is not there: called before each use of the library, so it is
 * back on after anything replaced the global (a test's mock, another wrapper).
 */
export function ensureOAuthFetchPolicy(): void {
  if (!guards.has(globalThis.fetch)) globalThis.fetch = guardOAuthFetch(globalThis.fetch);
}

function fromLibrary(input: RequestInfo | URL, init: RequestInit | undefined): boolean {
  const headers = input instanceof Request && !init?.headers ? input.headers : new Headers(init?.headers);
  return headers.get("user-agent")?.startsWith(LIBRARY_USER_AGENT) ?? false;
}
