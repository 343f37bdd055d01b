import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { list, value } from "../../harness/session/addresses.ts";
import { PAGE_BYTES_MAX } from "../../schema/api-sessions.ts";
import { call } from "./helpers.ts";
import { objectOf, tenantWithSession } from "./session-helpers.ts";

// Large sessions (QUALITY R7): every paged read is bounded by bytes as well as by count, so no
// answer meets the platform's 32 MiB limit on an RPC value, and a single item up to the 16 MiB
// payload limit comes back intact, alone on its page when it must.

type Page<T> = { items: T[]; nextCursor: string | null };
type Item = { id: string; seq: number; type: string; customType?: string; data?: string };

const KB = 1024;
const MIB = 1024 * KB;
/** 40 × 900 KB: about 35 MiB, more than one RPC value may carry. */
const COUNT = 40;
const big = (index: number) => `${String(index).padStart(4, "0")}:${"x".repeat(900 * KB)}`;

/** Reads every page from `path`, following nextCursor; returns the pages' sizes and the items in order. */
async function walk<T>(key: string, path: string): Promise<{ items: T[]; pageBytes: number[]; statuses: number[] }> {
  const items: T[] = [];
  const pageBytes: number[] = [];
  const statuses: number[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const response = await call(`${path}${path.includes("?") ? "&" : "?"}limit=1000${cursor ? `&cursor=${cursor}` : ""}`, { token: key });
    statuses.push(response.status);
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${path}: ${response.status} ${text.slice(0, 300)}`);
    pageBytes.push(new TextEncoder().encode(text).byteLength);
    const page: Page<T> = JSON.parse(text);
    items.push(...page.items);
    cursor = page.nextCursor;
    if (cursor === null) return { items, pageBytes, statuses };
  }
  throw new Error(`${path}: more than 100 pages`);
}

describe("byte-bounded pages", () => {
  it("40 entries of 900 KB: every entry listing answers 200 in byte-bounded pages, and walking the cursors returns each entry once", { timeout: 120_000 }, async () => {
    const { key, base } = await tenantWithSession("pagesbytes");
    expect((await call(`${base}/branches`, { body: { name: "b", at: null }, token: key })).status).toBe(201);
    for (let index = 0; index < COUNT; index++) {
      const posted = await call(`${base}/branches/b/entries`, { body: { customType: "blob", data: big(index) }, token: key });
      expect(posted.status).toBe(201);
    }
    const expected = Array.from({ length: COUNT }, (_, index) => big(index));
    const listings: [string, boolean][] = [
      [`${base}/entries`, false],
      [`${base}/entries?order=desc`, true],
      [`${base}/branches/b/entries`, true],
      [`${base}/branches/b/entries?order=asc`, false],
      [`${base}/entries?type=custom&customType=blob`, false],
    ];
    for (const [path, newestFirst] of listings) {
      const { items, pageBytes } = await walk<Item>(key, path);
      const data = items.map((item) => item.data);
      expect({ path, data: data.map((text) => text?.slice(0, 4)) }).toEqual({ path, data: (newestFirst ? [...expected].reverse() : expected).map((text) => text.slice(0, 4)) });
      expect(data).toEqual(newestFirst ? [...expected].reverse() : expected);
      expect(new Set(items.map((item) => item.id)).size).toBe(COUNT);
      expect(pageBytes.length).toBeGreaterThan(1);
      for (const bytes of pageBytes) expect(bytes).toBeLessThanOrEqual(PAGE_BYTES_MAX + 16 * KB);
    }
    // Single reads of the same entries are whole.
    const { items } = await walk<Item>(key, `${base}/entries`);
    const one = items[7];
    const read = await call(`${base}/entries/${one?.id}`, { token: key });
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual(one);
  });

  it("answers entries and list items exactly as the session stores them, whatever their type or size", { timeout: 60_000 }, async () => {
    const { tenantId, key, base, sid } = await tenantWithSession("pagesexact");
    expect((await call(`${base}/lanes/main`, { method: "PUT", token: key })).status).toBe(201);
    expect((await call(`${base}/lanes/main/prompt`, { body: { prompt: "héllo 🙂", wait: 10 }, token: key })).status).toBe(200);
    expect((await call(`${base}/branches/main/entries`, { body: { customType: "bare" }, token: key })).status).toBe(201);
    for (const element of [null, 0, "é", { a: [1, { b: null }] }]) {
      expect((await call(`${base}/lists/app/mixed`, { body: element, token: key })).status).toBe(201);
    }
    const stored = await runInDurableObject(objectOf(tenantId, sid), async (instance: SessionObject) => {
      const session = instance.session();
      // Above 1 MiB a payload is stored in chunks (not reachable through a 1 MiB request body).
      await session.branch("main")?.appendCustomEntry("big", { text: "z".repeat(1536 * KB), quote: "\"\\\u2028" });
      await session.appendList(list("app", "mixed"), "w".repeat(1200 * KB));
      return { entries: session.findEntries(), list: session.readList(list("app", "mixed")) };
    });
    expect((await walk<Item>(key, `${base}/entries`)).items).toEqual(stored.entries);
    expect((await walk<{ seq: number; value: unknown }>(key, `${base}/lists/app/mixed`)).items).toEqual(stored.list);
    for (const entry of stored.entries) expect(await (await call(`${base}/entries/${entry.id}`, { token: key })).json()).toEqual(entry);
  });

  it("list items of 900 KB page by bytes too, in both orders", { timeout: 120_000 }, async () => {
    const { key, base } = await tenantWithSession("pageslist");
    for (let index = 0; index < COUNT; index++) {
      expect((await call(`${base}/lists/app/blobs`, { body: big(index), token: key })).status).toBe(201);
    }
    const expected = Array.from({ length: COUNT }, (_, index) => big(index));
    for (const [order, values] of [["asc", expected], ["desc", [...expected].reverse()]] as const) {
      const { items, pageBytes } = await walk<{ seq: number; value: string }>(key, `${base}/lists/app/blobs?order=${order}`);
      expect(items.map((item) => item.value)).toEqual(values);
      expect(pageBytes.length).toBeGreaterThan(1);
      for (const bytes of pageBytes) expect(bytes).toBeLessThanOrEqual(PAGE_BYTES_MAX + 16 * KB);
    }
  });

  it("an entry, a value and a list item at the 16 MiB payload limit come back intact, alone on their page", { timeout: 120_000 }, async () => {
    const { tenantId, key, base, sid } = await tenantWithSession("pagesmax");
    // One character beyond Latin-1 makes the runtime hold (and an RPC string carry) the text as
    // UTF-16: twice its UTF-8 size, past 32 MiB at this length.
    const text = `${"m".repeat(16 * MIB - 64)}🙂`;
    const ids = await runInDurableObject(objectOf(tenantId, sid), async (instance: SessionObject) => {
      const session = instance.session();
      const branch = await session.createBranch("huge", null);
      const small = await branch.appendCustomEntry("small", "before");
      const huge = await branch.appendCustomEntry("huge", text);
      await branch.appendCustomEntry("small", "after");
      await session.setValue(value("app", "huge"), text);
      await session.appendList(list("app", "huge"), "first");
      await session.appendList(list("app", "huge"), text);
      return { small, huge };
    });
    const entry = await call(`${base}/entries/${ids.huge}`, { token: key });
    expect(entry.status).toBe(200);
    expect((await entry.json<Item>()).data).toBe(text);
    const stored = await call(`${base}/values/app/huge`, { token: key });
    expect(stored.status).toBe(200);
    expect((await stored.json<{ value: string }>()).value).toBe(text);
    const entries = await walk<Item>(key, `${base}/branches/huge/entries?order=asc`);
    expect(entries.items.map((item) => item.customType)).toEqual(["small", "huge", "small"]);
    expect(entries.items[1]?.data).toBe(text);
    expect(entries.pageBytes).toHaveLength(3);
    const listed = await walk<{ value: string }>(key, `${base}/lists/app/huge`);
    expect(listed.items.map((item) => item.value === text)).toEqual([false, true]);
    expect(listed.pageBytes).toHaveLength(2);
  });
});
