import { fitsUtf8, PLATFORM_LIMITS, utf8Bytes } from "../platform-limits";

const KV = PLATFORM_LIMITS.kv;

/**
 * A KV namespace that refuses what Workers KV refuses, with its messages (status and reason): a key over
 * 512 bytes, empty, "." or ".."; a value over 25 MiB; metadata over 1,024 bytes of JSON; an expirationTtl
 * under 60 s. Local KV accepts some of these. Applied at the Worker's entry (src/checked-env.ts).
 */
export function checkedKv(inner: KVNamespace): KVNamespace {
  let checked = wrapped.get(inner);
  if (!checked) {
    const kv = inner as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    checked = {
      // async: a refusal is a rejected promise, as the platform's is.
      get: async (key: unknown, options?: unknown) => kv.get!(checkKeys(key, "GET"), options),
      getWithMetadata: async (key: unknown, options?: unknown) => kv.getWithMetadata!(checkKeys(key, "GET"), options),
      put: async (key: string, value: unknown, options?: KVNamespacePutOptions) => {
        checkKey(key, "PUT");
        checkValue(value);
        checkPutOptions(options);
        return kv.put!(key, value, options);
      },
      delete: async (key: string) => kv.delete!(checkKey(key, "DELETE")),
      list: (options?: unknown) => kv.list!(options),
    } as unknown as KVNamespace;
    wrapped.set(inner, checked);
  }
  return checked;
}

const wrapped = new WeakMap<KVNamespace, KVNamespace>();

function checkKey(key: string, verb: string): string {
  if (key === "" || key === "." || key === "..")
    throw new Error(`KV ${verb} failed: 400 Illegal key name '${key}': keys may not be empty, '.' or '..'`);
  if (!fitsUtf8(key, KV.keyBytes))
    throw new Error(
      `KV ${verb} failed: 414 UTF-8 encoded length of ${utf8Bytes(key)} exceeds key length limit of ${KV.keyBytes}.`,
    );
  return key;
}

/** get() takes a key or an array of keys. */
function checkKeys(key: unknown, verb: string): unknown {
  for (const k of Array.isArray(key) ? key : [key]) checkKey(k as string, verb);
  return key;
}

function checkValue(value: unknown): void {
  const bytes =
    typeof value === "string"
      ? fitsUtf8(value, KV.valueBytes)
        ? 0
        : utf8Bytes(value)
      : value instanceof ArrayBuffer || ArrayBuffer.isView(value)
        ? value.byteLength
        : 0;
  if (bytes > KV.valueBytes)
    throw new Error(`KV PUT failed: 413 Value length of ${bytes} exceeds limit of ${KV.valueBytes}.`);
}

function checkPutOptions(options: KVNamespacePutOptions | undefined): void {
  if (options?.expirationTtl !== undefined && options.expirationTtl < KV.minTtlSeconds) {
    throw new Error(
      `KV PUT failed: 400 Invalid expiration_ttl of ${options.expirationTtl}. Expiration TTL must be at least ${KV.minTtlSeconds}.`,
    );
  }
  if (options?.metadata !== undefined && options.metadata !== null) {
    const bytes = utf8Bytes(JSON.stringify(options.metadata));
    if (bytes > KV.metadataBytes)
      throw new Error(`KV PUT failed: 413 Metadata length of ${bytes} exceeds limit of ${KV.metadataBytes}.`);
  }
}
