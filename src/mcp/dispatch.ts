import { type BillableUnits, noUnits, shareOf } from "../billable-units";
import { forgetRoutes } from "../control/routing";
import { scopeAllows } from "../core/tenants/api-keys";
import { queryBudget, remainingQueries, startToolCall, toolCallsStarted } from "../db/invocation-queries";
import {
  AppError,
  invalidParameter,
  isQueryBudgetExceeded,
  permissionDenied,
  queryBudgetError,
  toAppError,
} from "../errors";
import type { ToolCallRecord } from "../messages";
import { type AnyTool, requiredScope, type ToolContext } from "../tools/define-tool";
import type { Toolset } from "../tools/toolsets";
import { validationError } from "../validation";
import { labelWork } from "../work-labels";

/** Argument names that carry a project / a conversation, in the seeds' vocabularies. */
const PROJECT_ARGUMENTS = ["project_id", "namespace", "project"] as const;
const CONVERSATION_ARGUMENTS = ["contextId", "conversation_id", "session_id", "sourceContextId"] as const;

export type ToolOutcome = { ok: true; value: unknown } | { ok: false; error: AppError };

/**
 * The one path every tool call takes, from /mcp and /jsonrpc alike: find the tool, check the
 * toolset, the key's scope, the arguments and the key's projects, run the handler, log the call.
 */
export async function callTool(
  catalog: ReadonlyMap<string, AnyTool>,
  toolset: Toolset,
  name: unknown,
  args: unknown,
  ctx: ToolContext,
): Promise<ToolOutcome> {
  const [outcome] = await callTools(catalog, toolset, [{ name, args }], ctx);
  return outcome!;
}

/**
 * D1 queries a tool call is not started with fewer of (D1_QUERIES_PER_INVOCATION): about what the costlier
 * calls take (a write: its reads, then one batch of ~8 statements; a search: 2). A JSON-RPC batch runs its calls
 * while the invocation has this many left and answers the rest with a retryable error that names the limit.
 */
export const CALL_QUERIES = 10;

/**
 * D1 queries each call adds to a handleMany group (its conversation's read, its project's cache generation, a
 * share of the write's statements): a group holds no more calls than the budget left covers after CALL_QUERIES.
 */
export const GROUPED_CALL_QUERIES = 3;
const groupRoom = () => Math.max(1, Math.floor((remainingQueries() - CALL_QUERIES) / GROUPED_CALL_QUERIES));

/** A call that passed every check, waiting for its handler. */
interface PreparedCall {
  tool: AnyTool;
  input: Record<string, unknown>;
  startedAt: number;
}

/**
 * Several calls in order (a JSON-RPC batch), each checked on its own as callTool does. A run of
 * consecutive calls to one tool that has `handleMany` (log_chat, ...) runs as one handler call, so a
 * batch of 50 messages is one D1 write instead of 50; if that group fails, its calls run one by one
 * so each error reaches its own call (a failed group wrote nothing: writes are one atomic batch).
 */
export async function callTools(
  catalog: ReadonlyMap<string, AnyTool>,
  toolset: Toolset,
  calls: readonly { name: unknown; args: unknown }[],
  ctx: ToolContext,
): Promise<ToolOutcome[]> {
  const outcomes: ToolOutcome[] = new Array(calls.length);
  // In call order: each call's record, made once the request's work has ended (a group's units are final then).
  const records: (() => ToolCallRecord)[] = [];
  let group: { index: number; call: PreparedCall }[] = [];
  const flush = async () => {
    if (group.length === 0) return;
    const done = group;
    group = [];
    const units = noUnits();
    const results = await ctx.services.meter.charging(units, () =>
      runGroup(
        done.map((g) => g.call),
        ctx,
      ),
    );
    // A group's calls share its time and units (50 batched log_chat turns: one write, 1/50 each); the units are read
    // when the request's work after the response has ended too.
    const ms = (Date.now() - done[0]!.call.startedAt) / done.length;
    done.forEach((g, i) => {
      outcomes[g.index] = results[i]!;
      records[g.index] = () =>
        usageRecord(ctx, g.call.tool, g.call.input, g.call.startedAt, results[i]!, ms, shareOf(units, done.length));
    });
  };
  for (let index = 0; index < calls.length; index++) {
    const { name, args } = calls[index]!;
    const startedAt = Date.now();
    const prepared = await prepareCall(catalog, toolset, name, args, ctx);
    if (!prepared.ok) {
      await flush();
      outcomes[index] = prepared;
      const { tool } = prepared;
      const ms = Date.now() - startedAt;
      if (tool)
        records[index] = () => usageRecord(ctx, tool, isRecord(args) ? args : {}, startedAt, prepared, ms, noUnits());
      continue;
    }
    const call = { ...prepared.call, startedAt };
    if (group.length > 0 && (group[0]!.call.tool !== call.tool || !call.tool.handleMany || group.length >= groupRoom()))
      await flush();
    group.push({ index, call });
    if (!call.tool.handleMany) await flush();
  }
  await flush();
  // A write the tenant's shard refused for a move: the next request looks up where the tenant lives.
  if (outcomes.some((o) => !o.ok && o.error.details.reason === "tenant_moving"))
    forgetRoutes({ tenantId: ctx.scope.tenantId });
  // Counted after the response, once its work has ended: one queue message a request (each call its share of that
  // send); the consumer writes many requests in one statement.
  const send = async () => {
    await ctx.services.meter.settled();
    // A sparse array: a call refused before it named a known tool has no record.
    const logged = records.filter((record) => record !== undefined).map((record) => record());
    for (const { tool: name, project } of logged)
      labelWork({ tenantId: ctx.scope.tenantId, source: "tool", name, project });
    await ctx.services.usage.record(ctx.scope.tenantId, logged);
  };
  ctx.services.waitUntil(send().catch((e) => console.error("usage log send failed", e)));
  return outcomes;
}

async function prepareCall(
  catalog: ReadonlyMap<string, AnyTool>,
  toolset: Toolset,
  name: unknown,
  args: unknown,
  ctx: ToolContext,
): Promise<{ ok: true; call: Omit<PreparedCall, "startedAt"> } | { ok: false; error: AppError; tool?: AnyTool }> {
  const tool = typeof name === "string" ? catalog.get(name) : undefined;
  if (!tool) {
    const shown = typeof name === "string" ? `'${name}'` : "(missing)";
    return {
      ok: false,
      error: invalidParameter(
        "name",
        `Unknown tool ${shown}. Call tools/list or list_tool_identifiers for the tools this server has.`,
      ),
    };
  }
  try {
    checkToolset(tool, toolset);
    const refused = await ctx.chargeToolCall();
    if (refused) throw refused;
    const required = requiredScope(tool);
    if (!scopeAllows(ctx.caller.scopes, required)) {
      throw permissionDenied(
        `Tool '${tool.name}' needs a key with the '${required}' scope; this key has: ${ctx.caller.scopes.join(", ")}`,
        {
          required_scope: required,
        },
      );
    }
    rejectIllFormedText(args);
    const parsed = tool.input.safeParse(args ?? {}, { reportInput: true });
    if (!parsed.success) throw validationError(parsed.error);
    const input = parsed.data as Record<string, unknown>;
    checkProjects(input, ctx.caller.projects);
    return { ok: true, call: { tool, input } };
  } catch (error) {
    return { ok: false, error: toAppError(error), tool };
  }
}

/**
 * A group's calls: as one handleMany, or one by one. Each starts only if the invocation has CALL_QUERIES D1
 * queries left; one the budget refuses midway wrote nothing (its refused statement) and every later one of
 * the request is answered without running, retryably, since the budget is spent.
 */
async function runGroup(calls: PreparedCall[], ctx: ToolContext): Promise<ToolOutcome[]> {
  const tool = calls[0]!.tool;
  if (calls.length > 1 && tool.handleMany) {
    if (!budgetLeft()) return calls.map(notRun);
    const first = startToolCall();
    try {
      const values = await tool.handleMany(
        calls.map((c) => c.input),
        ctx,
      );
      return values.map((value) => ({ ok: true, value }));
    } catch (error) {
      if (isQueryBudgetExceeded(error))
        return calls.map(() => ({
          ok: false,
          error: queryBudgetError(error.limit, first ? "group_too_big" : "refused"),
        }));
      // One call spoiled the group; one by one, each gets its own answer.
    }
  }
  const outcomes: ToolOutcome[] = [];
  for (const call of calls) {
    if (!budgetLeft()) {
      outcomes.push(notRun());
      continue;
    }
    const first = startToolCall();
    try {
      outcomes.push({ ok: true, value: await tool.handler(call.input, ctx) });
    } catch (error) {
      outcomes.push(
        isQueryBudgetExceeded(error) ? refusedByBudget(error.limit, first) : { ok: false, error: toAppError(error) },
      );
    }
  }
  return outcomes;
}

/** The request's first call always runs (whatever it needs, it has the most a request gets); later ones need CALL_QUERIES left. */
const budgetLeft = () => toolCallsStarted() === 0 || remainingQueries() >= CALL_QUERIES;
const notRun = (): ToolOutcome => ({ ok: false, error: queryBudgetError(queryBudget()!.limit, "not_run") });
const refusedByBudget = (limit: number, first: boolean): ToolOutcome => ({
  ok: false,
  error: queryBudgetError(limit, first ? "too_big" : "refused"),
});

function usageRecord(
  ctx: ToolContext,
  tool: AnyTool,
  source: Record<string, unknown>,
  startedAt: number,
  outcome: ToolOutcome,
  ms: number,
  units: BillableUnits,
): ToolCallRecord {
  return {
    keyId: ctx.caller.keyId,
    tool: tool.name,
    project: firstString(source, PROJECT_ARGUMENTS),
    conversationId: firstString(source, CONVERSATION_ARGUMENTS),
    startedAt,
    durationMs: ms,
    errorCode: outcome.ok ? null : outcome.error.code,
    units,
  };
}

function checkToolset(tool: AnyTool, toolset: Toolset): void {
  if (toolset.includes(tool)) return;
  throw new AppError(
    "INVALID_PARAMETER",
    `Tool '${tool.name}' is in toolset '${tool.category}', which this connection has not enabled (enabled: ${toolset.names.join(", ")}). ` +
      `Add it with ?toolsets=${[...toolset.names, tool.category].join(",")} or use ?toolsets=all.`,
    { parameter: "name", toolset: tool.category },
  );
}

function checkProjects(args: Record<string, unknown>, allowed: string[] | null): void {
  if (allowed === null) return;
  for (const key of PROJECT_ARGUMENTS) {
    const value = args[key];
    if (typeof value === "string" && !allowed.includes(value)) {
      throw permissionDenied(
        `This key may not touch project '${value}' (${key}); it is limited to: ${allowed.join(", ")}`,
        {
          parameter: key,
          allowed_projects: allowed,
        },
      );
    }
  }
}

/** With the u flag a paired surrogate is one code point, so this matches only unpaired halves. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Text must be well-formed Unicode: a lone surrogate would be mangled on its way to storage, so the
 * stored text, its hash and its search terms would no longer match what the caller sent. Iterative,
 * so hostile nesting cannot exhaust the stack.
 */
function rejectIllFormedText(args: unknown): void {
  const stack: { value: unknown; path: string }[] = [{ value: args, path: "" }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value === "string") {
      if (LONE_SURROGATE.test(value))
        throw invalidParameter(
          path || "arguments",
          `Invalid parameter '${path || "arguments"}': text is not well-formed Unicode (it holds a lone surrogate)`,
        );
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => stack.push({ value: v, path: path ? `${path}.${i}` : String(i) }));
    } else if (isRecord(value)) {
      for (const [key, v] of Object.entries(value)) {
        const keyPath = path ? `${path}.${key}` : key;
        if (LONE_SURROGATE.test(key))
          throw invalidParameter(
            "arguments",
            "Invalid parameter 'arguments': a parameter name is not well-formed Unicode",
          );
        stack.push({ value: v, path: keyPath });
      }
    }
  }
}

function firstString(args: Record<string, unknown>, keys: readonly string[]): string | null {
  for (const key of keys) {
    const value = args[key];
    if (typeof value === "string" && value.length > 0) return value.slice(0, 200);
  }
  return null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
