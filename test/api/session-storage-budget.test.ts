import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { STORAGE_BUDGET_BYTES } from "../../durable-objects/sql/storage-budget.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { objectOf } from "./session-helpers.ts";

// A session's entries, values and list items have no count bound: its object's storage is the
// bound. The platform refuses every write past 10 GB, and a commit that fails so faults the session
// for good. So past a storage budget a client's write that grows the session (an entry, a value, a
// list item, a run, a queued input, a lane, a branch, a label, a tool or a resource) is 422
// LimitExceeded (`details.resource: "sessionStorage"`) and writes nothing; reads, deletions and
// the export go on. A full 8 GiB cannot be written in a test: the object's reported size is raised.

type Setup = Awaited<ReturnType<typeof laneSetup>>;

async function fill(setup: Setup, full: boolean): Promise<void> {
  await runInDurableObject(objectOf(setup.tenantId, setup.sid), (_instance: object, state) => {
    if (full) Reflect.defineProperty(state.storage.sql, "databaseSize", { configurable: true, get: () => STORAGE_BUDGET_BYTES + 1 });
    else Reflect.deleteProperty(state.storage.sql, "databaseSize");
  });
}

async function refused(response: Response): Promise<void> {
  const text = await response.text();
  expect(response.status, text.slice(0, 300)).toBe(422);
  expect(JSON.parse(text)).toMatchObject({ error: { code: "LimitExceeded", details: { resource: "sessionStorage" } } });
}

describe("a session object at its storage budget", () => {
  it("refuses what grows it, 422 and nothing written; reads, deletions and the export go on; with room again, all work", async () => {
    const setup = await laneSetup("ssbudget");
    const { key, sessionPath, lanePath } = setup;
    expect((await call(`${sessionPath}/values/app/kept`, { method: "PUT", body: 1, token: key })).status).toBe(200);
    await fill(setup, true);
    try {
      await refused(await call(`${lanePath}/entries`, { body: { message: { role: "user", content: "more" } }, token: key }));
      await refused(await call(`${sessionPath}/values/app/more`, { method: "PUT", body: 2, token: key }));
      await refused(await call(`${sessionPath}/lists/app/items`, { body: 3, token: key }));
      await refused(await call(`${lanePath}/prompt`, { body: { prompt: "hello" }, token: key }));
      await refused(await call(`${lanePath}/queue`, { body: { kind: "nextRun", message: "later" }, token: key }));
      await refused(await call(`${sessionPath}/lanes/second`, { method: "PUT", token: key }));
      await refused(await call(`${sessionPath}/skills/s1`, { method: "PUT", body: { content: "x" }, token: key }));
      // Reads and deletions go on.
      expect((await call(`${sessionPath}/values/app/more`, { token: key })).status).toBe(404);
      expect((await call(`${sessionPath}/values/app/kept`, { token: key })).status).toBe(200);
      expect((await call(`${sessionPath}/values/app/kept`, { method: "DELETE", token: key })).status).toBe(204);
      expect((await call(`${sessionPath}/export`, { token: key })).status).toBe(200);
      const entries = await (await call(`${sessionPath}/branches/main/entries`, { token: key })).json<{ items: unknown[] }>();
      expect(entries.items).toEqual([]);
    } finally {
      await fill(setup, false);
    }
    expect((await call(`${sessionPath}/values/app/more`, { method: "PUT", body: 2, token: key })).status).toBe(200);
    const prompt = await call(`${lanePath}/prompt`, { body: { prompt: "hello" }, token: key });
    expect(prompt.status).toBe(200);
  });
});

// POST …/compact and POST …/navigate are the other road to a compaction or a navigation: they were
// not checked against the budget, and wrote their compaction entry (or branch summary and label).
async function twoTurns(prefix: string): Promise<Setup & { firstTurn: string }> {
  const setup = await laneSetup(prefix);
  const settings = { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } };
  expect((await call(`/v1/sessions/${setup.sid}`, { method: "PATCH", body: { settings }, token: setup.key })).status).toBe(200);
  const first = await (await call(`${setup.lanePath}/prompt`, { body: { prompt: "one" }, token: setup.key })).json<{ tipId: string }>();
  expect((await call(`${setup.lanePath}/prompt`, { body: { prompt: "two" }, token: setup.key })).status).toBe(200);
  return { ...setup, firstTurn: first.tipId };
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
