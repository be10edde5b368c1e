import { invalidParameter } from "../../errors";
import { addressRefusal, ipv4Number, specialUseName } from "../../shared/public-address";

/**
 * A document's URL fetched safely (docs/documents.md "URL policy"): http and https only, no credentials in the URL,
 * no IP address outside the public ranges, no numeric host tricks, no name that resolves to a private address unless
 * DOCUMENT_FETCH_ALLOW_HOSTS lists it; at most MAX_REDIRECTS redirects, each target checked again; one timeout for
 * the whole; the size counted while the body streams in, and the content type checked against what converts.
 * In production `global_fetch_strictly_public` also keeps the Worker's fetches on the public Internet.
 */

export const MAX_REDIRECTS = 5;

export interface UrlFetchOptions {
  maxBytes: number;
  timeoutMs: number;
  allowHosts: readonly string[];
  /** The fetch to use (the global one; tests pass a fake). */
  fetch: typeof fetch;
}

export interface FetchedDocument {
  bytes: Uint8Array;
  /** The response's Content-Type, without parameters; null when absent. */
  contentType: string | null;
  /** The URL the body came from, after redirects. */
  finalUrl: string;
  /** A file name from Content-Disposition or the path's last segment, if any. */
  fileName: string | null;
}

const refused = (url: string, reason: string) =>
  invalidParameter("url", `The URL ${url} is refused: ${reason}`, { url, reason });

/** The host as written in the URL text, before the URL parser normalizes numeric forms. */
function rawHost(url: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/?#]*@)?(\[[^\]]*\]|[^/:?#]*)/i.exec(url.trim())?.[1]?.toLowerCase() ?? "";
}

/**
 * Why a URL may not be fetched before any lookup, or null. Numeric tricks are caught on the host as written: a
 * single number (2130706433, 0x7f000001), hex or octal parts (0x7f.1, 0177.0.0.1) or fewer than four parts (127.1).
 */
export function urlRefusal(url: string, allowHosts: readonly string[]): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "it is not a valid URL";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    return `only http and https are fetched, not ${parsed.protocol.replace(/:$/, "")}`;
  if (parsed.username || parsed.password) return "a URL with credentials is not fetched";
  const host = parsed.hostname.replace(/\.$/, "").toLowerCase();
  if (allowHosts.includes(host)) return null;
  const written = rawHost(url).replace(/\.$/, "");
  const numericParts = written.split(".");
  const looksNumeric = numericParts.every((p) => /^(0x[0-9a-f]*|\d+)$/i.test(p));
  if (looksNumeric && (numericParts.length !== 4 || numericParts.some((p) => /^0x|^0\d/i.test(p))))
    return `the host ${written} is an IP address written in decimal, hex or octal form (${host})`;
  if (host.startsWith("[")) {
    const reason = addressRefusal(host.slice(1, -1));
    return reason ? `${host} is ${reason}` : null;
  }
  if (ipv4Number(host) !== null) {
    const reason = addressRefusal(host);
    return reason ? `${host} is ${reason}` : null;
  }
  return specialUseName(host);
}

/** A name's A and AAAA addresses by DNS over HTTPS; an empty list when it has none. */
async function resolveHost(host: string, fetcher: typeof fetch, signal: AbortSignal): Promise<string[]> {
  const answers = await Promise.all(
    ["A", "AAAA"].map(async (type) => {
      const response = await fetcher(
        `https://cloudflare-dns.com/dns-query?name=${encodeURIComponent(host)}&type=${type}`,
        {
          headers: { accept: "application/dns-json" },
          signal,
        },
      );
      if (!response.ok) throw new Error(`DNS lookup of ${host} failed with HTTP ${response.status}`);
      const body = (await response.json()) as { Answer?: { type: number; data: string }[] };
      return (body.Answer ?? []).filter((a) => a.type === 1 || a.type === 28).map((a) => a.data);
    }),
  );
  return answers.flat();
}

/** Refuses a name that resolves to an address outside the public ranges (unless listed). */
async function checkResolved(url: URL, options: UrlFetchOptions, signal: AbortSignal): Promise<void> {
  const host = url.hostname.replace(/\.$/, "").toLowerCase();
  if (options.allowHosts.includes(host) || host.startsWith("[") || ipv4Number(host) !== null) return;
  let addresses: string[];
  try {
    addresses = await resolveHost(host, options.fetch, signal);
  } catch (error) {
    throw refused(url.href, `its name could not be resolved (${error instanceof Error ? error.message : error})`);
  }
  if (addresses.length === 0) throw refused(url.href, `the name ${host} has no address`);
  for (const address of addresses) {
    const reason = addressRefusal(address);
    if (reason)
      throw refused(
        url.href,
        `the name ${host} resolves to ${address}, ${reason} (DOCUMENT_FETCH_ALLOW_HOSTS can allow a host for local development)`,
      );
  }
}

export async function fetchDocumentUrl(url: string, options: UrlFetchOptions): Promise<FetchedDocument> {
  const signal = AbortSignal.timeout(options.timeoutMs);
  let current = url;
  try {
    for (let redirects = 0; ; redirects++) {
      const refusal = urlRefusal(current, options.allowHosts);
      if (refusal) throw refused(current, refusal);
      const parsed = new URL(current);
      await checkResolved(parsed, options, signal);
      const response = await options.fetch(parsed.href, {
        redirect: "manual",
        signal,
        headers: { accept: "text/html, application/pdf, text/markdown, text/plain, text/csv, */*;q=0.5" },
      });
      if (response.status >= 300 && response.status < 400) {
        await response.body?.cancel().catch(() => undefined);
        const location = response.headers.get("location");
        if (!location) throw invalidParameter("url", `${current} answered HTTP ${response.status} without a Location`);
        if (redirects >= MAX_REDIRECTS)
          throw invalidParameter("url", `${url} redirects more than ${MAX_REDIRECTS} times`, { url, redirects });
        current = new URL(location, parsed).href;
        continue;
      }
      if (!response.ok) {
        await response.body?.cancel().catch(() => undefined);
        throw invalidParameter("url", `Fetching ${current} failed with HTTP ${response.status}`, {
          url: current,
          status: response.status,
        });
      }
      const declared = Number(response.headers.get("content-length") ?? "");
      if (Number.isFinite(declared) && declared > options.maxBytes) {
        await response.body?.cancel().catch(() => undefined);
        throw tooLarge(current, declared, options.maxBytes);
      }
      const bytes = await readLimited(response, current, options.maxBytes);
      return {
        bytes,
        contentType: response.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase() || null,
        finalUrl: current,
        fileName: fileNameOf(response.headers.get("content-disposition"), parsed),
      };
    }
  } catch (error) {
    if (signal.aborted)
      throw invalidParameter("url", `Fetching ${url} took longer than ${options.timeoutMs} ms`, {
        url,
        timeout_ms: options.timeoutMs,
      });
    throw error;
  }
}

function tooLarge(url: string, bytes: number, limit: number) {
  return invalidParameter("url", `The document at ${url} is over ${limit} bytes (DOCUMENT_MAX_BYTES)`, {
    url,
    limit,
    bytes,
  });
}

/** The body, counted as it streams: past `limit` the download stops and the call is refused. */
async function readLimited(response: Response, url: string, limit: number): Promise<Uint8Array> {
  if (!response.body) return new Uint8Array();
  const reader = response.body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(url, total, limit);
    }
    parts.push(value);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.byteLength;
  }
  return bytes;
}

function fileNameOf(disposition: string | null, url: URL): string | null {
  const named = disposition && /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition)?.[1];
  if (named) return decodeURIComponent(named).trim() || null;
  const last = url.pathname.split("/").filter(Boolean).pop();
  return last ? decodeURIComponent(last) : null;
}
