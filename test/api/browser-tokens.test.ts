import { createExecutionContext, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BROWSER_TOKEN_LIMITS } from "../../schema/browser-tokens.ts";
import { createApp } from "../../worker/app.ts";
import { mint, mintRequest, outcome, tokenSetup } from "./browser-token-helpers.ts";
import { call, errorCode, newTenant } from "./helpers.ts";

// Minting browser tokens: POST /v1/sessions/{sid}/tokens through the real app (docs/api-tenants.md
// "Browser tokens"): the answer, its bounds, who may mint, and Idempotency-Key (a token is a
// secret: shown once, never replayed).

describe("POST /v1/sessions/{sid}/tokens", { timeout: 30_000 }, () => {
  it("answers 201 { token, expiresAt } with the ttl asked for (default 900 s); lanes are optional", async () => {
    const { key, sessionId } = await tokenSetup("bt_mint");
    const before = Date.now();
    const short = await mint(sessionId, key, { scopes: ["watch"], lanes: ["main"], ttlSeconds: 60 });
    const fallback = await mint(sessionId, key, { scopes: ["watch", "prompt"] });
    const after = Date.now();
    expect(Object.keys(short).sort()).toEqual(["expiresAt", "token"]);
    expect(short.token).toMatch(/^bt_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(short.expiresAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(short.expiresAt).toBeLessThanOrEqual(after + 60_000);
    expect(fallback.expiresAt).toBeGreaterThanOrEqual(before + BROWSER_TOKEN_LIMITS.defaultTtlSeconds * 1000);
    expect(fallback.expiresAt).toBeLessThanOrEqual(after + BROWSER_TOKEN_LIMITS.defaultTtlSeconds * 1000);
    // The token names the minting key by its hash only: the key never appears in it.
    const [claims] = short.token.slice(3).split(".");
    expect(atob((claims ?? "").replaceAll("-", "+").replaceAll("_", "/"))).not.toContain(key);
    expect((await mint(sessionId, key, { scopes: ["prompt"], ttlSeconds: BROWSER_TOKEN_LIMITS.maxTtlSeconds })).token).toMatch(/^bt_/);
  });

  it("refuses bad bodies with 400 ValidationFailed naming the field: ttl past an hour, scopes, lanes and their bounds", async () => {
    const { key, sessionId } = await tokenSetup("bt_bounds");
    const lane65 = "l".repeat(65);
    const tooMany = Array.from({ length: BROWSER_TOKEN_LIMITS.maxLanes + 1 }, (_, i) => `lane_${i}`);
    const cases: [unknown, string][] = [
      [{ scopes: ["watch"], ttlSeconds: 3601 }, "ttlSeconds"],
      [{ scopes: ["watch"], ttlSeconds: 0 }, "ttlSeconds"],
      [{ scopes: ["watch"], ttlSeconds: 1.5 }, "ttlSeconds"],
      [{ scopes: ["watch"], ttlSeconds: "60" }, "ttlSeconds"],
      [{}, "scopes"],
      [{ scopes: [] }, "scopes"],
      [{ scopes: ["admin"] }, "scopes"],
      [{ scopes: ["watch", "prompt", "watch"] }, "scopes"],
      [{ scopes: ["watch"], lanes: [] }, "lanes"],
      [{ scopes: ["watch"], lanes: tooMany }, "lanes"],
      [{ scopes: ["watch"], lanes: [lane65] }, "lanes"],
      [{ scopes: ["watch"], lanes: ["a/b"] }, "lanes"],
      [{ scopes: ["watch"], session: "other" }, "session"],
      [["watch"], "scopes"],
    ];
    for (const [body, field] of cases) {
      const response = await mintRequest(sessionId, key, body);
      const answer = await response.json<{ error: { code: string; message: string } }>();
      expect({ body, status: response.status, code: answer.error.code }).toEqual({ body, status: 400, code: "ValidationFailed" });
      expect(answer.error.message, JSON.stringify(body)).toContain(field);
    }
    const notJson = await call(`/v1/sessions/${sessionId}/tokens`, { rawBody: "{", token: key, headers: { "content-type": "application/json" } });
    expect(await outcome(notJson)).toEqual({ status: 400, code: "ValidationFailed" });
    const empty = await call(`/v1/sessions/${sessionId}/tokens`, { method: "POST", token: key });
    expect(await outcome(empty)).toEqual({ status: 400, code: "ValidationFailed" });
    // Exactly at the bounds is accepted.
    const atBounds = { scopes: ["watch"], lanes: tooMany.slice(1).map((_, i) => `${"x".repeat(60)}_${i}`), ttlSeconds: 3600 };
    expect((await mintRequest(sessionId, key, atBounds)).status).toBe(201);
  });

  it("is a tenant key's: 404 for an unknown session or another tenant's, 401 without a key, 403 TokenScope for a browser token", async () => {
    const { key, sessionId } = await tokenSetup("bt_who");
    const other = await newTenant("bt_who_other");
    expect(await outcome(await mintRequest("s_nobody", key, { scopes: ["watch"] }))).toEqual({ status: 404, code: "SessionNotFound" });
    expect(await outcome(await mintRequest(sessionId, other.key, { scopes: ["watch"] }))).toEqual({ status: 404, code: "SessionNotFound" });
    expect(await outcome(await call(`/v1/sessions/${sessionId}/tokens`, { body: { scopes: ["watch"] } }))).toEqual({ status: 401, code: "Unauthenticated" });
    const { token } = await mint(sessionId, key, { scopes: ["watch", "prompt"] });
    expect(await outcome(await mintRequest(sessionId, token, { scopes: ["watch"] }))).toEqual({ status: 403, code: "TokenScope" });
  });

  it("never replays a token: a repeat with the same Idempotency-Key is 409 KeySecretNotReplayed, another body 422", async () => {
    const { key, sessionId } = await tokenSetup("bt_idem");
    const headers = { "idempotency-key": "mint-1" };
    const body = { scopes: ["watch"], ttlSeconds: 120 };
    const first = await mintRequest(sessionId, key, body, headers);
    expect(first.status).toBe(201);
    const { token, expiresAt } = await first.json<{ token: string; expiresAt: number }>();
    const repeat = await mintRequest(sessionId, key, body, headers);
    expect(repeat.status).toBe(409);
    expect(repeat.headers.get("idempotency-replayed")).toBe("true");
    const text = await repeat.text();
    expect(text).not.toContain(token);
    expect(JSON.parse(text)).toMatchObject({ error: { code: "KeySecretNotReplayed", details: { expiresAt } } });
    expect(await errorCode(await mintRequest(sessionId, key, { scopes: ["prompt"] }, headers))).toBe("IdempotencyConflict");
    // A refused mint claims nothing: the key stays free for a valid body.
    const fresh = { "idempotency-key": "mint-2" };
    expect((await mintRequest(sessionId, key, { scopes: ["watch"], ttlSeconds: 9999 }, fresh)).status).toBe(400);
    expect((await mintRequest(sessionId, key, body, fresh)).status).toBe(201);
  });

  it("a deployment without SECRETS_KEY mints nothing: 503 NotConfigured", async () => {
    const { key, sessionId } = await tokenSetup("bt_nokey");
    const request = new Request(`http://api.test/v1/sessions/${sessionId}/tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ scopes: ["watch"] }),
    });
    const response = await createApp().fetch(request, { ...env, SECRETS_KEY: "" }, createExecutionContext());
    expect(await outcome(response)).toEqual({ status: 503, code: "NotConfigured" });
  });
});
