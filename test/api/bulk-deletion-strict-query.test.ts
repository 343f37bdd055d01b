import { describe, expect, it } from "vitest";
import { call, newTenant } from "./helpers.ts";

// DELETE /v1/sessions?metadata.<key>=<value> takes only metadata filters (docs/data.md "One end
// user's sessions"). Any other parameter (a listing filter such as createdAfter, or a misspelt
// metadata name) is 400 and nothing is queued: ignored, it would delete more than the listing the
// caller checked with the same query.

async function create(key: string, id: string, metadata: Record<string, string>): Promise<void> {
  expect((await call("/v1/sessions", { body: { id, metadata }, token: key })).status).toBe(201);
}

async function listed(key: string): Promise<string[]> {
  const response = await call("/v1/sessions?limit=100", { token: key });
  expect(response.status).toBe(200);
  return (await response.json<{ items: { id: string }[] }>()).items.map((item) => item.id).sort();
}

describe("a bulk deletion with a parameter besides its metadata filters", () => {
  for (const [what, extra] of [
    ["a listing filter (createdAfter)", "createdAfter=1"],
    ["a listing filter (status)", "status=idle"],
    ["a misspelt metadata name", "metadta.plan=free"],
  ] as const) {
    it(`${what} is 400 ValidationFailed naming it, and nothing is deleted`, async () => {
      const { key } = await newTenant("bdsq");
      await create(key, "one", { user: "u_1", plan: "free" });
      await create(key, "two", { user: "u_1", plan: "paid" });
      const answer = await call(`/v1/sessions?metadata.user=u_1&${extra}`, { method: "DELETE", token: key });
      const body = await answer.json<{ error: { code: string; message: string } }>();
      expect({ status: answer.status, code: body.error.code, names: body.error.message.startsWith(`query.${extra.split("=")[0]}`) }).toEqual({ status: 400, code: "ValidationFailed", names: true });
      expect(await listed(key)).toEqual(["one", "two"]);
    });
  }
});
