import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, createTenant, readAdminToken } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// A large session over real HTTP against `npm start`: 40 entries of 900 KB (about 35 MiB, more
// than one Worker↔object RPC value may carry) and as many list items. Every listing answers 200 in
// pages bounded by bytes as well as by count, and walking the cursors returns each item exactly
// once, in order.

type Page<T> = { items: T[]; nextCursor: string | null };
type Item = { id: string; data?: string };

const COUNT = 40;
/** The page byte bound the API documents (8 MiB), plus room for one page's framing. */
const PAGE_BYTES = 8 * 1024 * 1024 + 16 * 1024;
const big = (index: number) => `${String(index).padStart(4, "0")}:${"y".repeat(900 * 1024)}`;

async function walk<T>(api: Api, path: string): Promise<{ items: T[]; pageBytes: number[] }> {
  const items: T[] = [];
  const pageBytes: number[] = [];
  let cursor: string | null = null;
  do {
    const response = await fetch(`${api.baseUrl}${path}${path.includes("?") ? "&" : "?"}limit=1000${cursor ? `&cursor=${cursor}` : ""}`, {
      headers: { authorization: `Bearer ${api.token}` },
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${path}: ${response.status} ${text.slice(0, 300)}`);
    pageBytes.push(Buffer.byteLength(text));
    const page = JSON.parse(text) as Page<T>;
    items.push(...page.items);
    cursor = page.nextCursor;
    if (pageBytes.length > 100) throw new Error(`${path}: more than 100 pages`);
  } while (cursor !== null);
  return { items, pageBytes };
}

describe("a large session over HTTP (npm start)", () => {
  let server: DevServer;
  let api: Api;
  beforeAll(async () => {
    server = await startDevServer();
    ({ api } = await createTenant(new Api(server.baseUrl, readAdminToken()), "large"));
    await api.expect(201, "POST", "/v1/sessions", { body: { id: "large" } });
    await api.expect(201, "POST", "/v1/sessions/large/branches", { body: { name: "b", at: null } });
    for (let index = 0; index < COUNT; index++) {
      await api.expect(201, "POST", "/v1/sessions/large/branches/b/entries", { body: { customType: "blob", data: big(index) } });
      await api.expect(201, "POST", "/v1/sessions/large/lists/app/blobs", { body: big(index) });
    }
  }, 180_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
  });

  const expected = Array.from({ length: COUNT }, (_, index) => big(index));

  it.each([
    ["/v1/sessions/large/entries", false],
    ["/v1/sessions/large/entries?order=desc", true],
    ["/v1/sessions/large/branches/b/entries", true],
    ["/v1/sessions/large/branches/b/entries?order=asc", false],
  ] as const)("GET %s answers byte-bounded pages whose cursors return each entry once", async (path, newestFirst) => {
    const { items, pageBytes } = await walk<Item>(api, path);
    expect(items.map((item) => item.data)).toEqual(newestFirst ? [...expected].reverse() : expected);
    expect(new Set(items.map((item) => item.id)).size).toBe(COUNT);
    expect(pageBytes.length).toBeGreaterThan(4);
    expect(Math.max(...pageBytes)).toBeLessThanOrEqual(PAGE_BYTES);
  });

  it("GET …/lists/app/blobs answers byte-bounded pages whose cursors return each item once", async () => {
    const { items, pageBytes } = await walk<{ seq: number; value: string }>(api, "/v1/sessions/large/lists/app/blobs");
    expect(items.map((item) => item.value)).toEqual(expected);
    expect(new Set(items.map((item) => item.seq)).size).toBe(COUNT);
    expect(Math.max(...pageBytes)).toBeLessThanOrEqual(PAGE_BYTES);
  });

  it("GET …/entries/{id}, the session and its usage still answer 200", async () => {
    const { items } = await walk<Item>(api, "/v1/sessions/large/entries");
    const last = items[COUNT - 1];
    expect((await api.expect<Item>(200, "GET", `/v1/sessions/large/entries/${last?.id}`)).data).toBe(big(COUNT - 1));
    await api.expect(200, "GET", "/v1/sessions/large");
    await api.expect(200, "GET", "/v1/sessions/large/usage");
    await api.expect(200, "GET", "/v1/sessions/large/branches");
  });
});
