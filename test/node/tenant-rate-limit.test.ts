import { describe, expect, it } from "vitest";
import { experimental_readRawConfig } from "wrangler";
import { DEFAULT_QUOTAS } from "../../src/config";

// The Worker cannot read a rate-limit binding's settings, so it is told TENANT_RATE_LIMITER's limit
// (TENANT_CALLS_PER_MINUTE, default DEFAULT_QUOTAS.calls_per_minute) to charge a tenant's lower calls_per_minute.
describe("wrangler.toml's TENANT_RATE_LIMITER", () => {
  it("has the limit the Worker assumes, per 60 s", () => {
    const { rawConfig } = experimental_readRawConfig({ config: "wrangler.toml" });
    const binding = rawConfig.ratelimits?.find((r: { name: string }) => r.name === "TENANT_RATE_LIMITER");
    expect(binding?.simple).toEqual({ limit: DEFAULT_QUOTAS.calls_per_minute, period: 60 });
    const told = (rawConfig.vars as Record<string, unknown> | undefined)?.TENANT_CALLS_PER_MINUTE;
    expect(told === undefined ? DEFAULT_QUOTAS.calls_per_minute : Number(told)).toBe(binding!.simple!.limit);
  });
});
