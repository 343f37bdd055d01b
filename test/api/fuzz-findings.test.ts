import { describe, expect, it } from "vitest";
import type { OpenApiDocument } from "../../worker/openapi/document.ts";
import { call, newTenant } from "./helpers.ts";

// Two defects test/api/fuzz.test.ts found once it reached every route of /openapi.json, each kept
// here as the plain case: an import line refused by its schema was described in valibot's words,
// and the document did not list the 400 that `DELETE /v1/sessions` answers to a bad filter.

describe("what the every-route fuzz found", () => {
  it("an import line refused by its schema is described in the API's words, naming the line and the field", async () => {
    const { key } = await newTenant("importwords");
    const response = await call("/v1/sessions/import", { method: "POST", rawBody: `${JSON.stringify({ type: "bogus" })}\n`, token: key, headers: { "content-type": "application/x-ndjson" } });
    expect(response.status).toBe(422);
    const { error } = await response.json<{ error: { code: string; message: string; details: unknown } }>();
    expect(error).toMatchObject({ code: "InvalidImport", details: { line: 1, reason: "invalid_line" } });
    expect(error.message).toMatch(/^Line 1: type: must be one of "session", /);
    expect(error.message).not.toMatch(/Invalid type|Expected|received/);
  });

  it("DELETE /v1/sessions documents the 400 ValidationFailed it answers to a malformed metadata filter", async () => {
    const { key } = await newTenant("deletewords");
    const refused = await call("/v1/sessions?metadata.=v", { method: "DELETE", token: key });
    expect(refused.status).toBe(400);
    expect((await refused.json<{ error: { code: string } }>()).error.code).toBe("ValidationFailed");
    const doc = await (await call("/openapi.json")).json<OpenApiDocument>();
    expect(doc.paths["/v1/sessions"]?.delete?.responses["400"]?.["x-error-codes"]).toContain("ValidationFailed");
  });
});
