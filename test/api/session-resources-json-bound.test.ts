import { describe, expect, it } from "vitest";
import { MAX_BODY_BYTES } from "../../worker/validate.ts";
import { RESOURCE_LIMITS } from "../../schema/settings.ts";
import { call } from "./helpers.ts";
import { tenantWithSession } from "./session-helpers.ts";

// Skills and templates are bounded as they are stored, as JSON (docs/api-sessions.md): a control
// character counts its 6 escaped bytes, so a PUT within the bound never meets storage's own value
// limit (a 413), and one beyond is 422 `LimitExceeded`.

describe("skills within the documented bound", () => {
  it("each PUT is 200, or 422 LimitExceeded once the bound is passed; never 413 for a body under 1 MiB", async () => {
    const { key, base } = await tenantWithSession("srjb");
    const content = "\u0001".repeat(170_000);
    const body = JSON.stringify({ content });
    expect(new TextEncoder().encode(body).byteLength).toBeLessThan(MAX_BODY_BYTES);
    const answers: { i: number; status: number; code?: string }[] = [];
    for (let i = 0; i < 17; i++) {
      const response = await call(`${base}/skills/s${i}`, { method: "PUT", rawBody: body, headers: { "content-type": "application/json" }, token: key });
      const code = response.status === 200 ? undefined : (await response.json<{ error: { code: string } }>()).error.code;
      answers.push({ i, status: response.status, ...(code !== undefined && { code }) });
      if (response.status !== 200) break;
    }
    // 17 × 170,000 UTF-8 bytes = 2.9 MB of contents, below the documented 4 MiB.
    expect(17 * 170_000).toBeLessThan(RESOURCE_LIMITS.bytes);
    const refused = answers.filter((answer) => answer.status !== 200);
    expect(refused.every((answer) => answer.status === 422 && answer.code === "LimitExceeded"), JSON.stringify(refused)).toBe(true);
  }, 120_000);
});
