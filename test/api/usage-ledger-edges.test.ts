import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { addUsage, zeroUsage } from "../../harness/session/usage.ts";
import type { Usage } from "../../schema/usage.ts";
import { call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { objectOf } from "./session-helpers.ts";
import { breakUsageMarks, eventually, settledPrompt } from "./webhooks-helpers.ts";

// The usage ledger reads the same everywhere and bills every row once (docs/api-tenants.md "GET
// /v1/me": `usage` sums "every usage row once (including sessions deleted since)"; "A session you
// delete reports what it had not reported yet before it is deleted"; reference §1.7: the session's
// totals equal the ledger sum after every commit). Two ways it did not:
// - a session deleted while a failed usage forward waited for its retry dropped that usage: the
//   deletion sent only a forward still on its timer. It now sends whatever the tenant has not
//   acknowledged;
// - an optional counter reported as 0 (`reasoning: 0`, as Anthropic's adapter may report) stayed in
//   the in-memory totals but not in the stored rows, the totals after an eviction or the tenant's
//   sums. A sum of zero is now left out everywhere (zero and absent mean the same).

const tenantUsage = async (key: string): Promise<Usage> => (await (await call("/v1/me", { token: key })).json<{ usage: Usage }>()).usage;

const sessionUsage = async (key: string, sessionPath: string): Promise<Usage> => (await (await call(`${sessionPath}/usage`, { token: key })).json<{ totals: Usage }>()).totals;

function usageRetryAt(tenantId: string, sid: string): Promise<number | null> {
  return runInDurableObject(objectOf(tenantId, sid), (_instance: SessionObject, state) => state.storage.sql.exec<{ retry_at: number | null }>("SELECT retry_at FROM usage_forward").one().retry_at);
}

describe("usage not yet reported when a session is deleted", () => {
  it("a session deleted while its failed usage forward waits for its retry still reports that usage to the tenant", async () => {
    const setup = await laneSetup("usage_del");
    // The tenant object fails the forward of this turn's usage (the tenant was briefly unreachable).
    await breakUsageMarks(setup.tenantId, true);
    await settledPrompt(setup.key, setup.lanePath, "a turn whose usage forward fails");
    await eventually(async () => ((await usageRetryAt(setup.tenantId, setup.sid)) === null ? undefined : true), "the failed forward to arm its retry");
    // The tenant is reachable again; the retry is 30 s away.
    await breakUsageMarks(setup.tenantId, false);
    const expected = await sessionUsage(setup.key, setup.sessionPath);
    expect(expected.totalTokens).toBeGreaterThan(0);
    expect((await tenantUsage(setup.key)).totalTokens).toBe(0);

    expect((await call(setup.sessionPath, { method: "DELETE", token: setup.key })).status).toBe(204);
    // The deleted session's usage must stay billed: it told the tenant before its storage went.
    expect(await tenantUsage(setup.key)).toEqual(expected);
  });
});

type Page = { rows: { seq: number; usage: Usage }[]; totals: Usage };
const usagePage = async (key: string, sessionPath: string): Promise<Page> => (await call(`${sessionPath}/usage`, { token: key })).json<Page>();

describe("optional usage counters reported as zero", () => {
  it("the session's totals equal the sum of its listed rows, stay the same across an eviction, and match the tenant's totals", async () => {
    const setup = await laneSetup("usage_opt");
    await useScript(setup, [{ text: "answer", usage: { input: 10, output: 4, reasoning: 0, cacheWrite1h: 0, totalTokens: 14 } }]);
    await settledPrompt(setup.key, setup.lanePath, "question");

    const before = await usagePage(setup.key, setup.sessionPath);
    expect(before.rows).toHaveLength(1);
    const sumOfRows = before.rows.reduce((total, row) => addUsage(total, row.usage), zeroUsage());
    await eventually(async () => ((await tenantUsage(setup.key)).totalTokens === 14 ? true : undefined), "the tenant's totals");

    await evictDurableObject(objectOf(setup.tenantId, setup.sid));
    const after = await usagePage(setup.key, setup.sessionPath);
    const tenant = await tenantUsage(setup.key);

    expect({ listedRowSum: sumOfRows, afterEviction: after.totals, tenant }).toStrictEqual({ listedRowSum: before.totals, afterEviction: before.totals, tenant: before.totals });
  });
});
