// The dashboard's only way to the server: JSON-RPC tool calls at /jsonrpc (batched where a view needs
// several), documents as files at /documents and the admin API at /admin, all with the signed-in key as a bearer
// token. The key lives in sessionStorage: this tab only, gone when it closes, never in a URL or a cookie.

export type Scope = "read" | "write" | "admin";

export interface Session {
  key: string;
  tenantId: string;
  keyId: string;
  scopes: Scope[];
  /** null = every project of the tenant. */
  projects: string[] | null;
}

const KEY_STORAGE = "context-edge.dashboard.api-key";

export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 0,
  ) {
    super(message);
  }
}

export interface ToolCall {
  name: string;
  args?: Record<string, unknown>;
}

export type CallOutcome<T = unknown> = { ok: true; value: T } | { ok: false; error: ApiError };

/** Called when the server no longer accepts the key (revoked): the app signs out. */
let onUnauthorized: (message: string) => void = () => {};
export function setUnauthorizedHandler(handler: (message: string) => void): void {
  onUnauthorized = handler;
}

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_STORAGE);
}

/** Checks the key with the server (whoami) and keeps it for this tab only when it works. */
export async function signIn(key: string): Promise<Session> {
  const who = await callTool<{ tenant_id: string; key_id: string; scopes: Scope[]; projects: string[] | null }>(
    key,
    "whoami",
  );
  sessionStorage.setItem(KEY_STORAGE, key);
  return { key, tenantId: who.tenant_id, keyId: who.key_id, scopes: who.scopes, projects: who.projects };
}

export function signOut(): void {
  sessionStorage.removeItem(KEY_STORAGE);
}

const RANK: Record<Scope, number> = { read: 0, write: 1, admin: 2 };
/** Scopes are ordered: write includes read, admin includes write. */
export function allows(session: Session, scope: Scope): boolean {
  return session.scopes.some((s) => RANK[s] >= RANK[scope]);
}

/** Several tool calls in one JSON-RPC batch (one request); each answer in call order. */
export async function callTools(key: string, calls: ToolCall[]): Promise<CallOutcome[]> {
  const body = calls.map((c, i) => ({
    jsonrpc: "2.0",
    id: i + 1,
    method: "tools/call",
    params: { name: c.name, arguments: c.args ?? {} },
  }));
  const response = await fetch("/jsonrpc", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const payload = (await response.json().catch(() => null)) as unknown;
  if (!response.ok && !Array.isArray(payload)) throw failure(response.status, payload);
  const answers = new Map((payload as { id: number; result?: unknown; error?: RpcError }[]).map((a) => [a.id, a]));
  return calls.map((_, i) => {
    const answer = answers.get(i + 1);
    if (!answer) return { ok: false, error: new ApiError("INTERNAL_ERROR", "No answer for this call") };
    if (answer.error)
      return {
        ok: false,
        error: new ApiError(answer.error.data?.code ?? String(answer.error.code), answer.error.message),
      };
    return { ok: true, value: answer.result };
  });
}

/** One tool call; throws ApiError when it fails. */
export async function callTool<T>(key: string, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const [outcome] = await callTools(key, [{ name, args }]);
  if (!outcome!.ok) throw outcome!.error;
  return outcome!.value as T;
}

/** Every call of a batch must succeed; the first failure is thrown. */
export async function callAll<T extends unknown[]>(key: string, calls: ToolCall[]): Promise<T> {
  const outcomes = await callTools(key, calls);
  const failed = outcomes.find((o) => !o.ok);
  if (failed && !failed.ok) throw failed.error;
  return outcomes.map((o) => (o.ok ? o.value : null)) as T;
}

/** The admin API (keys): plain JSON over HTTP. */
export async function adminRequest<T>(
  key: string,
  method: "GET" | "POST" | "DELETE",
  path: string,
  body?: unknown,
): Promise<T> {
  const response = await fetch(`/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const payload = (await response.json().catch(() => null)) as unknown;
  if (!response.ok) throw failure(response.status, payload);
  return payload as T;
}

/**
 * A file to POST /documents as a multipart form: its type and name travel in the part. A form's parameters are its
 * fields (the server reads no query beside a form), so the project is one, and `extract` when memories are to be
 * extracted from it. Answers what memory_ingest_document answers;
 * a refusal throws with the server's message (an unsupported type, a file over the limit).
 */
export async function uploadDocument<T>(key: string, project: string, file: File, extract = false): Promise<T> {
  const form = new FormData();
  form.append("file", file, file.name);
  form.append("project_id", project);
  if (extract) form.append("extract", "true");
  const response = await fetch("/documents", {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  const payload = (await response.json().catch(() => null)) as unknown;
  if (!response.ok) throw failure(response.status, payload);
  return payload as T;
}

interface RpcError {
  code: number;
  message: string;
  data?: { code?: string };
}

function failure(status: number, payload: unknown): ApiError {
  const body = payload as { error?: { code?: string | number; message?: string; data?: { code?: string } } } | null;
  const message = body?.error?.message ?? `HTTP ${status}`;
  if (status === 401) {
    onUnauthorized(message);
    return new ApiError("UNAUTHORIZED", message, status);
  }
  const code =
    body?.error?.data?.code ??
    (typeof body?.error?.code === "string" ? body.error.code : status === 429 ? "RATE_LIMITED" : `HTTP_${status}`);
  return new ApiError(code, message, status);
}
