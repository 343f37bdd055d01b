import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { call } from "./helpers.ts";
import { objectOf, scriptedLane, tenantWithSession, user, readTexts } from "./session-helpers.ts";

// A message entry is stored as `[message]`, its usage sparse and its timestamp as its distance from
// the commit time (QUALITY P3: ~110 bytes less per assistant message, kept forever). Every read
// answers byte-for-byte what was committed; rows an earlier build stored whole read the same.

const ZERO_COST = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
const assistant = (text: string, usage: object) => ({
  role: "assistant",
  content: [{ type: "text", text }],
  api: "scripted",
  provider: "scripted",
  model: "echo",
  usage,
  stopReason: "stop",
  timestamp: Date.now(),
});
const PRICED = { input: 120, output: 30, cacheRead: 0, cacheWrite: 7, reasoning: 4, totalTokens: 157, cost: { input: 0.5, output: 0, cacheRead: 0, cacheWrite: 0.25, total: 0.75, totalFromProvider: true } };
const UNPRICED = { input: 40, output: 9, cacheRead: 0, cacheWrite: 0, totalTokens: 49, cost: ZERO_COST };

type Message = { role: string; usage?: unknown };
type Entry = { id: string; type: string; message?: Message };

async function sessionWithMessages(prefix: string) {
  const target = await tenantWithSession(prefix);
  const { key, base, tenantId, sid } = target;
  await call(`${base}/branches`, { body: { name: "main", at: null }, token: key });
  const post = async (body: unknown) => {
    const response = await call(`${base}/branches/main/entries`, { body, token: key });
    expect(response.status).toBe(201);
    return (await response.json<{ entryId: string }>()).entryId;
  };
  const ids = [
    await post({ message: { ...user("one"), timestamp: Date.now() } }),
    await post({ message: assistant("priced", PRICED) }),
    await post({ message: assistant("unpriced", UNPRICED) }),
  ];
  // And a turn of the engine's own: the scripted model's answer carries a usage of its own.
  await scriptedLane(tenantId, sid, [{ text: "from the model" }]);
  const answered = await call(`${base}/lanes/main/prompt`, { body: { prompt: "hello" }, token: key });
  expect(answered.status).toBe(200);
  return { ...target, ids };
}

/** Every read that answers entries, as raw JSON text. */
async function reads(setup: Awaited<ReturnType<typeof sessionWithMessages>>, base = setup.base): Promise<string[]> {
  const paths = [`${base}/entries`, `${base}/entries?order=desc&limit=2`, `${base}/entries/${setup.ids[1]}`, `${base}/branches/main/entries`];
  return readTexts(paths, setup.key);
}

function storedPayloads(tenantId: string, sid: string): Promise<string[]> {
  return runInDurableObject(objectOf(tenantId, sid), (_instance: SessionObject, state) =>
    state.storage.sql
      .exec<{ payload: string }>("SELECT payload FROM entries WHERE type = 'message' AND payload LIKE '%\"role\":\"assistant\"%' ORDER BY seq")
      .toArray()
      .map((row) => row.payload),
  );
}

describe("message usage and timestamps at rest", () => {
  it("stores a message's usage sparse and answers it whole on every read", async () => {
    const setup = await sessionWithMessages("usage_sparse");
    const stored = await storedPayloads(setup.tenantId, setup.sid);
    expect(stored).toHaveLength(3);
    expect(stored[0]).toContain(`"usage":[{"input":120,"output":30,"cacheWrite":7,"totalTokens":157,"reasoning":4,"cost":{"input":0.5,"cacheWrite":0.25,"total":0.75,"totalFromProvider":true}}]`);
    expect(stored[1]).toContain(`"usage":[{"input":40,"output":9,"totalTokens":49}]`);
    for (const payload of stored) expect(payload).not.toContain("cacheRead");

    const entries = (await (await call(`${setup.base}/entries`, { token: setup.key })).json<{ items: Entry[] }>()).items;
    const usages = entries.filter((entry) => entry.message?.role === "assistant").map((entry) => entry.message?.usage);
    expect(usages.slice(0, 2)).toEqual([PRICED, UNPRICED]);
    // The engine's own answer: whole, with every key in place.
    expect(Object.keys(usages[2] ?? {})).toEqual(["input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"]);
    const one = await call(`${setup.base}/entries/${setup.ids[1]}`, { token: setup.key });
    expect(await one.text()).toContain(`"usage":${JSON.stringify(PRICED)}`);
  });

  it("rows stored whole (the earlier form) read exactly the same", async () => {
    const setup = await sessionWithMessages("usage_whole");
    const before = await reads(setup);
    await runInDurableObject(objectOf(setup.tenantId, setup.sid), (_instance: SessionObject, state) => {
      const rows = state.storage.sql.exec<{ seq: number; payload: string }>("SELECT seq, payload FROM entries WHERE type = 'message'").toArray();
      expect(rows).toHaveLength(5);
      for (const row of rows) {
        expect(row.payload).toContain(`"timestamp":[`);
        expect(row.payload.startsWith("[")).toBe(true);
        const whole = JSON.parse(before[0] ?? "").items.find((entry: { seq: number }) => entry.seq === row.seq).message;
        state.storage.sql.exec("UPDATE entries SET payload = ? WHERE seq = ?", JSON.stringify({ message: whole }), row.seq);
      }
      expect(state.storage.sql.exec("SELECT seq FROM entries WHERE payload LIKE '[%' OR payload LIKE '%\"usage\":[%' OR payload LIKE '%\"timestamp\":[%'").toArray()).toEqual([]);
    });
    expect(await reads(setup)).toEqual(before);
  });

  it("a fork copies the stored form and answers the same entries", async () => {
    const setup = await sessionWithMessages("usage_fork");
    const forked = await call(`/v1/sessions/${setup.sid}/fork`, { body: { scope: "tree" }, token: setup.key });
    expect(forked.status).toBe(201);
    const { id } = await forked.json<{ id: string }>();
    const ours = await reads(setup);
    const theirs = await reads(setup, `/v1/sessions/${id}`);
    expect(theirs).toEqual(ours);
    expect(await storedPayloads(setup.tenantId, id)).toEqual(await storedPayloads(setup.tenantId, setup.sid));
  });
});
