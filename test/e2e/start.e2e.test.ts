import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevServer, type DevServer } from "./dev-server.ts";

// The README's promise: `npm start` serves the API locally and answers GET /health.
describe("npm start", () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer();
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("answers GET /health over real HTTP", async () => {
    const response = await fetch(`${server.baseUrl}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });
});
