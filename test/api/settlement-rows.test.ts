import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { FORWARD_RETRY_MS } from "../../durable-objects/session/due-work/settlement-outbox.ts";
import { call } from "./helpers.ts";
import { laneSetup, slowStep, useScript } from "./lane-helpers.ts";
import { objectOf } from "./session-helpers.ts";
import { settle } from "./tool-api-helpers.ts";
import { breakUsageMarks, eventually, outboxRows, settledPrompt } from "./webhooks-helpers.ts";

// Issue 33 item 2 (QUALITY P12): a turn settled within its request, in a tenant without webhook
// endpoints, keeps no settlement outbox row (it was inserted and deleted again every turn): the
// forward tells it from memory; its reservation expires at the tenant by itself and its usage has
// its own mark. These tests show that nothing the row protected is lost without it.

const openOperations = (tenantId: string): Promise<number> => env.TENANTS.getByName(tenantId).openOperationCount();

describe("settlements without an outbox row", () => {
  it("a forward that fails stores the row; the alarm tells it after an eviction and frees the slot", async () => {
    const setup = await laneSetup("rowfail");
    await breakUsageMarks(setup.tenantId, true);
    const operationId = await settledPrompt(setup.key, setup.lanePath, "settled while the tenant fails");
    const [row] = await eventually(async () => {
      const rows = await outboxRows(setup.tenantId, setup.sid);
      return rows[0] && rows[0].forward_at >= rows[0].settled_at + FORWARD_RETRY_MS ? rows : undefined;
    }, "the failed forward to store its row");
    expect(row?.operation_id).toBe(operationId);
    expect(await openOperations(setup.tenantId)).toBe(1);
    await breakUsageMarks(setup.tenantId, false);

    await evictDurableObject(objectOf(setup.tenantId, setup.sid));
    await runInDurableObject(objectOf(setup.tenantId, setup.sid), (_instance: SessionObject, state) => {
      state.storage.sql.exec("UPDATE settlement_outbox SET forward_at = settled_at");
    });
    expect(await runDurableObjectAlarm(objectOf(setup.tenantId, setup.sid))).toBe(true);
    expect(await outboxRows(setup.tenantId, setup.sid)).toEqual([]);
    expect(await openOperations(setup.tenantId)).toBe(0);
  });

  it("a prompt answered before its run settled keeps the row: the worker bound the slot, which never expires", async () => {
    const setup = await laneSetup("rowbound");
    await useScript(setup, [slowStep(10)]);
    const response = await call(`${setup.lanePath}/prompt`, { body: { prompt: "go", wait: 0 }, token: setup.key });
    expect(response.status).toBe(202);
    const { operationId } = await response.json<{ operationId: string }>();
    await settle(setup, operationId);
    await eventually(async () => ((await outboxRows(setup.tenantId, setup.sid)).some((row) => row.operation_id === operationId) ? true : undefined), "the settlement's row");
    await eventually(async () => ((await openOperations(setup.tenantId)) === 0 ? true : undefined), "the bound slot to be freed");
  });

  it("a session evicted after its row-less turns tells their usage again, and the tenant counts it once", async () => {
    const setup = await laneSetup("rowevict");
    const tenantTokens = async () => (await (await call("/v1/me", { token: setup.key })).json<{ usage: { totalTokens: number } }>()).usage.totalTokens;
    const sessionTokens = async () => (await (await call(`${setup.sessionPath}/usage`, { token: setup.key })).json<{ totals: { totalTokens: number } }>()).totals.totalTokens;
    await settledPrompt(setup.key, setup.lanePath, "one");
    await eventually(async () => ((await tenantTokens()) === (await sessionTokens()) ? true : undefined), "the first turn's usage at the tenant");
    expect(await outboxRows(setup.tenantId, setup.sid)).toEqual([]);
    // Acknowledged in memory only: the eviction forgets it, and the next forward tells it again.
    await evictDurableObject(objectOf(setup.tenantId, setup.sid));
    await settledPrompt(setup.key, setup.lanePath, "two");
    const expected = await sessionTokens();
    await eventually(async () => ((await tenantTokens()) === expected ? true : undefined), "the tenant's totals to reach the session's");
    await runDurableObjectAlarm(objectOf(setup.tenantId, setup.sid));
    expect(await tenantTokens()).toBe(expected);
    expect(await openOperations(setup.tenantId)).toBe(0);
  });
});
