import { describe, expect, it } from "vitest";
import { call, newTenant } from "./helpers.ts";

// `GET /v1/sessions?order=desc`: the newest sessions first (what a console shows), paged with the
// same opaque cursor as the default creation order.

type Page = { items: { id: string; createdAt: number }[]; nextCursor: string | null };

async function listAll(key: string, query: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const response = await call(`/v1/sessions?${query}${cursor ? `&cursor=${cursor}` : ""}`, { token: key });
    expect(response.status).toBe(200);
    const page: Page = await response.json();
    expect(page.items.length).toBeLessThanOrEqual(2);
    ids.push(...page.items.map((row) => row.id));
    cursor = page.nextCursor;
  } while (cursor !== null);
  return ids;
}

describe("GET /v1/sessions?order", () => {
  it("order=desc pages the newest first; the default and order=asc keep creation order", async () => {
    const { key } = await newTenant("listorder");
    const ids = ["a", "b", "c", "d", "e"];
    for (const id of ids) expect((await call("/v1/sessions", { body: { id }, token: key })).status).toBe(201);
    expect(await listAll(key, "limit=2&order=desc")).toEqual([...ids].reverse());
    expect(await listAll(key, "limit=2&order=asc")).toEqual(ids);
    expect(await listAll(key, "limit=2")).toEqual(ids);
  });

  it("an unknown order is 400 ValidationFailed naming the parameter", async () => {
    const { key } = await newTenant("listorderbad");
    const response = await call("/v1/sessions?order=newest", { token: key });
    expect(response.status).toBe(400);
    const body = await response.json<{ error: { code: string; message: string } }>();
    expect(body.error.code).toBe("ValidationFailed");
    expect(body.error.message).toMatch(/^order: /);
  });
});
