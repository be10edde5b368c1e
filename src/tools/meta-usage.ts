import { z } from "zod";
import { contextUsageStatistics } from "../core/conversations/context-links";
import { toolConversations } from "../core/conversations/metrics";
import { tenantLimits } from "../core/tenants/quotas";
import { usageReport } from "../core/tenants/usage-report";
import { ANNOTATIONS, defineTool } from "./define-tool";
import { iso } from "./params";
import {
  monthlyTotalFields,
  NO_UNITS,
  nullableUnitFields,
  planUnits,
  totalsOutput,
  unitFields,
  unitOutput,
} from "./units-output";

export const getContextUsageStatistics = defineTool({
  name: "get_context_usage_statistics",
  category: "meta",
  title: "Context usage statistics",
  description:
    "Statistics about context usage: context links (message -> chunk), chunks, messages, the most referenced chunks, and " +
    "from the usage log the average tool calls per day and the busiest hour (UTC) over the last 30 days.",
  input: z.object({}),
  output: z.object({
    success: z.literal(true),
    statistics: z.object({
      total_context_links: z.number().int(),
      total_chunks: z.number().int(),
      total_messages: z.number().int(),
      average_links_per_message: z.number(),
      most_referenced_chunks: z.array(z.object({ chunk_id: z.number().int(), reference_count: z.number().int() })),
      context_usage_trends: z.object({ daily_average: z.number(), peak_usage_hour: z.number().int().nullable() }),
    }),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (_input, ctx) => ({ success: true as const, statistics: await contextUsageStatistics(ctx.scope) }),
});

export const getToolConversations = defineTool({
  name: "get_tool_conversations",
  category: "meta",
  title: "Conversations that used a tool",
  description:
    "Conversations in which a tool was called (from the usage log; a call belongs to the conversation its arguments name), " +
    "most recent first, each with its latest summary or opening message.",
  input: z.object({ tool_name: z.string().min(1).max(100), limit: z.number().int().min(1).max(100).default(10) }),
  output: z.object({
    success: z.literal(true),
    tool_name: z.string(),
    conversations: z.array(
      z.object({
        conversation_id: z.string(),
        usage_count: z.number().int(),
        last_used: z.string(),
        context_summary: z.string(),
      }),
    ),
    total_conversations: z.number().int(),
    usage_statistics: z.object({ total_invocations: z.number().int(), average_per_conversation: z.number() }),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => ({
    success: true as const,
    tool_name: input.tool_name,
    ...(await toolConversations(ctx.scope, input.tool_name, input.limit)),
  }),
});

const quotaUsage = z.object({ limit: z.number().int().nullable(), usage: z.number().int() });

export const getUsageReport = defineTool({
  name: "get_usage_report",
  category: "meta",
  title: "Usage report",
  description:
    "Tool calls over time from the usage log's hourly aggregates, for charts: calls per tool in time buckets (1 hour for a day, 6 hours for a week, " +
    "1 day for a month), errors and server-side latency p50/p95 per bucket and per tool, tokens stored per project " +
    "(stashed tokens included, and counted apart), and the tenant's quotas with its usage of each (a write past max_items, " +
    "max_bytes or max_pending_jobs is refused with QUOTA_EXCEEDED; calls past calls_per_minute with RATE_LIMITED), and what " +
    "Cloudflare bills: each tool's and job kind's D1 rows read and written (D1's own counts), KV operations, queue " +
    "messages and Workers AI neurons, with the period's totals against the Free plan's daily limits.",
  input: z.object({ period: z.enum(["day", "week", "month"]).default("day") }),
  output: z.object({
    period: z.string(),
    since: z.string(),
    bucket_ms: z.number().int(),
    buckets: z.array(
      z.object({
        start: z.string(),
        calls: z.record(z.string(), z.number()),
        errors: z.number().int(),
        p50_ms: z.number().nullable(),
        p95_ms: z.number().nullable(),
      }),
    ),
    tools: z.array(
      z.object({
        tool: z.string(),
        calls: z.number().int(),
        errors: z.number().int(),
        p50_ms: z
          .number()
          .nullable()
          .describe("From the hours' fixed latency buckets, interpolated; null for hours logged before they were kept"),
        p95_ms: z.number().nullable(),
        d1_round_trips: z
          .number()
          .nullable()
          .describe("Mean D1 round trips per call (a batch counts once); null for calls logged before it was counted"),
        d1_ms: z.number().nullable().describe("Mean time per call spent waiting on D1"),
        worker_p50_ms: z
          .number()
          .nullable()
          .describe("p50 of each call's duration less its D1 wait: the worker's own time"),
        worker_p95_ms: z.number().nullable(),
        ...nullableUnitFields,
      }),
    ),
    jobs: z
      .array(z.object({ job: z.string(), runs: z.number().int(), failed: z.number().int(), ...unitFields }))
      .describe("Background jobs by kind (embed, link, summarize, extract, delete, usage_log): billable units per run"),
    totals: z
      .object({
        ...planUnits.shape,
        local_rows_read: z.number(),
        local_rows_written: z.number(),
        per_day: planUnits.describe("Mean per day over the period"),
        free_plan_daily: planUnits.describe("The Workers Free plan's daily allowance of each (docs/costs.md)"),
        binding: z
          .object({ unit: z.string(), share: z.number() })
          .nullable()
          .describe("The allowance a mean day of this tenant uses most of, and its share (1 = all of it)"),
        ...monthlyTotalFields,
      })
      .describe("Billable units over the period, tools and jobs together, against the Free plan's daily limits"),
    total_calls: z.number().int(),
    projects: z.array(
      z.object({
        project: z.string(),
        items: z.number().int(),
        tokens: z.number().int(),
        stashed_tokens: z.number().int(),
      }),
    ),
    quotas: z
      .object({
        max_items: quotaUsage.describe("Items the tenant stores (all projects, superseded versions included)"),
        max_bytes: quotaUsage.describe("UTF-8 bytes of the tenant's stored content"),
        max_pending_jobs: quotaUsage.describe("The tenant's items still awaiting embedding"),
        calls_per_minute: quotaUsage.describe(
          "The tenant's mean tool calls a minute over the current UTC hour, across its keys, from the usage log's hourly aggregates",
        ),
        extraction_neurons_per_day: quotaUsage.describe(
          "Workers AI neurons memory extraction spent for the tenant since 00:00 UTC (its daily model budget)",
        ),
      })
      .describe("Each tenant quota: its limit (null = unlimited) and the tenant's usage"),
    extraction: z
      .object({
        status: z
          .string()
          .describe(
            "off (no model, LLM=off), active, or why it waits (a spent daily budget or allocation) and until when",
          ),
        model: z.string().nullable(),
        windows: z.number().int(),
        failed_windows: z.number().int(),
        model_calls: z.number().int(),
        turns: z.number().int().describe("Conversation turns extraction read in the period"),
        tokens_in: z.number().int(),
        tokens_out: z.number().int(),
        neurons: z.number().int().describe("Workers AI neurons (0 for other providers)"),
        per_turn: z
          .object({ model_calls: z.number(), tokens_in: z.number(), tokens_out: z.number(), neurons: z.number() })
          .nullable()
          .describe("What one ingested turn cost; null before any turn was read"),
        mean_latency_ms: z.number().nullable(),
      })
      .describe("Memory extraction in the period: what it read and cost (docs/extraction.md)"),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const report = await usageReport(
      ctx.scope,
      input.period,
      tenantLimits(ctx.services.config.quotas, ctx.scope.quotas),
    );
    return {
      period: input.period,
      since: iso(report.since),
      bucket_ms: report.bucketMs,
      buckets: report.buckets.map((b) => ({
        start: iso(b.start),
        calls: b.calls,
        errors: b.errors,
        p50_ms: b.p50Ms,
        p95_ms: b.p95Ms,
      })),
      tools: report.tools.map((t) => ({
        tool: t.tool,
        calls: t.calls,
        errors: t.errors,
        p50_ms: t.p50Ms,
        p95_ms: t.p95Ms,
        d1_round_trips: t.d1RoundTrips,
        d1_ms: t.d1Ms,
        worker_p50_ms: t.workerP50Ms,
        worker_p95_ms: t.workerP95Ms,
        ...(t.units ? unitOutput(t.units) : NO_UNITS),
      })),
      jobs: report.jobs.map((j) => ({ job: j.name, runs: j.calls, failed: j.errors, ...unitOutput(j) })),
      totals: totalsOutput(report.totals),
      total_calls: report.totalCalls,
      projects: report.projects.map((p) => ({
        project: p.project,
        items: p.items,
        tokens: p.tokens,
        stashed_tokens: p.stashedTokens,
      })),
      quotas: report.quotas,
      extraction: {
        status:
          ctx.services.model === null
            ? "off"
            : report.extraction.waiting === null
              ? "active"
              : report.extraction.waiting,
        model: ctx.services.model?.name ?? null,
        windows: report.extraction.windows,
        failed_windows: report.extraction.failedWindows,
        model_calls: report.extraction.modelCalls,
        turns: report.extraction.turns,
        tokens_in: report.extraction.tokensIn,
        tokens_out: report.extraction.tokensOut,
        neurons: report.extraction.neurons,
        per_turn:
          report.extraction.perTurn === null
            ? null
            : {
                model_calls: report.extraction.perTurn.modelCalls,
                tokens_in: report.extraction.perTurn.tokensIn,
                tokens_out: report.extraction.perTurn.tokensOut,
                neurons: report.extraction.perTurn.neurons,
              },
        mean_latency_ms: report.extraction.meanLatencyMs,
      },
    };
  },
});
