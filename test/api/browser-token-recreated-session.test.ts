import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fromWire } from "../../schema/wire.ts";
import type { BrowserToken } from "../../schema/browser-tokens.ts";
import { call, newTenant } from "./helpers.ts";

// A browser token is for one session (docs/api-tenants.md "Browser tokens"); a session created
// again under a deleted one's id "is a new one" (docs/api-sessions.md "Deletion"), which the old
// session's tokens must not reach.

describe("browser tokens and session ids used again", () => {
  it("a token minted for a deleted session does not reach the new session created under its id", async () => {
    const { key } = await newTenant("rv_bt_reuse");
    expect((await call("/v1/sessions", { token: key, body: { id: "chat-1", metadata: { user: "alice" } } })).status).toBe(201);
    expect((await call("/v1/sessions/chat-1/lanes/main", { method: "PUT", token: key, body: {} })).status).toBe(201);
    const minted = await call("/v1/sessions/chat-1/tokens", { token: key, body: { scopes: ["watch", "prompt"], ttlSeconds: 3600 } });
    expect(minted.status).toBe(201);
    const { token } = await minted.json<BrowserToken>();
    expect((await call("/v1/sessions/chat-1/lanes/main", { token })).status).toBe(200);

    // Alice's session is deleted; the application later creates another user's session under the same id.
    expect((await call("/v1/sessions/chat-1", { method: "DELETE", token: key })).status).toBe(204);
    expect((await call("/v1/sessions", { token: key, body: { id: "chat-1", metadata: { user: "bob" } } })).status).toBe(201);
    expect((await call("/v1/sessions/chat-1/lanes/main", { method: "PUT", token: key, body: {} })).status).toBe(201);
    await call("/v1/sessions/chat-1/lanes/main/entries", { token: key, body: { customType: "private", data: { secret: "bob's" } } });

    // Alice's page still holds its token: it must reach nothing of Bob's session.
    const read = await call("/v1/sessions/chat-1/lanes/main/snapshot", { token });
    const prompted = await call("/v1/sessions/chat-1/lanes/main/queue", { token, body: { kind: "followUp", message: "from alice's page" } });
    expect([read.status, prompted.status]).toEqual([403, 403]);
    expect(await read.json()).toMatchObject({ error: { code: "TokenScope" } });
    // A token minted for the new session reaches it.
    const fresh = await call("/v1/sessions/chat-1/tokens", { token: key, body: { scopes: ["watch"] } });
    const { token: bobsToken } = await fresh.json<BrowserToken>();
    expect((await call("/v1/sessions/chat-1/lanes/main/snapshot", { token: bobsToken })).status).toBe(200);
  });

  it("is refused also where the front worker never saw the new session created (its object is asked)", async () => {
    const { tenantId, key } = await newTenant("rv_bt_cold");
    expect((await call("/v1/sessions", { token: key, body: { id: "chat-2" } })).status).toBe(201);
    const minted = await call("/v1/sessions/chat-2/tokens", { token: key, body: { scopes: ["watch"] } });
    const { token } = await minted.json<BrowserToken>();
    expect((await call("/v1/sessions/chat-2", { method: "DELETE", token: key })).status).toBe(204);
    // Created again by its object alone, as another isolate of the front worker would have done it.
    const stub = env.SESSIONS.getByName(`${tenantId}:chat-2`);
    expect(fromWire(await stub.create({ tenantId, sessionId: "chat-2" })).ok).toBe(true);
    expect((await call("/v1/sessions/chat-2/lanes/main", { method: "PUT", token: key, body: {} })).status).toBe(201);
    const read = await call("/v1/sessions/chat-2/lanes/main/snapshot", { token });
    expect(read.status).toBe(403);
  });
});
