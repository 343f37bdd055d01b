import { describe, expect, it } from "vitest";
import { call, newTenant } from "./helpers.ts";

// docs/data.md "Import": the one-request import `POST /v1/sessions/import` checks the stream like a
// creation, and "the whole must hold an `end` line (`incomplete`)"; `empty_part` is documented only
// for `PUT /v1/imports/{importId}/parts/{n}` ("Import in parts"). An empty body is a stream with no
// header and no end line: the docs' reason for it is `incomplete`, and nothing speaks of parts.

describe("docs/data.md: an empty one-request import", () => {
  it("is 422 InvalidImport with reason incomplete, not a part's empty_part", async () => {
    const { key } = await newTenant("imp_empty");
    const response = await call("/v1/sessions/import?id=empty-import", {
      method: "POST",
      rawBody: "",
      token: key,
      headers: { "content-type": "application/x-ndjson" },
    });
    const body = await response.json<{ error: { code: string; message: string; details?: { reason?: string } } }>();
    expect(response.status).toBe(422);
    expect(body.error.code).toBe("InvalidImport");
    expect(body.error.details?.reason).toBe("incomplete");
    expect(body.error.message).not.toMatch(/part/i);
  });
});
