import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

describe("front worker", () => {
  it("answers GET /health", async () => {
    const response = await exports.default.fetch("http://localhost/health");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });

  it("answers unknown routes with a documented 404 error body", async () => {
    const response = await exports.default.fetch("http://localhost/nope");
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: { code: "NotFound", message: "No such route", requestId: expect.any(String) } });
  });
});
