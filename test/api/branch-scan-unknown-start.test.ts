import { beforeAll, describe, expect, it } from "vitest";
import type { OpenApiDocument } from "../../worker/openapi/document.ts";
import { call } from "./helpers.ts";
import { expectError, tenantWithSession } from "./session-helpers.ts";

// A branch scan from a `start` that names no entry is 404 `UnknownTarget`, the code every other
// route answers for such an id, never an empty page a client could take for an empty branch.

let doc: OpenApiDocument;

beforeAll(async () => {
  doc = await (await call("/openapi.json")).json<OpenApiDocument>();
});

describe("branch scan from an entry that does not exist", () => {
  it("is the documented 404 UnknownTarget, not an empty page", async () => {
    const documented = doc.paths["/v1/sessions/{sid}/branches/{name}/entries"]?.get?.responses["404"]?.["x-error-codes"] ?? [];
    expect(documented).toContain("UnknownTarget");
    const { key, base } = await tenantWithSession("bsus");
    expect((await call(`${base}/branches`, { body: { name: "notes", at: null }, token: key })).status).toBe(201);
    expect((await call(`${base}/branches/notes/entries`, { body: { customType: "n", data: 1 }, token: key })).status).toBe(201);
    await expectError(await call(`${base}/branches/notes/entries?start=no_such_entry`, { token: key }), 404, "UnknownTarget");
    await expectError(await call(`${base}/branches/notes/entries?start=no_such_entry&order=asc`, { token: key }), 404, "UnknownTarget");
  });
});
