import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { STORAGE_BUDGET_BYTES } from "../../durable-objects/sql/storage-budget.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { objectOf } from "./session-helpers.ts";

// docs/api-sessions.md "Limits per session": past the storage budget a write that grows the
// session is 422 LimitExceeded (`sessionStorage`) and writes nothing. POST …/operations refused a
// compaction or a navigation so, but the conveniences POST …/compact and POST …/navigate, the
// other road to the same operations, wrote their compaction entry (or branch summary and label)
// anyway. (As session-storage-budget.test.ts does, the object's reported size is raised: 8 GiB
// cannot be written in a test.)

type Setup = Awaited<ReturnType<typeof laneSetup>>;

async function fill(setup: Setup, full: boolean): Promise<void> {
  await runInDurableObject(objectOf(setup.tenantId, setup.sid), (_instance: object, state) => {
    if (full) Reflect.defineProperty(state.storage.sql, "databaseSize", { configurable: true, get: () => STORAGE_BUDGET_BYTES + 1 });
    else Reflect.deleteProperty(state.storage.sql, "databaseSize");
  });
}

async function twoTurns(prefix: string): Promise<Setup & { firstTurn: string }> {
  const setup = await laneSetup(prefix);
  const settings = { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } };
  expect((await call(`/v1/sessions/${setup.sid}`, { method: "PATCH", body: { settings }, token: setup.key })).status).toBe(200);
  const first = await (await call(`${setup.lanePath}/prompt`, { body: { prompt: "one" }, token: setup.key })).json<{ tipId: string }>();
  expect((await call(`${setup.lanePath}/prompt`, { body: { prompt: "two" }, token: setup.key })).status).toBe(200);
  return { ...setup, firstTurn: first.tipId };
}

async function refused(response: Response): Promise<void> {
  const text = await response.text();
  expect(response.status, text.slice(0, 300)).toBe(422);
  expect(JSON.parse(text)).toMatchObject({ error: { code: "LimitExceeded", details: { resource: "sessionStorage" } } });
}

describe("the structural conveniences on a session past its storage budget", () => {
  it("the primitive refuses a compaction 422; POST …/compact must too, writing no compaction entry", async () => {
    const setup = await twoTurns("rvsb_c");
    await fill(setup, true);
    try {
      await refused(await call(`${setup.lanePath}/operations`, { body: { kind: "compaction" }, token: setup.key }));
      await refused(await call(`${setup.lanePath}/compact`, { body: {}, token: setup.key }));
    } finally {
      await fill(setup, false);
    }
    const entries = await (await call(`${setup.sessionPath}/entries?type=compaction`, { token: setup.key })).json<{ items: unknown[] }>();
    expect(entries.items).toEqual([]);
  });

  it("POST …/navigate with a summary is refused 422 like the primitive, writing no branch summary", async () => {
    const setup = await twoTurns("rvsb_n");
    await fill(setup, true);
    try {
      await refused(await call(`${setup.lanePath}/operations`, { body: { kind: "navigation", targetId: setup.firstTurn, summarize: true }, token: setup.key }));
      await refused(await call(`${setup.lanePath}/navigate`, { body: { targetId: setup.firstTurn, summarize: true, label: "back here" }, token: setup.key }));
    } finally {
      await fill(setup, false);
    }
    const entries = await (await call(`${setup.sessionPath}/entries?type=branch_summary`, { token: setup.key })).json<{ items: unknown[] }>();
    expect(entries.items).toEqual([]);
  });
});
