import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fromWire } from "../../schema/wire.ts";
import { KEY_TRUST_MS, VerifiedKeys } from "../../worker/middleware/verified-keys.ts";
import { adminToken, call, errorCode, newTenant } from "./helpers.ts";

// QUALITY R4 with the tenant object off the read path: a verified key is trusted in an isolate for
// at most KEY_TRUST_MS, so a revoked key is refused within that bound everywhere, and at once on
// the isolate that revoked it. Two isolates are two VerifiedKeys with one injected clock (no sleep);
// the isolate that revokes is the test's own, through the real app.

const T0 = 1_700_000_000_000;
const key = (keyId: string, verifiedAt = T0) => ({ tenantId: "acme", keyId, verifiedAt });

describe("a verified key's trust in an isolate", () => {
  it("a key revoked through one isolate is refused there at once, and on another within KEY_TRUST_MS, not after", () => {
    const revoking = new VerifiedKeys();
    const other = new VerifiedKeys();
    revoking.remember("h1", key("key_a"), revoking.generation());
    other.remember("h1", key("key_a"), other.generation());
    revoking.forgetKey("acme", "key_a");
    expect(revoking.get("h1", T0)).toBeUndefined();
    expect(other.get("h1", T0 + KEY_TRUST_MS - 1)).toMatchObject({ keyId: "key_a" });
    expect(other.get("h1", T0 + KEY_TRUST_MS)).toBeUndefined();
    // Expired means asked again: it stays unknown until the tenant's object verifies it again.
    expect(other.get("h1", T0)).toBeUndefined();
  });

  it("forgets only the revoked key of that tenant, and a verification asked before a revocation here is not kept", () => {
    const keys = new VerifiedKeys();
    keys.remember("h1", key("key_a"), keys.generation());
    keys.remember("h2", { tenantId: "other", keyId: "key_a", verifiedAt: T0 }, keys.generation());
    keys.remember("h3", key("key_b"), keys.generation());
    const asked = keys.generation();
    keys.forgetKey("acme", "key_a");
    expect([keys.get("h1", T0), keys.get("h2", T0)?.tenantId, keys.get("h3", T0)?.keyId]).toEqual([undefined, "other", "key_b"]);
    // The object verified h1 before the revocation; its answer arrives after: not trusted.
    keys.remember("h1", key("key_a"), asked);
    expect(keys.get("h1", T0)).toBeUndefined();
  });

  it("a tenant deleted through this isolate: every key of it refused here at once, another tenant's kept (issue 35)", () => {
    const keys = new VerifiedKeys();
    keys.remember("h1", key("key_a"), keys.generation());
    keys.remember("h2", key("key_b"), keys.generation());
    keys.remember("h3", { tenantId: "other", keyId: "key_a", verifiedAt: T0 }, keys.generation());
    const asked = keys.generation();
    keys.forgetTenant("acme");
    expect([keys.get("h1", T0), keys.get("h2", T0), keys.get("h3", T0)?.tenantId]).toEqual([undefined, undefined, "other"]);
    keys.remember("h1", key("key_a"), asked);
    expect(keys.get("h1", T0)).toBeUndefined();
  });

  it("holds at most 10,000 keys, dropping the oldest", () => {
    const keys = new VerifiedKeys();
    for (let i = 0; i <= 10_000; i++) keys.remember(`h${i}`, key(`key_${i}`), keys.generation());
    expect(keys.get("h0", T0)).toBeUndefined();
    expect(keys.get("h1", T0)?.keyId).toBe("key_1");
    expect(keys.get("h10000", T0)?.keyId).toBe("key_10000");
  });
});

describe("revocation through the API", () => {
  it("a key revoked through this isolate is refused at once on a session's route, which asks no tenant object when warm", async () => {
    const { tenantId, key: secret, keyId } = await newTenant("trust_rev");
    expect((await call("/v1/sessions", { body: { id: "s_trust" }, token: secret })).status).toBe(201);
    expect((await call("/v1/sessions/s_trust", { token: secret })).status).toBe(200);
    expect((await call(`/v1/admin/tenants/${tenantId}/keys/${keyId}`, { method: "DELETE", token: adminToken() })).status).toBe(204);
    const after = await call("/v1/sessions/s_trust", { token: secret });
    expect(after.status).toBe(401);
    expect(await errorCode(after)).toBe("Unauthenticated");
  });

  it("a key revoked elsewhere is refused at once by an accepting route, whose reservation checks the key", async () => {
    const { tenantId, key: secret, keyId } = await newTenant("trust_else");
    expect((await call("/v1/sessions", { body: { id: "s_else" }, token: secret })).status).toBe(201);
    expect((await call("/v1/sessions/s_else/lanes/main", { method: "PUT", token: secret })).status).toBe(201);
    // Another isolate's admin route revokes: this isolate's trust in the key is not dropped.
    expect(fromWire(await env.TENANTS.getByName(tenantId).revokeKey(keyId))).toMatchObject({ ok: true });
    const prompt = await call("/v1/sessions/s_else/lanes/main/prompt", { body: { prompt: "after the revocation" }, token: secret });
    expect(prompt.status).toBe(401);
    expect(await errorCode(prompt)).toBe("Unauthenticated");
  });
});
