import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import type { Usage } from "../../schema/usage.ts";
import { call } from "./helpers.ts";
import { laneSetup, untilHeld } from "./lane-helpers.ts";
import { pollCalls, recordCalls } from "./tenant-calls.ts";
import { eventually } from "./webhooks-helpers.ts";

// A lane prompted back to back keeps the slot its session holds ahead (held-slots.ts): a prompt
// that settles within its request gives it back, and the settlement forward that no lane waits on
// is coalesced (settlement-outbox.ts FORWARD_COALESCE_MS). What the tenant is told stays exact.

const tenantUsage = async (key: string): Promise<Usage> => (await (await call("/v1/me", { token: key })).json<{ usage: Usage }>()).usage;
const sessionUsage = async (key: string, sessionPath: string): Promise<Usage> => (await (await call(`${sessionPath}/usage`, { token: key })).json<{ totals: Usage }>()).totals;

function prompt(setup: { key: string; lanePath: string }, text: string): Promise<Response> {
  return call(`${setup.lanePath}/prompt`, { body: { prompt: text }, token: setup.key });
}

describe("prompts back to back on the slot a session holds ahead", () => {
  it("reuse the lane's slot (no reservation after the first), tell the tenant every turn's usage, and leave nothing open", async () => {
    const setup = await laneSetup("coalesce");
    expect((await prompt(setup, "first")).status).toBe(200);
    const held = await untilHeld(setup);
    const recorder = await recordCalls(setup.tenantId);
    const turns = 8;
    for (let turn = 0; turn < turns; turn++) {
      const response = await prompt(setup, `turn ${turn}`);
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ status: "completed" });
    }
    // The slot came back with each settled turn: the lane holds the same one again now, and no prompt reserved.
    expect(await untilHeld(setup)).toBe(held);
    const expected = await sessionUsage(setup.key, setup.sessionPath);
    expect(expected.totalTokens).toBeGreaterThan(0);
    await eventually(async () => (JSON.stringify(await tenantUsage(setup.key)) === JSON.stringify(expected) ? true : undefined), "the tenant's totals", 10_000);
    const calls = await pollCalls(recorder.read, (seen) => seen.includes("operationsSettled"));
    await recorder.stop();
    expect(calls.filter((name) => name === "authorizeAndReserve" || name === "reserveOperation" || name === "bindOperation")).toEqual([]);
    // One forward per turn at most; turns settled within FORWARD_COALESCE_MS of each other share one.
    expect(calls.filter((name) => name === "operationsSettled").length).toBeLessThanOrEqual(turns);
    expect(await env.TENANTS.getByName(setup.tenantId).openOperationCount()).toBe(0);
    // A kept slot is not released: the tenant wrote no release tombstone for those turns (P12's rows).
    const tombstones = await runInDurableObject(env.TENANTS.getByName(setup.tenantId), (_instance: TenantObject, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM released_operations").one().n);
    expect(tombstones).toBe(0);
  });

  it("a session deleted right after a prompt has told its tenant that turn's usage first", async () => {
    const setup = await laneSetup("coalescedel");
    expect((await prompt(setup, "first")).status).toBe(200);
    await untilHeld(setup);
    // Settled on the held slot: its forward waits out the coalescing window when the deletion comes.
    expect((await prompt(setup, "second")).status).toBe(200);
    const expected = await sessionUsage(setup.key, setup.sessionPath);
    expect((await call(setup.sessionPath, { method: "DELETE", token: setup.key })).status).toBe(204);
    expect(await tenantUsage(setup.key)).toEqual(expected);
  });
});
