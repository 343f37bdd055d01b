import { describe, expect, it } from "vitest";
import { toWire } from "../../schema/wire.ts";
import { unwrap } from "../helpers/sessions.ts";
import { call, newTenant } from "./helpers.ts";
import { expectError, objectOf, scriptedLane, SLOW_STEP, tenantWithSession, user } from "./session-helpers.ts";

// Branches (spec/API.md "Branches"), through the real Hono app.

type Page = { items: { id: string; seq: number; type: string; customType?: string }[]; nextCursor: string | null };

async function appendAll(base: string, key: string, branch: string, bodies: unknown[]): Promise<string[]> {
  const ids: string[] = [];
  for (const body of bodies) {
    const response = await call(`${base}/branches/${branch}/entries`, { body, token: key });
    expect(response.status).toBe(201);
    ids.push((await response.json<{ entryId: string }>()).entryId);
  }
  return ids;
}

/** Follows nextCursor from `path` (bounded), collecting ids. */
async function pages(path: string, key: string): Promise<string[][]> {
  const out: string[][] = [];
  let next: string | null = path;
  while (next !== null && out.length < 20) {
    const response: Response = await call(next, { token: key });
    expect(response.status).toBe(200);
    const page: Page = await response.json();
    out.push(page.items.map((entry) => entry.id));
    next = page.nextCursor === null ? null : `${path}&cursor=${encodeURIComponent(page.nextCursor)}`;
  }
  return out;
}

describe("POST and GET /v1/sessions/{sid}/branches", () => {
  it("creates branches (201 { name, tipId }) and lists them with their lane flag", async () => {
    const { tenantId, sid, key, base } = await tenantWithSession("branches");
    const main = await call(`${base}/branches`, { body: { name: "main", at: null }, token: key });
    expect(main.status).toBe(201);
    expect(await main.json()).toEqual({ name: "main", tipId: null });
    const [first] = await appendAll(base, key, "main", [{ message: user("hi") }]);
    const side = await call(`${base}/branches`, { body: { name: "side.v2", at: first }, token: key });
    expect(side.status).toBe(201);
    expect(await side.json()).toEqual({ name: "side.v2", tipId: first });
    expect((await call(`${base}/branches`, { body: { name: "empty" }, token: key })).status).toBe(201);
    unwrap(await objectOf(tenantId, sid).acquireLane("worker", first));
    const listed = await call(`${base}/branches`, { token: key });
    expect(listed.status).toBe(200);
    expect((await listed.json<{ items: unknown[] }>()).items).toEqual([
      { name: "empty", tipId: null, lane: false },
      { name: "main", tipId: first, lane: false },
      { name: "side.v2", tipId: first, lane: false },
      { name: "worker", tipId: first, lane: true },
    ]);
  });

  it("refuses duplicates (409), unknown targets (404), malformed bodies (400), foreign sessions (404), bad keys (401)", async () => {
    const { key, base } = await tenantWithSession("branchesbad");
    expect((await call(`${base}/branches`, { body: { name: "main", at: null }, token: key })).status).toBe(201);
    await expectError(await call(`${base}/branches`, { body: { name: "main", at: null }, token: key }), 409, "BranchExists");
    await expectError(await call(`${base}/branches`, { body: { name: "x", at: "0190a000-0000-7000-8000-000000000000" }, token: key }), 404, "UnknownTarget");
    for (const body of [{}, { name: "" }, { name: "has space" }, { name: "a/b" }, { name: "x".repeat(129) }, { name: "ok", at: 5 }, { name: "ok", extra: true }]) {
      await expectError(await call(`${base}/branches`, { body, token: key }), 400, "ValidationFailed");
    }
    await expectError(await call(`${base}/branches`, { rawBody: "nope", token: key }), 400, "ValidationFailed");
    expect((await call(`${base}/branches`, { rawBody: JSON.stringify({ name: "x".repeat(2 * 1024 * 1024) }), token: key })).status).toBe(413);
    const other = await newTenant("branchesother");
    await expectError(await call(`${base}/branches`, { token: other.key }), 404, "SessionNotFound");
    await expectError(await call(`${base}/branches`, { body: { name: "theirs", at: null }, token: other.key }), 404, "SessionNotFound");
    await expectError(await call(`${base}/branches`), 401, "Unauthenticated");
    await expectError(await call(`${base}/branches`, { body: { name: "y", at: null }, token: "sk_x_y" }), 401, "Unauthenticated");
    expect(await (await call(`${base}/branches`, { token: key })).json()).toEqual({ items: [{ name: "main", tipId: null, lane: false }], nextCursor: null });
  });
});

describe("POST /v1/sessions/{sid}/branches/{name}/entries", () => {
  it("appends a message or a custom entry at the tip (201 { entryId, placed: true })", async () => {
    const { key, base } = await tenantWithSession("append");
    await call(`${base}/branches`, { body: { name: "main", at: null }, token: key });
    const message = await call(`${base}/branches/main/entries`, { body: { message: user("hello") }, token: key });
    expect(message.status).toBe(201);
    const { entryId, placed } = await message.json<{ entryId: string; placed: boolean }>();
    expect(placed).toBe(true);
    const custom = await call(`${base}/branches/main/entries`, { body: { customType: "note", data: { k: [1] } }, token: key });
    const second = (await custom.json<{ entryId: string }>()).entryId;
    expect(await (await call(`${base}/entries/${second}`, { token: key })).json()).toMatchObject({ parentId: entryId, type: "custom", data: { k: [1] } });
    expect(await (await call(`${base}/branches`, { token: key })).json()).toEqual({ items: [{ name: "main", tipId: second, lane: false }], nextCursor: null });
  });

  it("accepts Idempotency-Key: the same key and body replay the response with one effect", async () => {
    const { key, base } = await tenantWithSession("appendidem");
    const headers = { "idempotency-key": "append-1" };
    const created = await call(`${base}/branches`, { body: { name: "main", at: null }, token: key, headers: { "idempotency-key": "branch-1" } });
    const replayedBranch = await call(`${base}/branches`, { body: { name: "main", at: null }, token: key, headers: { "idempotency-key": "branch-1" } });
    expect([created.status, replayedBranch.status, replayedBranch.headers.get("idempotency-replayed")]).toEqual([201, 201, "true"]);
    const first = await call(`${base}/branches/main/entries`, { body: { customType: "once" }, token: key, headers });
    const second = await call(`${base}/branches/main/entries`, { body: { customType: "once" }, token: key, headers });
    expect([first.status, second.status, second.headers.get("idempotency-replayed")]).toEqual([201, 201, "true"]);
    expect(await second.json()).toEqual(await first.json());
    await expectError(await call(`${base}/branches/main/entries`, { body: { customType: "other" }, token: key, headers }), 422, "IdempotencyConflict");
    expect((await (await call(`${base}/entries`, { token: key })).json<Page>()).items).toHaveLength(1);
  });

  it("on a lane's branch it is the lane's append: queued while a run is busy (placed: false), placed after it", async () => {
    const { tenantId, sid, key, base } = await tenantWithSession("laneappend");
    const stub = await scriptedLane(tenantId, sid, [SLOW_STEP]);
    const idle = await call(`${base}/branches/main/entries`, { body: { customType: "before" }, token: key });
    expect(idle.status).toBe(201);
    expect(await idle.json()).toEqual({ entryId: expect.any(String), placed: true });
    const { operationId } = unwrap(await stub.acceptOperation("main", toWire({ kind: "prompt", prompt: "go" })));
    const busy = await call(`${base}/branches/main/entries`, { body: { customType: "during", data: 1 }, token: key });
    expect(busy.status).toBe(201);
    const queued = await busy.json<{ entryId: string; placed: boolean }>();
    expect(queued.placed).toBe(false);
    await expectError(await call(`${base}/entries/${queued.entryId}`, { token: key }), 404, "UnknownEntry");
    unwrap(await stub.abortOperation("main", operationId));
    expect(unwrap(await stub.operation("main", operationId, 10_000))).toMatchObject({ state: "settled" });
    // Once the lane is idle, the next append places the queued write first, then itself.
    const after = await call(`${base}/branches/main/entries`, { body: { customType: "after" }, token: key });
    const placedNow = await after.json<{ entryId: string; placed: boolean }>();
    expect(placedNow.placed).toBe(true);
    expect(await (await call(`${base}/entries/${queued.entryId}`, { token: key })).json()).toMatchObject({ type: "custom", customType: "during", data: 1 });
    const newest = await (await call(`${base}/branches/main/entries?type=custom&limit=2`, { token: key })).json<Page>();
    expect(newest.items.map((entry) => entry.id)).toEqual([placedNow.entryId, queued.entryId]);
  });

  it("refuses malformed entries (400), invalid messages (422), unknown branches (404), foreign sessions (404), bad keys (401)", async () => {
    const { key, base } = await tenantWithSession("appendbad");
    await call(`${base}/branches`, { body: { name: "main", at: null }, token: key });
    const path = `${base}/branches/main/entries`;
    const pending = { role: "assistant", content: [], api: "x", provider: "x", model: "x", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "pending", timestamp: 1 };
    for (const body of [{}, { message: { role: "robot", content: "x", timestamp: 1 } }, { message: { role: "user" } }, { customType: "" }, { customType: "a", message: user("x") }, { customType: "a", data: 1, extra: 2 }, "text"]) {
      await expectError(await call(path, { body, token: key }), 400, "ValidationFailed");
    }
    await expectError(await call(path, { rawBody: "{", token: key }), 400, "ValidationFailed");
    expect((await call(path, { rawBody: JSON.stringify({ customType: "big", data: "x".repeat(2 * 1024 * 1024) }), token: key })).status).toBe(413);
    await expectError(await call(path, { body: { message: pending }, token: key }), 422, "InvalidMessage");
    await expectError(await call(`${base}/branches/nope/entries`, { body: { customType: "a" }, token: key }), 404, "UnknownBranch");
    await expectError(await call(`${base}/branches/bad%20name/entries`, { body: { customType: "a" }, token: key }), 400, "ValidationFailed");
    const other = await newTenant("appendother");
    await expectError(await call(path, { body: { customType: "a" }, token: other.key }), 404, "SessionNotFound");
    await expectError(await call(path, { body: { customType: "a" } }), 401, "Unauthenticated");
    await expectError(await call(path, { body: { customType: "a" }, token: "nope" }), 401, "Unauthenticated");
    expect(await (await call(`${base}/branches`, { token: key })).json()).toEqual({ items: [{ name: "main", tipId: null, lane: false }], nextCursor: null });
  });
});

describe("GET /v1/sessions/{sid}/branches/{name}/entries", () => {
  it("scans the branch path newest first or oldest first, filtered and stopped, a page at a time", async () => {
    const { key, base } = await tenantWithSession("scan");
    await call(`${base}/branches`, { body: { name: "main", at: null }, token: key });
    const [a, b, c] = await appendAll(base, key, "main", [{ message: user("a") }, { customType: "mark" }, { message: user("c") }]);
    if (!a || !b || !c) throw new Error("appends failed");
    await call(`${base}/branches`, { body: { name: "fork", at: b }, token: key });
    const [f] = await appendAll(base, key, "fork", [{ message: user("f") }]);
    const [d, e] = await appendAll(base, key, "main", [{ customType: "mark" }, { message: user("e") }]);
    const scan = (query: string) => pages(`${base}/branches/main/entries?${query}`, key);
    expect(await scan("limit=50")).toEqual([[e, d, c, b, a]]);
    expect(await scan("limit=2")).toEqual([[e, d], [c, b], [a]]);
    expect(await scan("order=asc&limit=2")).toEqual([[a, b], [c, d], [e]]);
    expect(await scan("type=custom&limit=1")).toEqual([[d], [b]]);
    expect(await scan("customType=mark&order=asc&limit=10")).toEqual([[b, d]]);
    expect(await scan("stopAtId=" + c + "&limit=10")).toEqual([[e, d, c]]);
    expect(await scan("stopAtType=custom&limit=10")).toEqual([[e, d]]);
    expect(await scan("stopAtType=custom&order=asc&limit=10")).toEqual([[a, b]]);
    expect(await scan(`start=${c}&limit=2`)).toEqual([[c, b], [a]]);
    expect(await pages(`${base}/branches/fork/entries?order=asc&limit=2`, key)).toEqual([[a, b], [f]]);
    // One list-order vocabulary (asc|desc, as on every listing); the scan's older words stay aliases.
    expect(await scan("order=desc&limit=2")).toEqual(await scan("limit=2"));
    expect(await scan("order=oldestFirst&limit=2")).toEqual(await scan("order=asc&limit=2"));
    expect(await scan("order=newestFirst&limit=2")).toEqual(await scan("order=desc&limit=2"));
    expect((await call(`${base}/branches/main/entries?order=ascending`, { token: key })).status).toBe(400);
    const page = await (await call(`${base}/branches/main/entries`, { token: key })).json<Page>();
    expect(page.items).toHaveLength(5);
  });

  it("refuses bad queries (400), unknown branches (404), foreign sessions (404), bad keys (401)", async () => {
    const { key, base } = await tenantWithSession("scanbad");
    await call(`${base}/branches`, { body: { name: "main", at: null }, token: key });
    expect(await (await call(`${base}/branches/main/entries`, { token: key })).json()).toEqual({ items: [], nextCursor: null });
    for (const query of ["limit=0", "limit=1001", "order=ascending", "type=nope", "stopAtType=x", "start=bad:id", "cursor=zzz", "stopAtId="]) {
      await expectError(await call(`${base}/branches/main/entries?${query}`, { token: key }), 400, "ValidationFailed");
    }
    await expectError(await call(`${base}/branches/nope/entries`, { token: key }), 404, "UnknownBranch");
    const other = await newTenant("scanother");
    await expectError(await call(`${base}/branches/main/entries`, { token: other.key }), 404, "SessionNotFound");
    await expectError(await call(`${base}/branches/main/entries`), 401, "Unauthenticated");
    await expectError(await call(`${base}/branches/main/entries`, { token: "sk_nobody_x" }), 401, "Unauthenticated");
  });
});
