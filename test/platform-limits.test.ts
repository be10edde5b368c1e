import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { checkedKv } from "../src/adapters/checked-kv";
import { checkedQueue, messageBytes } from "../src/adapters/checked-queue";
import { fitInput, inputLimitOf, inputTokensBound } from "../src/adapters/embedding-models";
import { LocalEmbedder } from "../src/adapters/local-embedder";
import { LocalVectorIndex } from "../src/adapters/local-vector-index";
import { QueueProducer } from "../src/adapters/queue-producer";
import { QueueUsageLog } from "../src/adapters/usage-queue";
import { VectorizeVectorIndex } from "../src/adapters/vectorize-index";
import { WorkersAiEmbedder } from "../src/adapters/workers-ai-embedder";
import { noUnits } from "../src/billable-units";
import { MARKS_PER_STATEMENT, markLinkChanges } from "../src/core/context/cache-generation";
import { checkedD1 } from "../src/db/checked-d1";
import { withQueryBudget } from "../src/db/invocation-queries";
import { tenantScope } from "../src/db/scope";
import { scanSql } from "../src/db/sql-scan";
import { toAppError } from "../src/errors";
import worker from "../src/index";
import type { JobMessage, ToolCallRecord, UsageMessage } from "../src/messages";
import { PLATFORM_LIMITS, utf8Bytes } from "../src/platform-limits";
import { buildServices } from "../src/services";
import { FakeVectorize } from "./fakes/fake-vectorize";
import { admin, newTenant, tenantDb } from "./helpers";

// The platform's limits, met locally (docs/limits.md): each checked binding refuses one past a limit in the
// platform's words and lets the limit itself through to the real local binding; the adapters split their
// work so that the checked bindings never refuse it.

const L = PLATFORM_LIMITS;
const d1 = checkedD1(env.SHARD_0!);
const kv = checkedKv(env.CACHE);

/** A queue that records what it is sent, behind the checks (a real queue's consumer would run these bodies). */
function recordingQueue<Body>() {
  const sent: Body[][] = [];
  const queue = {
    send: async (body: Body) => void sent.push([body]),
    sendBatch: async (messages: Iterable<{ body: Body }>) => void sent.push([...messages].map((m) => m.body)),
  } as unknown as Queue<Body>;
  return { sent, queue: checkedQueue(queue) };
}

describe("D1: bound parameters, statement length, value size", () => {
  const select = (n: number) => `SELECT ${Array.from({ length: n }, (_, i) => `?${i + 1}`).join(" + ")} AS total`;

  it("binds 100 parameters and refuses 101", async () => {
    const ones = (n: number) => Array.from({ length: n }, () => 1);
    expect(
      await d1
        .prepare(select(100))
        .bind(...ones(100))
        .first("total"),
    ).toBe(100);
    await expect(
      d1
        .prepare(select(101))
        .bind(...ones(101))
        .first(),
    ).rejects.toThrow("D1_ERROR: too many SQL variables (101; D1 allows 100)");
  });

  it("runs a statement of 100,000 bytes and refuses one byte more, counting UTF-8", async () => {
    const padded = (bytes: number, filler = "x") => {
      const head = "SELECT 1 AS one -- ";
      return head + filler.repeat(Math.floor((bytes - head.length) / utf8Bytes(filler)));
    };
    expect(utf8Bytes(padded(L.d1.statementBytes))).toBe(L.d1.statementBytes);
    expect(await d1.prepare(padded(L.d1.statementBytes)).first("one")).toBe(1);
    await expect(d1.prepare(`${padded(L.d1.statementBytes)}x`).first()).rejects.toThrow("D1_ERROR: statement too long");
    // 33,334 characters, 100,002 bytes: a length in characters would let it through.
    const euros = `SELECT 1 -- ${"€".repeat(33_330)}`;
    expect(euros.length).toBeLessThan(L.d1.statementBytes);
    await expect(d1.prepare(euros).first()).rejects.toThrow("D1_ERROR: statement too long");
  });

  it("binds a 2,000,000-byte value and refuses a larger one, in bytes", async () => {
    expect(await d1.prepare("SELECT length(?1) AS n").bind("a".repeat(L.d1.valueBytes)).first("n")).toBe(
      L.d1.valueBytes,
    );
    await expect(
      d1
        .prepare("SELECT length(?1)")
        .bind("a".repeat(L.d1.valueBytes + 1))
        .first(),
    ).rejects.toThrow("D1_ERROR: string or blob too big");
    await expect(d1.prepare("SELECT length(?1)").bind("€".repeat(666_667)).first()).rejects.toThrow(
      "string or blob too big",
    ); // 2,000,001 bytes
    await expect(
      d1
        .prepare("SELECT length(?1)")
        .bind(new Uint8Array(L.d1.valueBytes + 1))
        .first(),
    ).rejects.toThrow("string or blob too big");
  });

  it("a link run that changed 60,000 items marks them all in values D1 accepts (one JSON list was 2.3 MB)", async () => {
    const { tenantId } = await newTenant();
    const ids = Array.from({ length: 60_000 }, (_, i) => `${crypto.randomUUID()}-${i}`);
    const db = await tenantDb(tenantId);
    // The items the marks join; written straight into the shard (60,000 tool calls would measure nothing more).
    for (let i = 0; i < ids.length; i += 5_000) {
      await db
        .prepare(
          `INSERT INTO items (id, tenant_id, project, kind, type, content, content_hash, tokens, created_at, touched_at) SELECT value, ?, 'p', 'memory', 'note', 'x', value, 1, 0, 0 FROM json_each(?)`,
        )
        .bind(tenantId, JSON.stringify(ids.slice(i, i + 5_000)))
        .run();
    }
    expect(JSON.stringify(ids).length).toBeGreaterThan(L.d1.valueBytes);
    const statements = markLinkChanges(tenantScope(checkedD1(db), tenantId), ids);
    expect(statements.length).toBe(1 + Math.ceil(ids.length / MARKS_PER_STATEMENT));
    await checkedD1(db).batch(statements);
    expect(
      await db.prepare("SELECT COUNT(*) AS n FROM cache_link_marks WHERE tenant_id = ?").bind(tenantId).first("n"),
    ).toBe(ids.length);
  });

  it("runs checked statements in a batch and in a session (D1 takes only its own statements)", async () => {
    const [a, b] = await d1.batch([d1.prepare("SELECT ?1 AS v").bind(1), d1.prepare("SELECT ?1 AS v").bind(2)]);
    expect([a!.results[0], b!.results[0]]).toEqual([{ v: 1 }, { v: 2 }]);
    const session = d1.withSession("first-primary");
    expect(await session.prepare("SELECT ?1 AS v").bind(3).first("v")).toBe(3);
    const [c] = await session.batch([session.prepare("SELECT 4 AS v")]);
    expect(c!.results).toEqual([{ v: 4 }]);
    await expect(
      session
        .prepare(select(101))
        .bind(...Array.from({ length: 101 }, () => 1))
        .first(),
    ).rejects.toThrow("too many SQL variables");
    expect(checkedD1(env.SHARD_0!)).toBe(d1); // one wrapper per binding: caches keyed by it keep working
  });
});

describe("D1: 32 arguments per function call, 50-byte LIKE and GLOB patterns, 30 s per query or batch", () => {
  const list = (n: number) => Array.from({ length: n }, (_, i) => i + 1).join(", ");

  it("runs a function call of 32 arguments and refuses 33, in D1's words (local SQLite takes 33)", async () => {
    expect(JSON.parse((await d1.prepare(`SELECT json_array(${list(32)}) AS a`).first<string>("a"))!)).toHaveLength(32);
    await expect(d1.prepare(`SELECT json_array(${list(33)}) AS a`).first()).rejects.toThrow(
      "D1_ERROR: too many arguments on function json_array: SQLITE_ERROR",
    );
    await expect(
      d1
        .prepare(`SELECT 1 WHERE ? = coalesce(${list(40)})`)
        .bind(1)
        .first(),
    ).rejects.toThrow("too many arguments on function coalesce");
    expect(await env.SHARD_0!.prepare(`SELECT json_array(${list(33)}) AS a`).first("a")).toBeTruthy(); // what the checked binding stands in for
  });

  it("counts function calls only: column lists, VALUES, IN lists, CTE columns, strings and comments are not calls", () => {
    const columns = Array.from({ length: 40 }, (_, i) => `c${i}`).join(", ");
    const sql = `WITH t(${columns}) AS (SELECT ${list(40)}) -- f(${list(40)})
      INSERT INTO wide (${columns}) SELECT * FROM t WHERE c0 IN (${list(40)}) AND 'g(${list(40)})' <> substr(c1, 1, 2)
      ON CONFLICT (${columns}) DO NOTHING`;
    expect(scanSql(sql).widestCall).toEqual({ name: "substr", args: 3 });
    expect(scanSql(`SELECT "max"(${list(40)}), count(*), random()`).widestCall).toEqual({ name: "count", args: 1 });
    expect(scanSql(`SELECT max(${list(33)}) FROM (SELECT 1)`).widestCall).toEqual({ name: "max", args: 33 });
  });

  it("local SQLite itself takes a 50-byte LIKE or GLOB pattern and refuses 51 bytes, in D1's words: nothing to stand in for", async () => {
    const local = env.SHARD_0!; // the raw local binding: workerd's SQLite has D1's pattern limit
    const like = (sql: string, ...values: unknown[]) =>
      local
        .prepare(sql)
        .bind(...values)
        .first("m");
    expect(await like("SELECT ?1 LIKE ?2 AS m", "a".repeat(50), "a".repeat(50))).toBe(1);
    await expect(like("SELECT 'x' LIKE ?1 AS m", "a".repeat(51))).rejects.toThrow(
      "D1_ERROR: LIKE or GLOB pattern too complex: SQLITE_ERROR",
    );
    await expect(like("SELECT 'x' NOT LIKE ? AS m", "€".repeat(17))).rejects.toThrow(
      "LIKE or GLOB pattern too complex",
    ); // 17 characters, 51 bytes
    await expect(like("SELECT 'x' GLOB ?1 AS m", "*".repeat(51))).rejects.toThrow("LIKE or GLOB pattern too complex");
    await expect(like("SELECT 'x' LIKE '%' || ?1 || '%' AS m", "b".repeat(49))).rejects.toThrow(
      "LIKE or GLOB pattern too complex",
    );
    await expect(d1.prepare(`SELECT 'x' LIKE '${"c".repeat(51)}'`).first()).rejects.toThrow(
      "LIKE or GLOB pattern too complex",
    ); // and through the checked binding
  });

  it("answers a query or batch that runs past the limit with D1's timeout error (retryable), and lets a quick one through", async () => {
    const slow = (ms: number) => new Promise((resolve) => setTimeout(() => resolve({ results: [{ v: 1 }] }), ms));
    const statement = (ms: number): D1PreparedStatement =>
      ({
        bind: () => statement(ms),
        first: () => slow(ms),
        all: () => slow(ms),
        run: () => slow(ms),
        raw: () => slow(ms),
      }) as unknown as D1PreparedStatement;
    const fake = {
      prepare: () => statement(200),
      batch: () => slow(200),
      exec: () => slow(200),
      withSession: () => ({}),
      dump: () => slow(0),
    } as unknown as D1Database;
    const timed = checkedD1(fake, { queryMs: 50 });
    const refused = timed.prepare("SELECT 1").first();
    await expect(refused).rejects.toThrow(
      "D1_ERROR: D1 DB storage operation exceeded timeout which caused object to be reset.",
    );
    await expect(timed.batch([timed.prepare("SELECT 1"), timed.prepare("SELECT 2")])).rejects.toThrow(
      "exceeded timeout",
    );
    expect(toAppError(await refused.catch((e) => e))).toMatchObject({
      code: "UNAVAILABLE",
      details: { reason: "database_unavailable" },
    });
    const quick = checkedD1({ ...fake, prepare: () => statement(5) } as unknown as D1Database, { queryMs: 50 });
    expect(await quick.prepare("SELECT 1").first()).toEqual({ results: [{ v: 1 }] });
    expect(PLATFORM_LIMITS.d1.queryMs).toBe(30_000);
  });
});

describe("D1: queries per invocation (1,000 on Paid, 50 on Free)", () => {
  it("counts every statement of the invocation, a batch's each, and refuses the one past the budget", async () => {
    await withQueryBudget(4, async () => {
      await d1.prepare("SELECT 1").first();
      await d1.batch([d1.prepare("SELECT 2"), d1.prepare("SELECT 3")]);
      await d1.withSession("first-primary").prepare("SELECT 4").first();
      await expect(d1.prepare("SELECT 5").first()).rejects.toThrow(
        "D1_ERROR: Too many API requests by single worker invocation: more than 4 D1 queries",
      );
    });
    expect(await d1.prepare("SELECT 6 AS v").first("v")).toBe(6); // outside a handler: no budget
  });

  it("applies D1_QUERIES_PER_INVOCATION to the Worker's requests: a request over it fails, the next one has its own", async () => {
    const t = await newTenant();
    const ask = async (budget: string) => {
      const ctx = createExecutionContext();
      const response = await worker.fetch(
        new Request("http://localhost/jsonrpc", {
          method: "POST",
          headers: { authorization: `Bearer ${t.apiKey}`, "content-type": "application/json" },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "tools/call",
            params: { name: "memory_store", arguments: { content: `budget ${budget} ${Math.random()}` } },
          }),
        }),
        { ...env, D1_QUERIES_PER_INVOCATION: budget },
        ctx,
      );
      await waitOnExecutionContext(ctx);
      return (await response.json()) as { result?: { isError?: boolean }; error?: { message: string } };
    };
    const starved = await ask("1");
    expect(starved.error ?? starved.result?.isError).toBeTruthy();
    const plenty = await ask("1000");
    expect(plenty.error).toBeUndefined();
    expect(plenty.result?.isError).toBeFalsy();
  });
});

describe("KV: key, value, metadata, TTL", () => {
  it("takes a 512-byte key and refuses 513 bytes (also as 171 three-byte characters), empty, '.' and '..'", async () => {
    const key = "k".repeat(L.kv.keyBytes);
    await kv.put(key, "v", { expirationTtl: 60 });
    expect(await kv.get(key)).toBe("v");
    await expect(kv.put(`${key}k`, "v")).rejects.toThrow(
      "KV PUT failed: 414 UTF-8 encoded length of 513 exceeds key length limit of 512.",
    );
    await expect(kv.get("€".repeat(171))).rejects.toThrow("KV GET failed: 414 UTF-8 encoded length of 513");
    for (const bad of ["", ".", ".."])
      await expect(kv.put(bad, "v")).rejects.toThrow("KV PUT failed: 400 Illegal key name");
    await kv.delete(key);
  });

  it("refuses an expirationTtl under 60 s and metadata over 1,024 bytes; takes both at the limit", async () => {
    await expect(kv.put("ttl", "v", { expirationTtl: 59 })).rejects.toThrow(
      "KV PUT failed: 400 Invalid expiration_ttl of 59. Expiration TTL must be at least 60.",
    );
    const metadata = { m: "x".repeat(L.kv.metadataBytes - 8) }; // {"m":"…"} is 8 bytes besides
    expect(utf8Bytes(JSON.stringify(metadata))).toBe(L.kv.metadataBytes);
    await kv.put("meta", "v", { expirationTtl: 60, metadata });
    expect((await kv.getWithMetadata("meta")).metadata).toEqual(metadata);
    await expect(kv.put("meta", "v", { metadata: { m: "x".repeat(L.kv.metadataBytes - 7) } })).rejects.toThrow(
      "KV PUT failed: 413 Metadata length of 1025 exceeds limit of 1024.",
    );
  });

  it("refuses a value over 25 MiB before sending it", async () => {
    await expect(kv.put("big", new Uint8Array(L.kv.valueBytes + 1))).rejects.toThrow(
      `KV PUT failed: 413 Value length of ${L.kv.valueBytes + 1} exceeds limit of ${L.kv.valueBytes}.`,
    );
  });
});

describe("Queues: message size, batch count and bytes", () => {
  const body = (bytes: number) => ({ pad: "x".repeat(bytes - 10) }); // {"pad":"…"} is 10 bytes besides

  it("sends a 128,000-byte message and refuses one byte more", async () => {
    const { sent, queue } = recordingQueue<unknown>();
    expect(messageBytes(body(L.queues.messageBytes))).toBe(L.queues.messageBytes);
    await queue.send(body(L.queues.messageBytes));
    await expect(queue.send(body(L.queues.messageBytes + 1))).rejects.toThrow(
      "Queue send failed: message is 128001 bytes; the limit is 128000",
    );
    expect(sent).toHaveLength(1);
  });

  it("sends a batch of 100 messages and of 256,000 bytes; refuses 101 messages or one byte more", async () => {
    const { queue } = recordingQueue<unknown>();
    await queue.sendBatch(Array.from({ length: 100 }, (_, i) => ({ body: i })));
    await expect(queue.sendBatch(Array.from({ length: 101 }, (_, i) => ({ body: i })))).rejects.toThrow(
      "Queue sendBatch failed: 101 messages; a batch holds at most 100",
    );
    await queue.sendBatch([{ body: body(128_000) }, { body: body(128_000) }]);
    await expect(queue.sendBatch([{ body: body(128_000) }, { body: body(128_000) }, { body: 1 }])).rejects.toThrow(
      "Queue sendBatch failed: the batch is 256001 bytes",
    );
  });

  it("the job producer splits 300 jobs of multi-byte text into batches the queue accepts", async () => {
    const { sent, queue } = recordingQueue<JobMessage>();
    const jobs = Array.from(
      { length: 300 },
      (_, i) =>
        ({
          type: "embed",
          tenantId: "t",
          itemIds: [`東京タワーの近く-${"猫".repeat(1500)}-${i}`],
        }) as unknown as JobMessage,
    );
    await new QueueProducer([queue]).send(jobs);
    expect(sent.flat()).toEqual(jobs);
    for (const batch of sent) {
      expect(batch.length).toBeLessThanOrEqual(100);
      expect(batch.reduce((sum, m) => sum + messageBytes(m), 0)).toBeLessThanOrEqual(L.queues.batchBytes);
    }
  });

  it("the usage log splits a large request's calls into messages and batches the queue accepts", async () => {
    const { sent, queue } = recordingQueue<UsageMessage>();
    const call = (i: number): ToolCallRecord => ({
      keyId: "key",
      tool: "log_chat",
      project: "項".repeat(200),
      conversationId: `${i}-${"会".repeat(190)}`,
      startedAt: i,
      durationMs: 3,
      errorCode: null,
      units: { ...noUnits(), d1RoundTrips: 1, d1Ms: 1 },
    });
    const calls = Array.from({ length: 600 }, (_, i) => call(i));
    await new QueueUsageLog([queue]).record("t", calls);
    expect(sent.flat().flatMap((m) => m.calls)).toEqual(calls);
    expect(sent.flat().length).toBeGreaterThan(2); // ~730 KB of calls: several messages, over several batches
  });
});

describe("Workers AI embeddings: texts per call", () => {
  it("the local embedder takes the configured model's texts per call (qwen3-embedding: 32) and refuses more, as the model does", async () => {
    const services = buildServices(env, env.SHARD_0!, { tenantIndex: null }, () => {});
    expect(services.config.embeddingModel).toBe("@cf/qwen/qwen3-embedding-0.6b");
    expect(services.embedder.maxBatch).toBe(32);
    expect(await services.embedder.embed(Array.from({ length: 32 }, (_, i) => `text ${i}`))).toHaveLength(32);
    await expect(services.embedder.embed(Array.from({ length: 33 }, (_, i) => `text ${i}`))).rejects.toThrow(
      "AiError: 5006: input has 33 items; at most 32",
    );
  });
});

describe("Workers AI embeddings: input tokens per text (bge 512, qwen3-embedding 8,192)", () => {
  const BGE = "@cf/baai/bge-base-en-v1.5";
  const QWEN = "@cf/qwen/qwen3-embedding-0.6b";

  it("bounds a text's tokens without the model's tokenizer: a WordPiece token per non-space character (NFD), a byte-level one per UTF-8 byte", () => {
    expect(inputTokensBound(BGE, "ab c")).toBe(3 + 4); // 3 characters, spaces dropped, and the special tokens
    expect(inputTokensBound(BGE, "한")).toBe(3 + 4); // NFD: three jamo
    expect(inputTokensBound(QWEN, "é€")).toBe(2 + 3 + 4); // UTF-8 bytes
    expect(inputTokensBound(QWEN, "where", "query")).toBeGreaterThan(inputTokensBound(QWEN, "where", "document")); // the instruction counts
    expect(inputTokensBound("@cf/someone/new-embedder", "€")).toBe(3 + 4); // a model we do not know: bytes, 512 of them
  });

  it("the Workers AI adapter never sends a text over the model's limit: one past it is cut to the limit, one at it goes whole", async () => {
    const sent: string[] = [];
    const strict = {
      run: async (model: string, input: { text?: string[]; documents?: string[] }) => {
        const texts = input.text ?? input.documents ?? [];
        for (const text of texts) {
          const tokens = inputTokensBound(model, text);
          if (tokens > inputLimitOf(model).maxInputTokens)
            throw new Error(`AiError: input too long (${tokens} tokens)`);
          sent.push(text);
        }
        return { data: texts.map(() => Array.from({ length: 768 }, (_, i) => (i === 0 ? 1 : 0))) };
      },
    } as unknown as Ai;
    const bge = new WorkersAiEmbedder(strict, BGE, 768);
    const atLimit = "a".repeat(512 - 4);
    await bge.embed([atLimit, `${atLimit}b`, "한".repeat(400)]);
    expect(sent[0]).toBe(atLimit);
    expect(sent[1]).toBe(atLimit); // one past: cut at the character that would pass the limit
    expect(inputTokensBound(BGE, sent[2]!)).toBeLessThanOrEqual(512);
    expect(sent[2]).toBe("한".repeat(169)); // 3 tokens a syllable at most
    // A 350-token chunk of English (~1,400 characters) is whole for qwen3-embedding, the default; bge gets its first ~500.
    const chunk = "The harbour crane lifts containers onto the ship at dawn. ".repeat(25);
    expect(fitInput(QWEN, chunk)).toBe(chunk);
    expect(fitInput(BGE, chunk).length).toBeLessThan(chunk.length);
  });

  it("the local embedder takes what the configured model takes (qwen3-embedding: 8,192 bytes a text) and refuses one past it; the Worker cuts as the adapter does", async () => {
    const local = new LocalEmbedder(256, 32, QWEN);
    const atLimit = "x".repeat(8192 - 4);
    expect(await local.embed([atLimit])).toHaveLength(1);
    await expect(local.embed([`${atLimit}x`])).rejects.toThrow(
      `AiError: input 0 may be 8193 tokens of ${QWEN}; at most 8192`,
    );
    await expect(new LocalEmbedder(256, 100, BGE).embed(["ok", "€".repeat(600)])).rejects.toThrow(
      "AiError: input 1 may be 604 tokens of @cf/baai/bge-base-en-v1.5; at most 512",
    );
    const services = buildServices(env, env.SHARD_0!, { tenantIndex: null }, () => {});
    expect(await services.embedder.embed([atLimit + "x".repeat(5000)], "query")).toHaveLength(1); // cut first, as in production
  });
});

describe("Vectorize: topK", () => {
  it("the local index answers at most 100 matches, as the Vectorize adapter does, however many are asked", async () => {
    const embedder = new LocalEmbedder(64);
    const records = await Promise.all(
      Array.from({ length: 130 }, async (_, i) => ({
        chunkId: 9_000_000 + i,
        itemId: `i${i}`,
        project: "p",
        kind: "memory",
        type: "note",
        values: (await embedder.embed([`text number ${i} about harbours`]))[0]!,
      })),
    );
    const tenant = `topk-${Date.now()}`;
    const local = new LocalVectorIndex(env.SHARD_0!, 64);
    const vectorize = new VectorizeVectorIndex(new FakeVectorize(64) as unknown as Vectorize, 64, env.SHARD_0!);
    const query = (await embedder.embed(["harbours"]))[0]!;
    for (const index of [local, vectorize]) {
      await index.upsert(tenant, records);
      expect((await index.query(tenant, query, { topK: 150 })).length).toBe(100);
      expect((await index.queryMany(tenant, [query], { topK: 150 }))[0]!.length).toBe(100);
      expect((await index.query(tenant, query, { topK: 7 })).length).toBe(7);
    }
  });
});

describe("Vectorize: ids and namespaces of at most 64 bytes, metadata of at most 10 KiB", () => {
  it("the longest tenant id the admin API takes fits a vector id with the largest chunk id; one more character is refused", async () => {
    const longest = "t".repeat(40);
    const embedder = new LocalEmbedder(64);
    const values = (await embedder.embed(["harbour cranes"]))[0]!;
    const fake = new FakeVectorize(64);
    const vectorize = new VectorizeVectorIndex(fake as unknown as Vectorize, 64, env.SHARD_0!);
    await vectorize.upsert(longest, [
      { chunkId: Number.MAX_SAFE_INTEGER, itemId: "i", project: "p".repeat(200), kind: "memory", type: "note", values },
    ]);
    expect(fake.vectors.size).toBe(1);
    // What a longer tenant id would have met in production:
    await expect(
      vectorize.upsert("t".repeat(48), [
        { chunkId: Number.MAX_SAFE_INTEGER, itemId: "i", project: "p", kind: "memory", type: "note", values },
      ]),
    ).rejects.toThrow("id longer than 64 bytes");
    const refused = await admin("POST", "/tenants", { name: "long id", tenant_id: "t".repeat(41) });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("3-40 letters");
    expect(
      (await admin("POST", "/tenants", { name: "longest id", tenant_id: `${Date.now()}`.padEnd(40, "x") })).status,
    ).toBe(201);
  });

  it("the fake refuses a namespace over 64 bytes and metadata over 10 KiB, as Vectorize does", async () => {
    const fake = new FakeVectorize(2);
    await expect(fake.upsert([{ id: "a", namespace: "n".repeat(65), values: [1, 0] }])).rejects.toThrow(
      "namespace longer than 64 bytes",
    );
    await expect(fake.upsert([{ id: "a", values: [1, 0], metadata: { text: "x".repeat(10 * 1024) } }])).rejects.toThrow(
      "metadata over 10 KiB",
    );
    expect(
      () =>
        new FakeVectorize(
          2,
          Array.from({ length: 11 }, (_, i) => `p${i}`),
        ),
    ).toThrow("at most 10 metadata indexes");
  });

  it("the fake holds at most 50,000 namespaces and 10 M vectors an index, as Vectorize does", async () => {
    const fake = new FakeVectorize(2);
    for (let n = 0; n < 50_000; n += 1000)
      await fake.upsert(
        Array.from({ length: 1000 }, (_, i) => ({ id: `v${n + i}`, namespace: `t${n + i}`, values: [1, 0] })),
      );
    await expect(fake.upsert([{ id: "w", namespace: "one-more", values: [1, 0] }])).rejects.toThrow(
      "50,000 namespaces",
    );
    await fake.upsert([{ id: "w", namespace: "t0", values: [1, 0] }]); // an existing namespace takes more
    const nearlyFull = new FakeVectorize(2, ["project"], { heldElsewhere: 9_999_999 });
    await nearlyFull.upsert([{ id: "last", values: [1, 0] }]);
    await nearlyFull.upsert([{ id: "last", values: [0, 1] }]); // replacing a vector adds none
    await expect(nearlyFull.upsert([{ id: "past", values: [1, 0] }])).rejects.toThrow("10,000,000 vectors");
    expect((await nearlyFull.describe()).vectorCount).toBe(10_000_000);
  });
});
