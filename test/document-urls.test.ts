import { afterEach, describe, expect, it, vi } from "vitest";
import { fetchDocumentUrl, urlRefusal } from "../src/core/documents/fetch-url";
import { callTool, newTenant, tenantDb } from "./helpers";

// Documents by URL through memory_ingest_document, with the Worker's outbound fetch replaced by a fake Internet: DNS
// over HTTPS answers from a table, and each URL from a script. Nothing here leaves the machine.

type Route = (request: Request) => Response | Promise<Response>;
const DNS: Record<string, { A?: string[]; AAAA?: string[] }> = {
  "docs.example.com": { A: ["93.184.215.14"] },
  "cdn.example.net": { A: ["151.101.1.1"], AAAA: ["2a04:4e42::1"] },
  "intranet.example.com": { A: ["10.0.0.5"] },
  "metadata.example.org": { AAAA: ["fd00:ec2::254"] },
};

function fakeInternet(routes: Record<string, Route>) {
  const requested: string[] = [];
  const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const request = new Request(input as RequestInfo, init);
    const url = new URL(request.url);
    if (url.hostname === "cloudflare-dns.com") {
      const name = url.searchParams.get("name")!;
      const type = url.searchParams.get("type") as "A" | "AAAA";
      const Answer = (DNS[name]?.[type] ?? []).map((data) => ({ name, type: type === "A" ? 1 : 28, data }));
      return Response.json({ Status: 0, Answer });
    }
    requested.push(request.url);
    const route = routes[request.url];
    return route ? route(request) : new Response("not found", { status: 404 });
  });
  return { requested, spy };
}

const page = (title: string, body: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><nav>Home | Pricing | Blog</nav><main><article><h1>${title}</h1>${body}</article></main><footer>Copyright Example Inc.</footer></body></html>`;
const paragraphs = (topic: string) =>
  Array.from(
    { length: 4 },
    (_, i) => `<p>Paragraph ${i + 1} about ${topic} explains the details an operator needs, plainly and at length.</p>`,
  ).join("");
const html = (text: string) => new Response(text, { headers: { "content-type": "text/html; charset=utf-8" } });
const redirect = (to: string, status = 302) => new Response(null, { status, headers: { location: to } });

afterEach(() => vi.restoreAllMocks());

describe("documents by URL", () => {
  it("fetches a public page after a redirect, keeps its main content, and records the final URL", async () => {
    const t = await newTenant();
    const { requested } = fakeInternet({
      "https://docs.example.com/runbook": () => redirect("https://cdn.example.net/runbook.html", 301),
      "https://cdn.example.net/runbook.html": () =>
        html(page("Failover runbook", `${paragraphs("failover")}<h2>Rollback</h2>${paragraphs("rollback")}`)),
    });
    const answer = await callTool(t.apiKey, "memory_ingest_document", { url: "https://docs.example.com/runbook" });
    expect(answer.error).toBeUndefined();
    expect(answer.result).toMatchObject({ title: "Failover runbook", mime_type: "text/html", status: "ready" });
    expect(requested).toEqual(["https://docs.example.com/runbook", "https://cdn.example.net/runbook.html"]);
    const got = (
      await callTool(t.apiKey, "memory_get_document", {
        document_id: answer.result.document_id,
        include_markdown: true,
      })
    ).result;
    expect(got.url).toBe("https://cdn.example.net/runbook.html");
    expect(got.sections.map((s: { section: string }) => s.section)).toContain("Failover runbook > Rollback");
    expect(got.markdown).not.toMatch(/Pricing|Copyright/);
  });

  it("refuses a redirect to a private address or to a name that resolves to one, with the reason; nothing stored", async () => {
    const t = await newTenant();
    const { requested } = fakeInternet({
      "https://docs.example.com/a": () => redirect("http://127.0.0.1:8080/admin"),
      "https://docs.example.com/b": () => redirect("https://intranet.example.com/secrets"),
      "https://docs.example.com/c": () => redirect("http://metadata.example.org/latest"),
    });
    const reasons = [];
    for (const url of ["https://docs.example.com/a", "https://docs.example.com/b", "https://docs.example.com/c"]) {
      const error = (await callTool(t.apiKey, "memory_ingest_document", { url })).error!;
      expect(error.data.code).toBe("INVALID_PARAMETER");
      expect(error.data.details.parameter).toBe("url");
      reasons.push(error.message);
    }
    expect(reasons).toEqual([
      "The URL http://127.0.0.1:8080/admin is refused: 127.0.0.1 is a loopback address (127.0.0.0/8)",
      "The URL https://intranet.example.com/secrets is refused: the name intranet.example.com resolves to 10.0.0.5, a private address (10.0.0.0/8) (DOCUMENT_FETCH_ALLOW_HOSTS can allow a host for local development)",
      "The URL http://metadata.example.org/latest is refused: the name metadata.example.org resolves to fd00:ec2::254, a unique-local address (fc00::/7) (DOCUMENT_FETCH_ALLOW_HOSTS can allow a host for local development)",
    ]);
    // Only the public first hops were requested.
    expect(requested).toEqual([
      "https://docs.example.com/a",
      "https://docs.example.com/b",
      "https://docs.example.com/c",
    ]);
    const db = await tenantDb(t.tenantId);
    expect(
      (await db
        .prepare("SELECT COUNT(*) AS n FROM documents WHERE tenant_id = ?")
        .bind(t.tenantId)
        .first<{ n: number }>())!.n,
    ).toBe(0);
  });

  it("refuses schemes, credentials and every private, special or numerically disguised host before any request", async () => {
    const t = await newTenant();
    const { requested } = fakeInternet({});
    const cases: [string, string][] = [
      ["ftp://docs.example.com/file.pdf", "only http and https are fetched, not ftp"],
      ["file:///etc/passwd", "only http and https are fetched, not file"],
      ["https://user:secret@docs.example.com/", "a URL with credentials is not fetched"],
      ["http://2130706433/", "the host 2130706433 is an IP address written in decimal, hex or octal form (127.0.0.1)"],
      ["http://0x7f.1/", "the host 0x7f.1 is an IP address written in decimal, hex or octal form (127.0.0.1)"],
      ["http://0177.0.0.1/", "the host 0177.0.0.1 is an IP address written in decimal, hex or octal form (127.0.0.1)"],
      ["http://10.1.2.3/", "10.1.2.3 is a private address (10.0.0.0/8)"],
      ["http://192.168.1.1/", "192.168.1.1 is a private address (192.168.0.0/16)"],
      ["http://169.254.169.254/latest/meta-data", "169.254.169.254 is a link-local address (169.254.0.0/16)"],
      ["http://100.64.0.1/", "100.64.0.1 is a CGNAT address (100.64.0.0/10)"],
      ["http://224.0.0.251/", "224.0.0.251 is a multicast address (224.0.0.0/4)"],
      ["http://0.0.0.0/", "0.0.0.0 is an unspecified address (0.0.0.0/8)"],
      ["http://[::1]/", "[::1] is a loopback address (::1)"],
      ["http://[::]/", "[::] is an unspecified address (::)"],
      ["http://[::ffff:127.0.0.1]/", "[::ffff:7f00:1] is an IPv4-mapped IPv6 address (::ffff:0:0/96)"],
      ["http://[fe80::1]/", "[fe80::1] is a link-local address (fe80::/10)"],
      ["http://[fd12:3456::1]/", "[fd12:3456::1] is a unique-local address (fc00::/7)"],
      ["http://[ff02::1]/", "[ff02::1] is a multicast address (ff00::/8)"],
      ["http://localhost:8787/", "a single-label host is not fetched"],
      ["http://printer.local/", "a host under .local is not fetched"],
      ["not a url", "it is not a valid URL"],
    ];
    for (const [url, reason] of cases) {
      const error = (await callTool(t.apiKey, "memory_ingest_document", { url })).error!;
      expect(error?.message, url).toBe(`The URL ${url} is refused: ${reason}`);
    }
    expect(requested).toEqual([]);
  });

  it("stops after 5 redirects, reports a failing status, and refuses what is over the size limit while it streams", async () => {
    const t = await newTenant();
    const routes: Record<string, Route> = {};
    for (let i = 0; i < 7; i++)
      routes[`https://docs.example.com/r${i}`] = () => redirect(`https://docs.example.com/r${i + 1}`);
    routes["https://docs.example.com/gone"] = () => new Response("gone", { status: 410 });
    const limit = 25 * 1024 * 1024;
    routes["https://docs.example.com/declared"] = () =>
      new Response("x", { headers: { "content-type": "text/plain", "content-length": String(limit + 1) } });
    let streamed = 0;
    routes["https://docs.example.com/endless"] = () =>
      new Response(
        new ReadableStream({
          pull(controller) {
            streamed += 1024 * 1024;
            controller.enqueue(new Uint8Array(1024 * 1024).fill(97));
          },
        }),
        { headers: { "content-type": "text/plain" } },
      );
    const { requested } = fakeInternet(routes);
    const message = async (url: string) => (await callTool(t.apiKey, "memory_ingest_document", { url })).error!.message;
    expect(await message("https://docs.example.com/r0")).toBe(
      "https://docs.example.com/r0 redirects more than 5 times",
    );
    expect(requested).toHaveLength(6);
    expect(await message("https://docs.example.com/gone")).toBe(
      "Fetching https://docs.example.com/gone failed with HTTP 410",
    );
    expect(await message("https://docs.example.com/declared")).toBe(
      `The document at https://docs.example.com/declared is over ${limit} bytes (DOCUMENT_MAX_BYTES)`,
    );
    expect(await message("https://docs.example.com/endless")).toBe(
      `The document at https://docs.example.com/endless is over ${limit} bytes (DOCUMENT_MAX_BYTES)`,
    );
    expect(streamed).toBeLessThanOrEqual(limit + 3 * 1024 * 1024);
  });

  it("an unsupported content type is refused naming the supported ones", async () => {
    const t = await newTenant();
    fakeInternet({
      "https://docs.example.com/archive": () =>
        new Response(new Uint8Array([0x1f, 0x8b, 8, 0]), { headers: { "content-type": "application/gzip" } }),
    });
    const error = (await callTool(t.apiKey, "memory_ingest_document", { url: "https://docs.example.com/archive" }))
      .error!;
    expect(error.message).toMatch(/^Unsupported document type application\/gzip; supported: application\/pdf, /);
  });
});

describe("URL policy in detail", () => {
  it("DOCUMENT_FETCH_ALLOW_HOSTS lets a named host through, and nothing else", () => {
    expect(urlRefusal("http://localhost:8787/doc.md", ["localhost"])).toBeNull();
    expect(urlRefusal("http://127.0.0.1:8787/doc.md", ["localhost"])).toBe(
      "127.0.0.1 is a loopback address (127.0.0.0/8)",
    );
    expect(urlRefusal("https://example.com/", [])).toBeNull();
    expect(urlRefusal("https://8.8.8.8/", [])).toBeNull();
  });

  it("the whole fetch has one timeout", async () => {
    const hanging = ((_: unknown, init?: RequestInit) =>
      new Promise<Response>((_resolve, reject) => {
        init?.signal?.addEventListener("abort", () => reject(init.signal!.reason));
      })) as typeof fetch;
    const error = await fetchDocumentUrl("https://8.8.8.8/slow", {
      maxBytes: 1000,
      timeoutMs: 50,
      allowHosts: [],
      fetch: hanging,
    }).catch((e: unknown) => e);
    expect((error as Error).message).toBe("Fetching https://8.8.8.8/slow took longer than 50 ms");
  });
});
