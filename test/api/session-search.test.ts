import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { SEARCH_SCAN_ROWS } from "../../durable-objects/tenant/session-search.ts";
import { openOperationsOf, seedSessionIndex } from "../helpers/session-index-seed.ts";
import { call, newTenant } from "./helpers.ts";
import { objectOf, scriptedLane, SLOW_STEP } from "./session-helpers.ts";

// `GET /v1/sessions` with filters (spec/API.md "Session metadata and search"), answered from the
// tenant's index only. The index of one tenant is seeded with 2,500 rows (tenant-listings.ts's own
// registration, no session objects behind them) so that searches cross the per-page scan bound;
// every query is paged to its end in both orders and compared with the same filter applied to the
// seeded rows in memory.

type Row = { id: string; name: string | null; createdAt: number; metadata: Record<string, string> };
type Page = { items: Row[]; nextCursor: string | null };

const COUNT = 2_500;
const BASE = 1_700_000_000_000;
const seeded: Row[] = Array.from({ length: COUNT }, (_, i) => ({
  id: `s${String(i).padStart(5, "0")}`,
  name: i % 10 === 0 ? `n${i}` : null,
  // Three sessions per millisecond: the order's ties are broken by id.
  createdAt: BASE + Math.floor(i / 3),
  metadata: { user: `u${i % 7}`, plan: i % 2 ? "pro" : "free", ...(i % 499 === 0 && { rare: "yes" }) },
}));
const active = new Set(seeded.filter((_, i) => i % 250 === 3).map((row) => row.id));

let key: string;

beforeAll(async () => {
  const tenant = await newTenant("search");
  key = tenant.key;
  await seedSessionIndex(tenant.tenantId, COUNT, (i) => seeded[i] ?? { id: "", name: null, createdAt: 0, metadata: {} });
  await openOperationsOf(tenant.tenantId, [...active]);
}, 60_000);

/** Every page of `query` in `order`; pages are at most `limit`, ids never repeat. */
async function pageAll(query: string, order: "asc" | "desc", limit: number): Promise<{ ids: string[]; shortPages: number; rows: Row[] }> {
  const rows: Row[] = [];
  let cursor: string | null = null;
  let shortPages = 0;
  for (let pages = 0; pages < 10_000; pages++) {
    const response = await call(`/v1/sessions?${query}&order=${order}&limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`, { token: key });
    expect(response.status, query).toBe(200);
    const page: Page = await response.json();
    expect(page.items.length).toBeLessThanOrEqual(limit);
    if (page.items.length < limit && page.nextCursor !== null) shortPages++;
    rows.push(...page.items);
    cursor = page.nextCursor;
    if (cursor === null) break;
  }
  const ids = rows.map((row) => row.id);
  expect(new Set(ids).size).toBe(ids.length);
  return { ids, shortPages, rows };
}

type Filter = { metadata?: Record<string, string>; status?: "idle" | "active"; after?: number; before?: number };

function expected(filter: Filter, order: "asc" | "desc"): string[] {
  const ids = seeded
    .filter((row) => Object.entries(filter.metadata ?? {}).every(([k, value]) => row.metadata[k] === value))
    .filter((row) => filter.status === undefined || active.has(row.id) === (filter.status === "active"))
    .filter((row) => (filter.after === undefined || row.createdAt > filter.after) && (filter.before === undefined || row.createdAt < filter.before))
    .map((row) => row.id);
  return order === "asc" ? ids : ids.reverse();
}

function queryOf(filter: Filter): string {
  const parts = Object.entries(filter.metadata ?? {}).map(([k, value]) => `metadata.${k}=${encodeURIComponent(value)}`);
  if (filter.status) parts.push(`status=${filter.status}`);
  if (filter.after !== undefined) parts.push(`createdAfter=${filter.after}`);
  if (filter.before !== undefined) parts.push(`createdBefore=${filter.before}`);
  return parts.join("&");
}

const CASES: { filter: Filter; limit: number; short?: true }[] = [
  { filter: {}, limit: 400 },
  { filter: { metadata: { user: "u3" } }, limit: 50 },
  { filter: { metadata: { user: "u3", plan: "pro" } }, limit: 40 },
  // Served by `plan` (1,250 rows), matched by `rare` on 3 of them: pages come back short.
  { filter: { metadata: { plan: "pro", rare: "yes" } }, limit: 5, short: true },
  // Served by the creation time (2,500 rows), matched by status on 10 of them.
  { filter: { status: "active" }, limit: 5, short: true },
  { filter: { status: "idle", metadata: { user: "u1" } }, limit: 100 },
  { filter: { metadata: { user: "u4", plan: "free" }, status: "active" }, limit: 1 },
  { filter: { metadata: { user: "u2" }, after: BASE + 100, before: BASE + 400 }, limit: 9 },
  { filter: { after: BASE + 10, before: BASE + 13 }, limit: 2 },
  { filter: { after: BASE + 700, status: "idle" }, limit: 500 },
  { filter: { metadata: { user: "nobody" } }, limit: 5 },
  { filter: { metadata: { rare: "yes" }, before: BASE }, limit: 5 },
];

describe("GET /v1/sessions filters", () => {
  for (const { filter, limit, short } of CASES) {
    for (const order of ["asc", "desc"] as const) {
      it(`${queryOf(filter) || "(no filter)"} order=${order} limit=${limit}: exactly the matches, paged to the end`, async () => {
        const { ids, shortPages, rows } = await pageAll(queryOf(filter), order, limit);
        expect(ids).toEqual(expected(filter, order));
        if (short) expect(shortPages).toBeGreaterThan(0);
        for (const row of rows.slice(0, 3)) expect(row).toEqual(seeded.find((seed) => seed.id === row.id));
      }, 60_000);
    }
  }

  it(`reads at most ${SEARCH_SCAN_ROWS} index rows a page: a page of a rare match ends short, with a cursor`, async () => {
    const response = await call("/v1/sessions?metadata.plan=pro&metadata.rare=yes&limit=10", { token: key });
    const page: Page = await response.json();
    // The page reads the first 1,000 pro rows (i = 1 … 1999), which hold two of the three rare
    // ones: the third (i = 2495) is left to the next page, though the limit would fit it.
    expect(page.items.map((row) => row.id)).toEqual(["s00499", "s01497"]);
    expect(page.nextCursor).not.toBeNull();
  });

  it("refuses bad filter values (400 ValidationFailed naming the parameter); unknown parameters stay ignored", async () => {
    const bad: [string, string][] = [
      ["metadata.bad%20key=x", "metadata.bad key"],
      ["metadata.=x", "metadata."],
      [`metadata.k=${"v".repeat(513)}`, "metadata.k"],
      ["metadata.a=1&metadata.a=2", "metadata.a"],
      [Array.from({ length: 17 }, (_, i) => `metadata.k${i}=v`).join("&"), "query"],
      ["status=busy", "status"],
      ["status=", "status"],
      ["createdAfter=abc", "createdAfter"],
      ["createdAfter=-1", "createdAfter"],
      ["createdBefore=1.5", "createdBefore"],
      ["createdBefore=1e3", "createdBefore"],
      ["agent=sup%20port", "agent"],
      ["agent=support@0", "agent"],
      ["cursor=garbage", "cursor"],
    ];
    for (const [query, where] of bad) {
      const response = await call(`/v1/sessions?${query}`, { token: key });
      expect(response.status, query).toBe(400);
      const body = await response.json<{ error: { code: string; message: string } }>();
      expect(body.error.code, query).toBe("ValidationFailed");
      expect(body.error.message.startsWith(`${where}: `), `${query} → ${body.error.message}`).toBe(true);
    }
    const ignored = await call("/v1/sessions?foo=bar&limit=1", { token: key });
    expect(ignored.status).toBe(200);
    expect((await ignored.json<Page>()).items.map((row) => row.id)).toEqual(["s00000"]);
  });
});

const SESSION_PROTOTYPE_CALLS = "searchTestCalls";

/**
 * A running session's own calls of its methods (its alarm, the harness asking how often to send
 * live updates): not calls from a request.
 */
const OWN_WORK = new Set(["alarm", "liveUpdateIntervalMs"]);

/**
 * Counts every call of a SessionObject method from now on, on any instance, but the object's own
 * work (OWN_WORK): RPC dispatches only prototype methods, so wrappers on the class's prototype see
 * every call; `stop` restores it.
 */
async function countSessionObjectCalls(anySession: ReturnType<typeof objectOf>): Promise<{ stop: () => Promise<string[]> }> {
  await runInDurableObject(anySession, (instance: SessionObject) => {
    const prototype: object = Object.getPrototypeOf(instance);
    const calls: string[] = [];
    const restore: (() => void)[] = [];
    for (const name of Object.getOwnPropertyNames(prototype)) {
      const own = Object.getOwnPropertyDescriptor(prototype, name);
      if (name === "constructor" || OWN_WORK.has(name) || !own || typeof own.value !== "function") continue;
      const original: unknown = own.value;
      Reflect.set(prototype, name, function counted(this: unknown, ...args: unknown[]) {
        calls.push(name);
        return Reflect.apply(original as (...a: unknown[]) => unknown, this, args);
      });
      restore.push(() => Object.defineProperty(prototype, name, own));
    }
    Reflect.set(globalThis, SESSION_PROTOTYPE_CALLS, { calls, restore });
  });
  return {
    stop: () =>
      runInDurableObject(anySession, () => {
        const recorded: { calls: string[]; restore: (() => void)[] } = Reflect.get(globalThis, SESSION_PROTOTYPE_CALLS);
        recorded.restore.forEach((undo) => undo());
        return [...recorded.calls];
      }),
  };
}

describe("status from the open-operation ledger, with no session object woken", () => {
  it("a session is active while its run is open and idle once it settled; searches call no session object", async () => {
    const tenant = await newTenant("searchstatus");
    for (const id of ["busy", "calm"]) {
      expect((await call("/v1/sessions", { body: { id, metadata: { team: "a" } }, token: tenant.key })).status).toBe(201);
    }
    await scriptedLane(tenant.tenantId, "busy", [SLOW_STEP]);
    const accepted = await call("/v1/sessions/busy/lanes/main/operations", { body: { kind: "prompt", prompt: "go" }, token: tenant.key });
    expect(accepted.status).toBe(202);
    const { operationId } = await accepted.json<{ operationId: string }>();
    const ids = async (query: string): Promise<string[]> =>
      (await (await call(`/v1/sessions?${query}`, { token: tenant.key })).json<Page>()).items.map((row) => row.id);

    const counter = await countSessionObjectCalls(objectOf(tenant.tenantId, "calm"));
    const seen = {
      active: await ids("status=active"),
      idle: await ids("status=idle"),
      team: await ids("metadata.team=a&status=active&order=desc"),
      all: await ids("metadata.team=a"),
    };
    const calls = await counter.stop();
    expect(seen).toEqual({ active: ["busy"], idle: ["calm"], team: ["busy"], all: ["busy", "calm"] });
    expect(calls).toEqual([]);
    // The counter does see a request that reaches a session object.
    const control = await countSessionObjectCalls(objectOf(tenant.tenantId, "calm"));
    expect((await call("/v1/sessions/calm", { token: tenant.key })).status).toBe(200);
    expect(await control.stop()).toContain("view");

    expect((await call(`/v1/sessions/busy/lanes/main/operations/${operationId}/abort`, { method: "POST", token: tenant.key })).status).toBe(200);
    expect((await call(`/v1/sessions/busy/lanes/main/operations/${operationId}?wait=10`, { token: tenant.key })).status).toBe(200);
    // The release reaches the ledger with the settlement's forward, a moment after the commit.
    let idle: string[] = [];
    for (let attempt = 0; attempt < 200 && idle.length < 2; attempt++) {
      idle = await ids("status=idle");
      if (idle.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(idle).toEqual(["busy", "calm"]);
    expect(await ids("status=active")).toEqual([]);
  });
});

describe("a search of another tenant", () => {
  it("sees none of the seeded sessions", async () => {
    const other = await newTenant("searchother");
    const response = await call("/v1/sessions?metadata.user=u3&status=idle", { token: other.key });
    expect(await response.json()).toEqual({ items: [], nextCursor: null });
  });
});
