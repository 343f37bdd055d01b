import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../durable-objects/tenant/tenant-object.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// docs/api.md: "429, 503 Overloaded and SessionClosed, and 409 IdempotencyInProgress come with
// Retry-After" (and the CORS layer exposes Retry-After so a page can read it). POST …/ai-sdk
// answers 409 IdempotencyInProgress while an earlier send of the same message id is still being
// accepted (docs/ai-sdk.md: a message is prompted exactly once per id).

describe("Retry-After on 409 IdempotencyInProgress", () => {
  it("POST …/ai-sdk answers a send of a message still being accepted with Retry-After, as every other route does", async () => {
    const setup = await laneSetup("rai");
    const messageId = "m-in-flight";
    // The first send's claim of the message id, as POST …/ai-sdk takes it (worker/routes/ai-sdk.ts
    // messageReceipt), held as if that send were still being accepted.
    const stub = env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`);
    const claim = await stub.idempotencyClaim(`ai-sdk:main:${messageId}`, await sha256Hex(JSON.stringify({ prompt: "hello", images: [] })));
    expect(claim.state).toBe("claimed");

    const second = await call(`${setup.lanePath}/ai-sdk`, {
      token: setup.key,
      headers: { origin: "https://app.example" },
      body: { id: setup.sid, trigger: "submit-message", messages: [{ id: messageId, role: "user", parts: [{ type: "text", text: "hello" }] }] },
    });
    const text = await second.text();
    expect(second.status, text).toBe(409);
    expect(JSON.parse(text)).toMatchObject({ error: { code: "IdempotencyInProgress", details: { retryAfterSeconds: expect.any(Number) } } });
    expect(second.headers.get("retry-after") ?? "(absent)", "the header docs/api.md promises with 409 IdempotencyInProgress").toMatch(/^\d+$/);
  });
});
