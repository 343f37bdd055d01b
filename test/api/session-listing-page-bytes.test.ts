import { describe, expect, it } from "vitest";
import { PAGE_BYTES_MAX } from "../../schema/api-sessions.ts";
import { seedSessionIndex } from "../helpers/session-index-seed.ts";
import { call, newTenant } from "./helpers.ts";

// docs/api-sessions.md "Paging": "`limit` is 1–1000, default 50. A page also ends early, before the
// item that would take it past 8 MiB of JSON", and `GET /sessions` takes `limit`, `cursor` "as on
// every listing". A session row holds up to 16 metadata pairs of 64 + 512 characters and a name of
// 500: a thousand such rows are about 10 MB of JSON.

const COUNT = 1_000;
const BASE = 1_700_000_000_000;

type Page = { items: { id: string }[]; nextCursor: string | null };

describe("GET /v1/sessions pages are bounded in bytes", { timeout: 120_000 }, () => {
  it("a page of limit=1000 full rows ends before 8 MiB, with a cursor to the rest", async () => {
    const { tenantId, key } = await newTenant("list_bytes");
    await seedSessionIndex(tenantId, COUNT, (i) => ({
      id: `s${String(i).padStart(5, "0")}`,
      name: "n".repeat(500),
      createdAt: BASE + i,
      metadata: Object.fromEntries(Array.from({ length: 16 }, (_, k) => [`${"k".repeat(60)}${String(k).padStart(4, "0")}`, "v".repeat(512)])),
    }));
    const response = await call("/v1/sessions?limit=1000", { token: key });
    expect(response.status).toBe(200);
    const text = await response.text();
    const page: Page = JSON.parse(text);
    expect(new TextEncoder().encode(text).length).toBeLessThanOrEqual(PAGE_BYTES_MAX);
    expect(page.items.length).toBeLessThan(COUNT);
    expect(page.nextCursor).not.toBeNull();
    // The cursor continues after the last session answered: the two pages hold every session once.
    const rest = await call(`/v1/sessions?limit=1000&cursor=${page.nextCursor}`, { token: key });
    expect(rest.status).toBe(200);
    const next: Page = await rest.json();
    expect(next.nextCursor).toBeNull();
    expect([...page.items, ...next.items].map((item) => item.id)).toEqual(Array.from({ length: COUNT }, (_, i) => `s${String(i).padStart(5, "0")}`));
  });

  it("a page of rows whose metadata values JSON-escape to six bytes a character still answers (a bounded page), not a failure", async () => {
    const { tenantId, key } = await newTenant("list_bytes_esc");
    // Values are any string of at most 512 characters: U+0001 is one character and six bytes of JSON.
    await seedSessionIndex(tenantId, COUNT, (i) => ({
      id: `e${String(i).padStart(5, "0")}`,
      name: null,
      createdAt: BASE + i,
      metadata: Object.fromEntries(Array.from({ length: 16 }, (_, k) => [`k${k}`, "\u0001".repeat(512)])),
    }));
    const response = await call("/v1/sessions?limit=1000", { token: key });
    const text = await response.text();
    expect(response.status, text.slice(0, 300)).toBe(200);
    expect(new TextEncoder().encode(text).length).toBeLessThanOrEqual(PAGE_BYTES_MAX);
  });
});
