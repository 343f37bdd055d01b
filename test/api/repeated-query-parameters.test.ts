import { describe, expect, it } from "vitest";
import { call, json, newTenant } from "./helpers.ts";

// A query parameter given twice is 400 ValidationFailed, as a repeated `metadata.<key>` filter is:
// Hono's `query()` keeps the first value, so `limit=1&limit=0` would page by 1 and
// `order=desc&order=sideways` be desc; an ambiguous, partly invalid request is refused instead
// (worker/validate.ts singleQuery).

async function setup(prefix: string) {
  const { key } = await newTenant(prefix);
  const sid = `${prefix}_s`;
  await json(await call("/v1/sessions", { body: { id: sid }, token: key }), 201);
  await json(await call(`/v1/sessions/${sid}/lists/app/k`, { body: 1, token: key }), 201);
  await json(await call(`/v1/sessions/${sid}/lists/app/k`, { body: 2, token: key }), 201);
  return { key, base: `/v1/sessions/${sid}` };
}

async function expectRefused(response: Response): Promise<void> {
  const text = await response.text();
  expect(response.status, text.slice(0, 200)).toBe(400);
  expect(JSON.parse(text).error.code).toBe("ValidationFailed");
}

describe("a query parameter given twice", () => {
  it("limit=1&limit=0 on a list page is 400, as its second value alone is", async () => {
    const { key, base } = await setup("rvq1");
    await expectRefused(await call(`${base}/lists/app/k?limit=0`, { token: key }));
    await expectRefused(await call(`${base}/lists/app/k?limit=1&limit=0`, { token: key }));
  });

  it("order=desc&order=sideways on GET /v1/sessions is 400", async () => {
    const { key } = await setup("rvq2");
    await expectRefused(await call("/v1/sessions?order=desc&order=sideways", { token: key }));
  });

  it("status=active&status=idle on GET /v1/sessions is 400, as a repeated metadata filter is", async () => {
    const { key } = await setup("rvq3");
    await expectRefused(await call("/v1/sessions?metadata.k=v&metadata.k=w", { token: key }));
    await expectRefused(await call("/v1/sessions?status=active&status=idle", { token: key }));
  });

  it("two cursors on one page request are 400, not the first one silently", async () => {
    const { key, base } = await setup("rvq4");
    const first = await json<{ nextCursor: string }>(await call(`${base}/lists/app/k?limit=1`, { token: key }), 200);
    await expectRefused(await call(`${base}/lists/app/k?limit=1&cursor=${first.nextCursor}&cursor=garbage`, { token: key }));
  });
});
