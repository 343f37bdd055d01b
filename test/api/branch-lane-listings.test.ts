import { describe, expect, it } from "vitest";
import { PAGE_LIMIT_DEFAULT } from "../../schema/api.ts";
import { call } from "./helpers.ts";
import { expectError, tenantWithSession } from "./session-helpers.ts";

// GET …/branches and GET …/lanes answer pages like every other listing (`limit` 1–1000, default
// 50, an opaque exclusive `nextCursor`), ordered by name; the session view embeds only the first
// page of each, with the cursor that continues it.

type BranchRow = { name: string; tipId: string | null; lane: boolean };
type LaneRow = { name: string; tipId: string | null; operation: unknown };
type Page<T> = { items: T[]; nextCursor: string | null };

async function page<T>(path: string, key: string): Promise<Page<T>> {
  const response = await call(path, { token: key });
  expect(response.status).toBe(200);
  return response.json<Page<T>>();
}

/** Every page of `path` (bounded), following nextCursor. */
async function allPages<T>(path: string, key: string, limit?: number): Promise<Page<T>[]> {
  const pages: Page<T>[] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams({ ...(limit !== undefined && { limit: String(limit) }), ...(cursor !== null && { cursor }) });
    const next: Page<T> = await page<T>(`${path}?${query.toString()}`, key);
    pages.push(next);
    cursor = next.nextCursor;
  } while (cursor !== null && pages.length < 50);
  return pages;
}

async function createBranches(base: string, key: string, names: readonly string[]): Promise<void> {
  for (let start = 0; start < names.length; start += 10) {
    const created = await Promise.all(names.slice(start, start + 10).map((name) => call(`${base}/branches`, { body: { name, at: null }, token: key })));
    expect(created.map((response) => response.status)).toEqual(created.map(() => 201));
  }
}

async function createLanes(base: string, key: string, names: readonly string[]): Promise<void> {
  for (const name of names) expect((await call(`${base}/lanes/${name}`, { method: "PUT", token: key })).status).toBe(201);
}

const padded = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(3, "0")}`);

describe("GET /v1/sessions/{sid}/branches pages", () => {
  it("pages branches by name with limit and an opaque cursor, each row saying whether a lane is bound", async () => {
    const { base, key } = await tenantWithSession("brpages");
    await createBranches(base, key, ["e", "c", "a", "d", "b"]);
    await createLanes(base, key, ["c", "m"]);
    const pages = await allPages<BranchRow>(`${base}/branches`, key, 2);
    expect(pages.map((p) => p.items.map((row) => `${row.name}:${row.lane}`))).toEqual([["a:false", "b:false"], ["c:true", "d:false"], ["e:false", "m:true"]]);
    expect(pages.map((p) => p.nextCursor === null)).toEqual([false, false, true]);
    expect(pages[0]?.items[0]).toEqual({ name: "a", tipId: null, lane: false });
  });

  it("answers at most 50 rows by default and continues to the end", async () => {
    const { base, key } = await tenantWithSession("brdefault");
    const names = padded("b", PAGE_LIMIT_DEFAULT + 7);
    await createBranches(base, key, names);
    const pages = await allPages<BranchRow>(`${base}/branches`, key);
    expect(pages.map((p) => p.items.length)).toEqual([PAGE_LIMIT_DEFAULT, 7]);
    expect(pages.flatMap((p) => p.items.map((row) => row.name))).toEqual(names);
  });

  it("refuses a bad limit or cursor with 400 naming the parameter", async () => {
    const { base, key } = await tenantWithSession("brbad");
    await expectError(await call(`${base}/branches?limit=0`, { token: key }), 400, "ValidationFailed");
    await expectError(await call(`${base}/branches?limit=1001`, { token: key }), 400, "ValidationFailed");
    const garbled = await call(`${base}/branches?cursor=nope`, { token: key });
    expect(garbled.status).toBe(400);
    expect((await garbled.json<{ error: { message: string } }>()).error.message).toMatch(/^cursor: /);
  });
});

describe("GET /v1/sessions/{sid}/lanes pages", () => {
  it("pages lanes by name with limit and an opaque cursor", async () => {
    const { base, key } = await tenantWithSession("lnpages");
    await createLanes(base, key, ["zeta", "alpha", "mid"]);
    const pages = await allPages<LaneRow>(`${base}/lanes`, key, 2);
    expect(pages.map((p) => p.items.map((row) => row.name))).toEqual([["alpha", "mid"], ["zeta"]]);
    expect(pages[0]?.items[0]).toEqual({ name: "alpha", tipId: null, operation: null });
    expect(pages.map((p) => p.nextCursor === null)).toEqual([false, true]);
    await expectError(await call(`${base}/lanes?limit=0`, { token: key }), 400, "ValidationFailed");
    await expectError(await call(`${base}/lanes?cursor=%25%25`, { token: key }), 400, "ValidationFailed");
  });
});

describe("GET /v1/sessions/{sid} embeds bounded listings", () => {
  it("embeds the first page of branches and lanes with the cursors that continue them", async () => {
    const { base, key } = await tenantWithSession("viewpages");
    const names = padded("v", PAGE_LIMIT_DEFAULT + 3);
    await createBranches(base, key, names);
    await createLanes(base, key, ["zlane"]);
    const view = await (await call(base, { token: key })).json<{ branches: BranchRow[]; branchesNextCursor: string | null; lanes: LaneRow[]; lanesNextCursor: string | null }>();
    expect(view.branches.map((row) => row.name)).toEqual(names.slice(0, PAGE_LIMIT_DEFAULT));
    expect(view.lanes.map((row) => row.name)).toEqual(["zlane"]);
    expect(view.lanesNextCursor).toBeNull();
    if (view.branchesNextCursor === null) throw new Error("the view should continue its branches");
    const rest = await page<BranchRow>(`${base}/branches?cursor=${encodeURIComponent(view.branchesNextCursor)}`, key);
    expect(rest.items.map((row) => `${row.name}:${row.lane}`)).toEqual([...names.slice(PAGE_LIMIT_DEFAULT).map((name) => `${name}:false`), "zlane:true"]);
    expect(rest.nextCursor).toBeNull();
  });
});
