import { describe, expect, it } from "vitest";
import { call, newTenant } from "./helpers.ts";
import { expectError } from "./session-helpers.ts";

// Session metadata (spec/API.md "Session metadata and search"): on creation, as a JSON Merge Patch
// on PATCH, on the Session and in every listing row; bounded, and nothing is written when refused.

type Session = { id: string; metadata: Record<string, string> };
type Page = { items: { id: string; name: string | null; metadata: Record<string, string> }[]; nextCursor: string | null };

const sixteen = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, `v${i}`]));

async function listed(key: string, query = ""): Promise<Page["items"]> {
  const response = await call(`/v1/sessions${query}`, { token: key });
  expect(response.status).toBe(200);
  return (await response.json<Page>()).items;
}

describe("session metadata", () => {
  it("is created with the session, shown on it and in the listing; `{}` when none", async () => {
    const { key } = await newTenant("meta");
    const created = await call("/v1/sessions", { body: { id: "with", metadata: { user: "u_1", "plan.tier": "pro" } }, token: key });
    expect(created.status).toBe(201);
    expect((await created.json<Session>()).metadata).toEqual({ user: "u_1", "plan.tier": "pro" });
    expect((await call("/v1/sessions", { body: { id: "without" }, token: key })).status).toBe(201);
    expect((await (await call("/v1/sessions/with", { token: key })).json<Session>()).metadata).toEqual({ user: "u_1", "plan.tier": "pro" });
    expect((await (await call("/v1/sessions/without", { token: key })).json<Session>()).metadata).toEqual({});
    expect(await listed(key)).toEqual([
      { id: "with", name: null, createdAt: expect.any(Number), metadata: { user: "u_1", "plan.tier": "pro" } },
      { id: "without", name: null, createdAt: expect.any(Number), metadata: {} },
    ]);
  });

  it("PATCH merges (a string sets, null deletes, others stay) and the index follows before the answer", async () => {
    const { key } = await newTenant("metapatch");
    await call("/v1/sessions", { body: { id: "s", metadata: { a: "1", b: "2", c: "3" } }, token: key });
    const patched = await call("/v1/sessions/s", { method: "PATCH", body: { metadata: { a: "one", b: null, d: "4", absent: null } }, token: key });
    expect(patched.status).toBe(200);
    expect((await patched.json<Session>()).metadata).toEqual({ a: "one", c: "3", d: "4" });
    expect((await listed(key))[0]?.metadata).toEqual({ a: "one", c: "3", d: "4" });
    expect((await listed(key, "?metadata.b=2")).map((row) => row.id)).toEqual([]);
    expect((await listed(key, "?metadata.a=one")).map((row) => row.id)).toEqual(["s"]);
    expect((await listed(key, "?metadata.a=1")).map((row) => row.id)).toEqual([]);
    // Deleting every key leaves `{}`.
    const emptied = await call("/v1/sessions/s", { method: "PATCH", body: { metadata: { a: null, c: null, d: null } }, token: key });
    expect((await emptied.json<Session>()).metadata).toEqual({});
    expect((await listed(key))[0]?.metadata).toEqual({});
  });

  it("refuses a 17th key, long keys and values, bad key characters, non-string values (400/422), writing nothing", async () => {
    const { key } = await newTenant("metabounds");
    const refusals: [unknown, number, string][] = [
      [{ ...sixteen, k16: "x" }, 400, "ValidationFailed"],
      [{ ["k".repeat(65)]: "x" }, 400, "ValidationFailed"],
      [{ k: "v".repeat(513) }, 400, "ValidationFailed"],
      [{ "a b": "x" }, 400, "ValidationFailed"],
      [{ "a=b": "x" }, 400, "ValidationFailed"],
      [{ "": "x" }, 400, "ValidationFailed"],
      [{ k: 1 }, 400, "ValidationFailed"],
      [{ k: null }, 400, "ValidationFailed"],
      [["x"], 400, "ValidationFailed"],
      [JSON.parse('{"__proto__":"x"}'), 400, "ValidationFailed"],
      [{ constructor: "x" }, 400, "ValidationFailed"],
      ["text", 400, "ValidationFailed"],
    ];
    for (const [metadata, status, code] of refusals) {
      await expectError(await call("/v1/sessions", { body: { id: "refused", metadata }, token: key }), status, code);
    }
    await expectError(await call("/v1/sessions/refused", { token: key }), 404, "SessionNotFound");
    expect(await listed(key)).toEqual([]);
    // The bounds themselves are fine.
    const full = await call("/v1/sessions", { body: { id: "full", metadata: { ...sixteen, k0: "v".repeat(512) } }, token: key });
    expect(full.status).toBe(201);
    const longKey = await call("/v1/sessions", { body: { id: "longkey", metadata: { ["k".repeat(64)]: "" } }, token: key });
    expect(longKey.status).toBe(201);
  });

  it("a PATCH whose merge passes 16 keys is 422 LimitExceeded and writes nothing (neither the name nor the metadata)", async () => {
    const { key } = await newTenant("metamerge");
    await call("/v1/sessions", { body: { id: "s", name: "before", metadata: sixteen }, token: key });
    const over = await call("/v1/sessions/s", { method: "PATCH", body: { name: "after", metadata: { extra: "x" } }, token: key });
    expect(over.status).toBe(422);
    expect(await over.json()).toMatchObject({ error: { code: "LimitExceeded", details: { resource: "metadata", limit: 16 } } });
    const session = await (await call("/v1/sessions/s", { token: key })).json<Session & { name: string }>();
    expect({ name: session.name, metadata: session.metadata }).toEqual({ name: "before", metadata: sixteen });
    expect(await listed(key, "?metadata.extra=x")).toEqual([]);
    // Replacing a key while deleting another stays within the bound.
    const swapped = await call("/v1/sessions/s", { method: "PATCH", body: { metadata: { k0: null, extra: "x" } }, token: key });
    expect(swapped.status).toBe(200);
    expect((await listed(key, "?metadata.extra=x")).map((row) => row.id)).toEqual(["s"]);
    for (const metadata of [{ "bad key": "x" }, { k: "v".repeat(513) }, { k: 5 }, ["x"]]) {
      await expectError(await call("/v1/sessions/s", { method: "PATCH", body: { metadata }, token: key }), 400, "ValidationFailed");
    }
    expect((await (await call("/v1/sessions/s", { token: key })).json<Session>()).metadata).toEqual({ ...Object.fromEntries(Object.entries(sixteen).filter(([k]) => k !== "k0")), extra: "x" });
  });

  it("a replay of POST /v1/sessions with an Idempotency-Key answers the same session with its metadata, indexed once", async () => {
    const { key } = await newTenant("metaidem");
    const send = () => call("/v1/sessions", { body: { metadata: { user: "u_7" } }, token: key, headers: { "Idempotency-Key": "create-u7" } });
    const first = await send();
    expect(first.status).toBe(201);
    const second = await send();
    expect(second.status).toBe(201);
    const [a, b] = [await first.json<Session>(), await second.json<Session>()];
    expect(b).toEqual(a);
    expect(a.metadata).toEqual({ user: "u_7" });
    expect((await listed(key, "?metadata.user=u_7")).map((row) => row.id)).toEqual([a.id]);
  });

  it("a fork keeps the metadata (both scopes) and is found by it; deleting a session removes it from search", async () => {
    const { key } = await newTenant("metafork");
    await call("/v1/sessions", { body: { id: "src", metadata: { user: "u_9", team: "red" } }, token: key });
    expect((await call("/v1/sessions/src/lanes/main", { method: "PUT", token: key })).status).toBe(201);
    const tree = await call("/v1/sessions/src/fork", { body: { scope: "tree", id: "tree" }, token: key });
    expect(tree.status).toBe(201);
    expect((await tree.json<Session>()).metadata).toEqual({ user: "u_9", team: "red" });
    const branch = await call("/v1/sessions/src/fork", { body: { scope: "branch", branch: "main", id: "branch" }, token: key });
    expect(branch.status).toBe(201);
    expect((await branch.json<Session>()).metadata).toEqual({ user: "u_9", team: "red" });
    expect((await listed(key, "?metadata.user=u_9")).map((row) => row.id)).toEqual(["src", "tree", "branch"]);
    expect((await call("/v1/sessions/tree", { method: "DELETE", token: key })).status).toBe(204);
    expect((await listed(key, "?metadata.user=u_9&metadata.team=red")).map((row) => row.id)).toEqual(["src", "branch"]);
  });

  it("another tenant's search sees nothing of this tenant's sessions", async () => {
    const mine = await newTenant("metamine");
    const other = await newTenant("metaother");
    await call("/v1/sessions", { body: { id: "shared-id", metadata: { user: "u_1" } }, token: mine.key });
    expect(await listed(other.key, "?metadata.user=u_1")).toEqual([]);
    expect(await listed(other.key)).toEqual([]);
    await expectError(await call("/v1/sessions/shared-id", { method: "PATCH", body: { metadata: { user: "u_2" } }, token: other.key }), 404, "SessionNotFound");
    expect((await listed(mine.key, "?metadata.user=u_1")).map((row) => row.id)).toEqual(["shared-id"]);
  });
});
