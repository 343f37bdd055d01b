import { describe, expect, it } from "vitest";
import { mint } from "./browser-token-helpers.ts";
import { call, json, newTenant } from "./helpers.ts";

// QUALITY R4 × R5: route-isolation.test.ts calls A's routes with B's key
// (404) and with a browser token of another session of A's own tenant (403); it never uses a
// browser token minted by ANOTHER tenant for a session that has the same id as A's (session ids
// are chosen by the tenant, so B can name its session like A's). route-idempotency.test.ts uses
// one tenant, so it never shows that an Idempotency-Key is scoped to its tenant: B sending A's key
// on the same path (same session id, same body) must get its own effect, not A's remembered answer.

const SID = `iso_shared_${Date.now().toString(36)}`;

async function tenantWithSession(prefix: string, secret: string) {
  const tenant = await newTenant(prefix);
  await json(await call("/v1/sessions", { body: { id: SID }, token: tenant.key }), 201);
  await json(await call(`/v1/sessions/${SID}/lanes/main`, { method: "PUT", token: tenant.key }), 201);
  const record = await json<{ status: string }>(await call(`/v1/sessions/${SID}/lanes/main/prompt`, { body: { prompt: secret, wait: 10 }, token: tenant.key }), 200);
  expect(record.status).toBe("completed");
  return tenant;
}

describe("tenant isolation with the same session id in two tenants", () => {
  it("B's browser token for its session named like A's reads B's lane only (snapshot, ai-sdk messages, events), never A's", async () => {
    await tenantWithSession("iso_xa", "secret of tenant A");
    const b = await tenantWithSession("iso_xb", "text of tenant B");
    const { token } = await mint(SID, b.key, { scopes: ["watch", "prompt"] });
    for (const path of [`/v1/sessions/${SID}/lanes/main/snapshot`, `/v1/sessions/${SID}/lanes/main/ai-sdk/messages`, `/v1/sessions/${SID}/branches/main/entries`]) {
      const response = await call(path, { token });
      const text = await response.text();
      expect(response.status, path).toBe(200);
      expect(text, path).toContain("text of tenant B");
      expect(text, path).not.toContain("secret of tenant A");
    }
    // A's key is another tenant for B's token: a token is never a key, whatever session it names.
    const events = await call(`/v1/sessions/${SID}/lanes/main/events?access_token=${encodeURIComponent(token)}`);
    expect(events.status).toBe(200);
    const reader = events.body?.getReader();
    let seen = "";
    while (reader && !seen.includes("\n\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += new TextDecoder().decode(value);
    }
    await reader?.cancel();
    expect(seen).toContain("text of tenant B");
    expect(seen).not.toContain("secret of tenant A");
  });

  it("an Idempotency-Key is the tenant's: B's request with A's key, path and body gets B's own effect, not A's answer", async () => {
    const a = await tenantWithSession("iso_ida", "a");
    const b = await tenantWithSession("iso_idb", "b");
    const headers = { "idempotency-key": "shared-key-1" };
    const cases: { path: string; body: unknown; count: (key: string) => Promise<number> }[] = [
      {
        path: `/v1/sessions/${SID}/lists/app/k`, body: { step: 1 },
        count: async (key) => (await json<{ items: unknown[] }>(await call(`/v1/sessions/${SID}/lists/app/k`, { token: key }), 200)).items.length,
      },
      {
        path: `/v1/sessions/${SID}/lanes/main/schedules`, body: { at: Date.now() + 365 * 24 * 3_600_000, prompt: "later" },
        count: async (key) => (await json<{ items: unknown[] }>(await call(`/v1/sessions/${SID}/lanes/main/schedules`, { token: key }), 200)).items.length,
      },
      {
        path: "/v1/agents", body: { name: "shared", model: { provider: "scripted", modelId: "echo" } },
        count: async (key) => (await json<{ items: unknown[] }>(await call("/v1/agents", { token: key }), 200)).items.length,
      },
      {
        path: `/v1/sessions/${SID}/branches`, body: { name: "side", at: null },
        count: async (key) => (await json<{ items: unknown[] }>(await call(`/v1/sessions/${SID}/branches`, { token: key }), 200)).items.length,
      },
    ];
    for (const c of cases) {
      const beforeB = await c.count(b.key);
      const first = await call(c.path, { body: c.body, token: a.key, headers });
      expect(first.status, c.path).toBe(201);
      const firstText = await first.text();
      const fromB = await call(c.path, { body: c.body, token: b.key, headers });
      expect(fromB.status, c.path).toBe(201);
      expect(fromB.headers.get("idempotency-replayed"), c.path).toBeNull();
      await fromB.text();
      expect(await c.count(b.key), c.path).toBe(beforeB + 1);
      // And A's own repeat is still A's replay.
      const again = await call(c.path, { body: c.body, token: a.key, headers });
      expect(again.headers.get("idempotency-replayed"), c.path).toBe("true");
      expect(await again.text(), c.path).toBe(firstText);
    }
  });
});
