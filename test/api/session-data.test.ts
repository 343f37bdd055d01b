import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { toWire } from "../../schema/wire.ts";
import { unwrap } from "../helpers/sessions.ts";
import { call, newTenant } from "./helpers.ts";
import { expectError, objectOf, scriptedLane, tenantWithSession, user } from "./session-helpers.ts";

// Entries, labels and usage of a session (spec/API.md "Sessions"), through the real Hono app.

type Page<T> = { items: T[]; nextCursor: string | null };
type EntryBody = { id: string; seq: number; type: string; customType?: string };

/** A session with branches main (m1, n1, m2) and side (s1), appended through the API. */
async function sessionWithEntries(prefix: string) {
  const target = await tenantWithSession(prefix);
  const { key, base } = target;
  const post = async (branch: string, body: unknown) => {
    const response = await call(`${base}/branches/${branch}/entries`, { body, token: key });
    expect(response.status).toBe(201);
    return (await response.json<{ entryId: string }>()).entryId;
  };
  await call(`${base}/branches`, { body: { name: "main", at: null }, token: key });
  const m1 = await post("main", { message: user("one") });
  const n1 = await post("main", { customType: "note", data: { n: 1 } });
  await call(`${base}/branches`, { body: { name: "side", at: m1 }, token: key });
  const s1 = await post("side", { customType: "tick" });
  const m2 = await post("main", { message: user("two") });
  return { ...target, ids: { m1, n1, s1, m2 } };
}

async function collect(first: string, key: string): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let path: string | null = first;
  let pages = 0;
  while (path !== null && pages < 20) {
    const response: Response = await call(path, { token: key });
    expect(response.status).toBe(200);
    const page: Page<EntryBody> = await response.json();
    ids.push(...page.items.map((entry) => entry.id));
    pages++;
    path = page.nextCursor === null ? null : `${first}${first.includes("?") ? "&" : "?"}cursor=${encodeURIComponent(page.nextCursor)}`;
  }
  return { ids, pages };
}

describe("GET /v1/sessions/{sid}/entries", () => {
  it("lists every entry of the session by seq, filtered, in either order, a page at a time", async () => {
    const { key, base, ids } = await sessionWithEntries("inventory");
    const all = await (await call(`${base}/entries`, { token: key })).json<Page<EntryBody>>();
    expect(all.items.map((e) => e.id)).toEqual([ids.m1, ids.n1, ids.s1, ids.m2]);
    expect(all.nextCursor).toBeNull();
    const messages = await (await call(`${base}/entries?type=message&order=desc`, { token: key })).json<Page<EntryBody>>();
    expect(messages.items.map((e) => e.id)).toEqual([ids.m2, ids.m1]);
    const ticks = await (await call(`${base}/entries?customType=tick`, { token: key })).json<Page<EntryBody>>();
    expect(ticks.items.map((e) => e.id)).toEqual([ids.s1]);
    expect(await collect(`${base}/entries?limit=1`, key)).toEqual({ ids: [ids.m1, ids.n1, ids.s1, ids.m2], pages: 4 });
    expect(await collect(`${base}/entries?limit=3&order=desc`, key)).toEqual({ ids: [ids.m2, ids.s1, ids.n1, ids.m1], pages: 2 });
  });

  it("refuses bad queries (400), foreign sessions (404) and bad keys (401)", async () => {
    const { key, base } = await tenantWithSession("inventorybad");
    const other = await newTenant("inventoryother");
    for (const query of ["limit=0", "limit=1001", "limit=abc", "order=sideways", "type=bogus", "cursor=garbage", "cursor=%%%", "customType="]) {
      await expectError(await call(`${base}/entries?${query}`, { token: key }), 400, "ValidationFailed");
    }
    expect((await call(`${base}/entries?limit=1000`, { token: key })).status).toBe(200);
    await expectError(await call(`${base}/entries`, { token: other.key }), 404, "SessionNotFound");
    await expectError(await call(`${base}/entries`), 401, "Unauthenticated");
    await expectError(await call(`${base}/entries`, { token: `${key}x` }), 401, "Unauthenticated");
  });
});

describe("GET /v1/sessions/{sid}/entries/{entryId} and its label", () => {
  it("answers one entry; unknown ids are 404 UnknownEntry", async () => {
    const { key, base, ids } = await sessionWithEntries("entry");
    const entry = await call(`${base}/entries/${ids.n1}`, { token: key });
    expect(entry.status).toBe(200);
    expect(await entry.json()).toMatchObject({ id: ids.n1, parentId: ids.m1, type: "custom", customType: "note", data: { n: 1 } });
    await expectError(await call(`${base}/entries/0190a000-0000-7000-8000-000000000000`, { token: key }), 404, "UnknownEntry");
    await expectError(await call(`${base}/entries/bad:id`, { token: key }), 400, "ValidationFailed");
    const other = await newTenant("entryother");
    await expectError(await call(`${base}/entries/${ids.n1}`, { token: other.key }), 404, "SessionNotFound");
    await expectError(await call(`${base}/entries/${ids.n1}`), 401, "Unauthenticated");
  });

  it("sets, replaces and removes a label", async () => {
    const { tenantId, sid, key, base, ids } = await sessionWithEntries("label");
    const labelOf = () => runInDurableObject(objectOf(tenantId, sid), (instance: SessionObject) => instance.session().getLabel(ids.m2) ?? null);
    const set = await call(`${base}/entries/${ids.m2}/label`, { method: "PUT", body: { label: "checkpoint" }, token: key });
    expect(set.status).toBe(200);
    expect(await set.json()).toEqual({ entryId: ids.m2, label: "checkpoint" });
    expect(await labelOf()).toBe("checkpoint");
    await call(`${base}/entries/${ids.m2}/label`, { method: "PUT", body: { label: "second" }, token: key });
    expect(await labelOf()).toBe("second");
    const removed = await call(`${base}/entries/${ids.m2}/label`, { method: "DELETE", token: key });
    expect(removed.status).toBe(204);
    expect(await labelOf()).toBeNull();
    expect((await call(`${base}/entries/${ids.m2}/label`, { method: "DELETE", token: key })).status).toBe(204);
  });

  it("refuses bad labels (400), unknown entries (404), foreign sessions (404) and bad keys (401)", async () => {
    const { key, base, ids } = await sessionWithEntries("labelbad");
    const path = `${base}/entries/${ids.m1}/label`;
    for (const body of [{}, { label: "" }, { label: 5 }, { label: "x".repeat(1001) }, { label: "a", extra: 1 }]) {
      await expectError(await call(path, { method: "PUT", body, token: key }), 400, "ValidationFailed");
    }
    await expectError(await call(path, { method: "PUT", rawBody: "{", token: key }), 400, "ValidationFailed");
    expect((await call(path, { method: "PUT", rawBody: JSON.stringify({ label: "x".repeat(2 * 1024 * 1024) }), token: key })).status).toBe(413);
    await expectError(await call(`${base}/entries/0190a000-0000-7000-8000-000000000000/label`, { method: "PUT", body: { label: "x" }, token: key }), 404, "UnknownEntry");
    const other = await newTenant("labelother");
    await expectError(await call(path, { method: "PUT", body: { label: "x" }, token: other.key }), 404, "SessionNotFound");
    await expectError(await call(path, { method: "DELETE", token: other.key }), 404, "SessionNotFound");
    await expectError(await call(path, { method: "PUT", body: { label: "x" } }), 401, "Unauthenticated");
    await expectError(await call(path, { method: "DELETE", token: "nope" }), 401, "Unauthenticated");
  });
});

describe("GET /v1/sessions/{sid}/usage", () => {
  it("answers the ledger rows from a seq and the session totals", async () => {
    const { tenantId, key, sid, base } = await tenantWithSession("usage");
    expect(await (await call(`${base}/usage`, { token: key })).json()).toMatchObject({ rows: [], totals: { input: 0, output: 0, totalTokens: 0 }, nextFromSeq: null });
    const stub = await scriptedLane(tenantId, sid, [
      { text: "first", usage: { input: 10, output: 2, totalTokens: 12 } },
      { text: "second", usage: { input: 20, output: 3, totalTokens: 23 } },
    ]);
    for (const prompt of ["a", "b"]) {
      const { operationId } = unwrap(await stub.acceptOperation("main", toWire({ kind: "prompt", prompt })));
      expect(unwrap(await stub.operation("main", operationId, 10_000))).toMatchObject({ state: "settled" });
    }
    type UsageBody = { rows: { seq: number; usage: { input: number } }[]; totals: { input: number; totalTokens: number }; nextFromSeq: number | null };
    const all = await (await call(`${base}/usage`, { token: key })).json<UsageBody>();
    expect(all.rows.map((row) => row.usage.input)).toEqual([10, 20]);
    expect(all.totals).toMatchObject({ input: 30, totalTokens: 35 });
    const first = await (await call(`${base}/usage?limit=1`, { token: key })).json<UsageBody>();
    expect(first.rows.map((row) => row.usage.input)).toEqual([10]);
    expect(first.nextFromSeq).toEqual(expect.any(Number));
    const second = await (await call(`${base}/usage?limit=1&fromSeq=${first.nextFromSeq}`, { token: key })).json<UsageBody>();
    expect(second.rows.map((row) => row.usage.input)).toEqual([20]);
    expect(second.nextFromSeq).toBeNull();
    expect(second.totals).toMatchObject({ input: 30 });
  });

  it("refuses bad queries (400), foreign sessions (404) and bad keys (401)", async () => {
    const { key, base } = await tenantWithSession("usagebad");
    for (const query of ["fromSeq=-1", "fromSeq=x", "limit=0", "limit=5000"]) {
      await expectError(await call(`${base}/usage?${query}`, { token: key }), 400, "ValidationFailed");
    }
    const other = await newTenant("usageother");
    await expectError(await call(`${base}/usage`, { token: other.key }), 404, "SessionNotFound");
    await expectError(await call(`${base}/usage`), 401, "Unauthenticated");
  });
});
