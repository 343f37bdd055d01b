import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { MAX_USAGE_COST, MAX_USAGE_TOKENS, type Usage } from "../../schema/usage.ts";
import { call, newTenant } from "./helpers.ts";
import { expectError, tenantWithSession, user } from "./session-helpers.ts";

// Usage numbers are bounded wherever they enter (a script, a provider, an API body), so totals stay
// finite; and the tenant's totals are never reset, whatever arrives.

const usageOf = async (key: string): Promise<Usage> => (await (await call("/v1/me", { token: key })).json<{ usage: Usage }>()).usage;

async function scriptedLane(key: string, base: string): Promise<void> {
  expect((await call(`${base}/lanes/main`, { method: "PUT", token: key })).status).toBe(201);
  const patched = await call(`${base}/lanes/main/config`, { method: "PATCH", body: { model: { provider: "scripted", modelId: "script" } }, token: key });
  expect(patched.status).toBe(200);
}

describe("usage bounds through the API", () => {
  it("a script step with out-of-range usage is refused with 400 and not appended", async () => {
    const { key, base } = await tenantWithSession("ubscript");
    for (const usage of [{ input: 1e308 }, { output: -1 }, { cacheRead: 0.5 }, { totalTokens: MAX_USAGE_TOKENS + 1 }, { cost: { total: 1e300 } }]) {
      await expectError(await call(`${base}/lists/scripted/steps`, { body: { text: "x", usage }, token: key }), 400, "ValidationFailed");
    }
    const listed = await (await call(`${base}/lists/scripted/steps`, { token: key })).json<{ items: unknown[] }>();
    expect(listed.items).toEqual([]);
  });

  it("an assistant message with out-of-range usage is refused with 400", async () => {
    const { key, base } = await tenantWithSession("ubmessage");
    expect((await call(`${base}/branches`, { body: { name: "b" }, token: key })).status).toBe(201);
    const usage = { input: 1e308, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 1e308, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
    const message = { role: "assistant", content: [{ type: "text", text: "hi" }], api: "x", provider: "x", model: "x", usage, stopReason: "stop", timestamp: 1 };
    await expectError(await call(`${base}/branches/b/entries`, { body: { message }, token: key }), 400, "ValidationFailed");
    expect((await call(`${base}/branches/b/entries`, { body: { message: user("fine") }, token: key })).status).toBe(201);
  });

  it("two runs at the largest usage a step may report leave finite totals in the session and the tenant", async () => {
    const { key, base } = await tenantWithSession("ubmax");
    await scriptedLane(key, base);
    // Output, not input: input above the model's context window reads as a context overflow.
    const usage = { output: MAX_USAGE_TOKENS, totalTokens: MAX_USAGE_TOKENS, cost: { output: MAX_USAGE_COST, total: MAX_USAGE_COST } };
    for (const text of ["one", "two"]) expect((await call(`${base}/lists/scripted/steps`, { body: { text, usage }, token: key })).status).toBe(201);
    for (const prompt of ["first", "second"]) {
      const run = await call(`${base}/lanes/main/prompt`, { body: { prompt, wait: 10 }, token: key });
      expect(run.status).toBe(200);
      expect(await run.json()).toMatchObject({ status: "completed" });
    }
    const session = await (await call(`${base}/usage`, { token: key })).json<{ rows: { usage: Usage }[]; totals: Usage }>();
    expect(session.rows).toHaveLength(2);
    for (const row of session.rows) expect(row.usage).toMatchObject({ output: MAX_USAGE_TOKENS, totalTokens: MAX_USAGE_TOKENS });
    expect(session.totals).toMatchObject({ output: 2 * MAX_USAGE_TOKENS, totalTokens: 2 * MAX_USAGE_TOKENS, cost: { total: 2 * MAX_USAGE_COST } });
    // The tenant's totals arrive asynchronously (forwarded after the commit): poll, bounded.
    let totals = await usageOf(key);
    for (let i = 0; i < 200 && totals.output < 2 * MAX_USAGE_TOKENS; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      totals = await usageOf(key);
    }
    expect(totals).toMatchObject({ output: 2 * MAX_USAGE_TOKENS, cost: { total: 2 * MAX_USAGE_COST } });
  });
});

describe("tenant usage totals are never reset", () => {
  const row = (input: number): Usage => ({ input, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: input, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } });
  let seq = 0;
  /** One ledger row of a session, forwarded as sessions forward them (with their settlements). */
  const forward = (tenantId: string, usage: Usage, epoch = 1, sid = "s_bounds") => env.TENANTS.getByName(tenantId).operationsSettled(sid, [], { epoch, rows: [{ seq: ++seq, usage }] });
  const stored = (tenantId: string) =>
    runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => state.storage.sql.exec<{ totals: string }>("SELECT totals FROM usage_totals").toArray());

  it("an addition out of bounds (1e308, Infinity, negative) is skipped; the totals keep their value", async () => {
    const { tenantId, key } = await newTenant("ubskip");
    for (const input of [5, 1e308, Infinity, -3]) await forward(tenantId, row(input));
    expect(await usageOf(key)).toMatchObject({ input: 5, totalTokens: 5 });
  });

  it("totals that do not parse (written by an older version) are kept as they are, never reset to a new addition", async () => {
    const { tenantId } = await newTenant("ubcorrupt");
    const corrupt = JSON.stringify({ ...row(7), input: null, totalTokens: null });
    await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("INSERT INTO usage_totals (singleton, totals) VALUES (1, ?)", corrupt);
    });
    await forward(tenantId, row(11));
    expect(await stored(tenantId)).toEqual([{ totals: corrupt }]);
  });

  it("totals stored before sessions kept their own sums still count, and a forward rewrites only its session's mark", async () => {
    const { tenantId, key } = await newTenant("ubretired");
    await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("INSERT INTO usage_totals (singleton, totals) VALUES (1, ?)", JSON.stringify(row(100)));
    });
    await forward(tenantId, row(5));
    await forward(tenantId, row(6), 1, "s_other");
    expect(await usageOf(key)).toMatchObject({ input: 111, totalTokens: 111 });
    expect(await stored(tenantId)).toEqual([{ totals: JSON.stringify(row(100)) }]);
  });

  it("a newer incarnation of a session id retires the older one's sum; a late forward of the older one adds nothing", async () => {
    const { tenantId, key } = await newTenant("ubepoch");
    await forward(tenantId, row(5), 1, "s_reborn");
    await forward(tenantId, row(7), 2, "s_reborn");
    expect(await usageOf(key)).toMatchObject({ input: 12 });
    await forward(tenantId, row(1_000), 1, "s_reborn");
    expect(await usageOf(key)).toMatchObject({ input: 12 });
    expect(await stored(tenantId)).toEqual([{ totals: JSON.stringify(row(5)) }]);
  });
});
