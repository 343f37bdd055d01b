import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../durable-objects/tenant/tenant-object.ts";
import { fromWire } from "../../schema/wire.ts";
import { signBrowserToken } from "../../worker/middleware/browser-tokens.ts";
import { mint, outcome, tokenSetup } from "./browser-token-helpers.ts";
import { adminToken, call, errorCode, newTenant, untilRefused } from "./helpers.ts";
import { openEvents, snapshotOf } from "./sse-helpers.ts";
import { connect, expectSnapshot, upgrade } from "./watch-helpers.ts";

// Presenting a browser token through the real app (docs/api-tenants.md "Browser tokens"): the
// three ways to send it, what its scopes allow and refuse, expiry and forgery, and the key that
// minted it (revoked: the token and its sockets end with it).

describe("presenting a browser token", { timeout: 30_000 }, () => {
  it("is accepted as a Bearer header, as ?access_token= on a GET, and as the bearer.<token> subprotocol (selected in the 101)", async () => {
    const { key, sessionPath, sessionId } = await tokenSetup("bta_ways");
    const { token } = await mint(sessionId, key, { scopes: ["watch"], lanes: ["main"] });
    expect((await call(`${sessionPath}/lanes/main/snapshot`, { token })).status).toBe(200);
    expect((await call(`${sessionPath}/lanes/main`, { token })).status).toBe(200);
    expect((await call(`${sessionPath}/lanes/main/snapshot?access_token=${token}`)).status).toBe(200);
    const socket = await connect(`${sessionPath}/lanes/main/watch`, { protocols: ["app.v1", `bearer.${token}`] });
    expect(socket.response.headers.get("sec-websocket-protocol")).toBe(`bearer.${token}`);
    await expectSnapshot(socket);
    socket.ws.close(1000);
    const byHeader = await connect(`${sessionPath}/lanes/main/watch`, token);
    await expectSnapshot(byHeader);
    byHeader.ws.close(1000);
  });

  it("takes ?access_token= on GETs only, and never a tenant key there", async () => {
    const { key, sessionPath, sessionId } = await tokenSetup("bta_query");
    const { token } = await mint(sessionId, key, { scopes: ["watch", "prompt"] });
    const prompt = await call(`${sessionPath}/lanes/main/prompt?access_token=${token}`, { body: { prompt: "hi" } });
    expect(await outcome(prompt)).toEqual({ status: 401, code: "Unauthenticated" });
    expect(await outcome(await call(`${sessionPath}/lanes/main/snapshot?access_token=${key}`))).toEqual({ status: 401, code: "Unauthenticated" });
    // A header wins over the query: a bad header is refused whatever the query holds.
    expect(await outcome(await call(`${sessionPath}/lanes/main/snapshot?access_token=${token}`, { headers: { authorization: "Basic eDp5" } }))).toEqual({
      status: 401,
      code: "Unauthenticated",
    });
  });
});

describe("a browser token's scopes", { timeout: 30_000 }, () => {
  it("a watch token reads its lane and nothing else: other sessions, other lanes, prompting and tenant routes are 403 TokenScope", async () => {
    const { key, sessionPath, sessionId, stub } = await tokenSetup("bta_watch", ["main", "side"]);
    const { token } = await mint(sessionId, key, { scopes: ["watch"], lanes: ["main"] });
    const otherSession = `${sessionId}_b`;
    expect((await call("/v1/sessions", { body: { id: otherSession }, token: key })).status).toBe(201);
    expect((await call(`/v1/sessions/${otherSession}/lanes/main`, { method: "PUT", token: key })).status).toBe(201);
    const refused: [string, Parameters<typeof call>[1]][] = [
      [`/v1/sessions/${otherSession}/lanes/main/snapshot`, {}],
      ["/v1/sessions/s_does_not_exist/lanes/main/snapshot", {}],
      [`${sessionPath}/lanes/side/snapshot`, {}],
      [`${sessionPath}/lanes/main/prompt`, { body: { prompt: "hi" } }],
      [`${sessionPath}/lanes/main/queue`, { body: { kind: "steer", message: "hi" } }],
      [`${sessionPath}/lanes/main/abort`, { method: "POST" }],
      [`${sessionPath}/lanes/main`, { method: "PUT" }],
      [`${sessionPath}/lanes/main/entries`, { body: { customType: "x", data: 1 } }],
      [`${sessionPath}/lanes`, {}],
      [sessionPath, {}],
      [`${sessionPath}/entries`, {}],
      [`${sessionPath}/watch`, {}],
      ["/v1/sessions", {}],
      ["/v1/me", {}],
      ["/v1/models", {}],
      [`${sessionPath}/tokens`, { body: { scopes: ["watch"] } }],
    ];
    for (const [path, init] of refused) expect({ path, ...(await outcome(await call(path, { ...init, token }))) }).toEqual({ path, status: 403, code: "TokenScope" });
    const lane = await call(`${sessionPath}/lanes/side/snapshot`, { token });
    expect(await lane.json()).toMatchObject({ error: { details: { lane: "side" } } });
    const scope = await call(`${sessionPath}/lanes/main/prompt`, { body: { prompt: "hi" }, token });
    expect(await scope.json()).toMatchObject({ error: { details: { scope: "prompt" } } });
    // The watch socket of another lane is refused before any upgrade.
    const upgradeRefused = await upgrade(`${sessionPath}/lanes/side/watch`, { "Sec-WebSocket-Protocol": `bearer.${token}` });
    expect({ status: upgradeRefused.status, socket: upgradeRefused.webSocket }).toEqual({ status: 403, socket: null });
    // Nothing was started by the refused prompts.
    expect(fromWire(await stub.laneExecution("main"))).toMatchObject({ ok: true, value: { current: null, lastOperationId: null, queues: [], tipId: null } });
  });

  it("a prompt token prompts, queues, aborts and reads operations on its lanes; it starts no other operation kind", async () => {
    const { key, sessionPath, sessionId } = await tokenSetup("bta_prompt");
    const { token } = await mint(sessionId, key, { scopes: ["prompt"] });
    const prompted = await call(`${sessionPath}/lanes/main/prompt`, { body: { prompt: "hello", wait: 10 }, token });
    expect(prompted.status).toBe(200);
    const { operationId } = await prompted.json<{ operationId: string }>();
    expect((await call(`${sessionPath}/lanes/main/operations/${operationId}`, { token })).status).toBe(200);
    expect((await call(`${sessionPath}/lanes/main/queue`, { body: { kind: "nextRun", message: "later" }, token })).status).toBe(201);
    expect(await outcome(await call(`${sessionPath}/lanes/main/abort`, { method: "POST", token }))).toEqual({ status: 422, code: "NoActiveOperation" });
    const compaction = await call(`${sessionPath}/lanes/main/operations`, { body: { kind: "compaction" }, token });
    expect(await compaction.json()).toMatchObject({ error: { code: "TokenScope", details: { kind: "compaction" } } });
    expect(await outcome(await call(`${sessionPath}/lanes/main/compact`, { body: {}, token }))).toEqual({ status: 403, code: "TokenScope" });
    expect((await call(`${sessionPath}/lanes/main/operations`, { body: { kind: "prompt", prompt: "again" }, token })).status).toBe(202);
    // A prompt token without watch reads no snapshot.
    expect(await outcome(await call(`${sessionPath}/lanes/main/snapshot`, { token }))).toEqual({ status: 403, code: "TokenScope" });
  });
});

describe("a browser token's validity", { timeout: 30_000 }, () => {
  it("an expired, forged or foreign-signed token is 401 Unauthenticated", async () => {
    const { tenantId, key, sessionPath, sessionId } = await tokenSetup("bta_expired");
    const claims = { t: tenantId, s: sessionId, k: await sha256Hex(key), p: ["watch" as const] };
    const expired = await signBrowserToken(env, { ...claims, e: Date.now() - 1 });
    const live = await signBrowserToken(env, { ...claims, e: Date.now() + 60_000 });
    expect((await call(`${sessionPath}/lanes/main/snapshot`, { token: live })).status).toBe(200);
    const foreign = await signBrowserToken({ SECRETS_KEY: "another-deployment-secret-of-32-characters" }, { ...claims, e: Date.now() + 60_000 });
    const [payload, signature = ""] = live.split(".");
    const forged = `${payload}.${signature.startsWith("A") ? "B" : "A"}${signature.slice(1)}`;
    const widened = `${(await signBrowserToken(env, { ...claims, p: ["watch", "prompt"], e: Date.now() + 60_000 })).split(".")[0]}.${signature}`;
    for (const token of [expired, foreign, forged, widened, "bt_x.y", `${live}x`]) {
      expect(await outcome(await call(`${sessionPath}/lanes/main/snapshot`, { token }))).toEqual({ status: 401, code: "Unauthenticated" });
    }
    const socket = await upgrade(`${sessionPath}/lanes/main/watch`, { "Sec-WebSocket-Protocol": `bearer.${expired}` });
    expect(socket.status).toBe(401);
  });

  it("a socket or event stream opened with a token is closed (1008) at its first event after the token expired; nothing reaches it after", async () => {
    const { tenantId, key, sessionPath, sessionId } = await tokenSetup("bta_expiry");
    const expiresAt = Date.now() + 1_500;
    const token = await signBrowserToken(env, { t: tenantId, s: sessionId, k: await sha256Hex(key), p: ["watch", "prompt"], e: expiresAt });
    const socket = await connect(`${sessionPath}/lanes/main/watch`, { protocols: [`bearer.${token}`] });
    await expectSnapshot(socket);
    const { stream } = await openEvents(`${sessionPath}/lanes/main/events?access_token=${token}`);
    snapshotOf(await stream.next());
    // Before the expiry, events arrive.
    const before = await call(`${sessionPath}/lanes/main/entries`, { body: { customType: "note", data: "before" }, token: key });
    expect(before.status).toBe(201);
    await socket.until((message) => message.type === "event" && message.event.type === "entry_added");
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 100));
    const after = await call(`${sessionPath}/lanes/main/entries`, { body: { customType: "note", data: "after" }, token: key });
    expect(after.status).toBe(201);
    expect(await socket.closed()).toMatchObject({ code: 1008, reason: expect.stringContaining("expired") });
    const rest = await stream.ended();
    expect(rest.filter((item) => item.event === "event" && item.data.includes('"after"'))).toEqual([]);
    expect(JSON.parse(rest.filter((item) => item.event === "error").at(-1)?.data ?? "null")).toMatchObject({ code: 1008 });
  });

  it("forged tokens count against the failed-authentication limit like wrong keys (429 past it)", async () => {
    const { tenantId, key, sessionPath, sessionId } = await tokenSetup("bta_limit");
    const headers = { "cf-connecting-ip": `198.51.100.${200 + Math.floor(Math.random() * 50)}` };
    const claims = { t: tenantId, s: sessionId, k: await sha256Hex(key), p: ["watch" as const], e: Date.now() + 60_000 };
    const foreign = await signBrowserToken({ SECRETS_KEY: "another-deployment-secret-of-32-characters" }, claims);
    const { before, refused } = await untilRefused(() => call(`${sessionPath}/lanes/main/snapshot`, { token: foreign, headers }), 130);
    expect(before.length).toBeGreaterThanOrEqual(59);
    expect(before.every((status) => status === 401)).toBe(true);
    expect(await errorCode(refused)).toBe("RateLimited");
  });

  it("dies with the key that minted it: refused at once after revocation here or elsewhere, and its open watch socket is closed 1008", async () => {
    const { tenantId, key, keyId, sessionPath, sessionId } = await tokenSetup("bta_revoke");
    const { token } = await mint(sessionId, key, { scopes: ["watch", "prompt"], lanes: ["main"] });
    const socket = await connect(`${sessionPath}/lanes/main/watch`, { protocols: [`bearer.${token}`] });
    await expectSnapshot(socket);
    expect((await call(`${sessionPath}/lanes/main/snapshot`, { token })).status).toBe(200);
    expect((await call(`/v1/admin/tenants/${tenantId}/keys/${keyId}`, { method: "DELETE", token: adminToken() })).status).toBe(204);
    expect((await socket.closed()).code).toBe(1008);
    expect(await outcome(await call(`${sessionPath}/lanes/main/snapshot`, { token }))).toEqual({ status: 401, code: "Unauthenticated" });
    expect((await upgrade(`${sessionPath}/lanes/main/watch`, { "Sec-WebSocket-Protocol": `bearer.${token}` })).status).toBe(401);
  });

  it("revoked on another isolate, its key is refused at once by an accepting route", async () => {
    const second = await tokenSetup("bta_elsewhere");
    const other = await call(`/v1/admin/tenants/${second.tenantId}/keys`, { body: { name: "minting" }, token: adminToken() });
    const minting = await other.json<{ keyId: string; key: string }>();
    const { token } = await mint(second.sessionId, minting.key, { scopes: ["prompt"] });
    expect((await call(`${second.sessionPath}/lanes/main/queue`, { body: { kind: "nextRun", message: "x" }, token })).status).toBe(201);
    expect(fromWire(await env.TENANTS.getByName(second.tenantId).revokeKey(minting.keyId))).toMatchObject({ ok: true });
    expect(await outcome(await call(`${second.sessionPath}/lanes/main/prompt`, { body: { prompt: "after" }, token }))).toEqual({ status: 401, code: "Unauthenticated" });
    // The tenant's other key is untouched.
    expect((await call(`${second.sessionPath}/lanes/main/snapshot`, { token: second.key })).status).toBe(200);
  });

  it("spends the tenant's request quota like its key: key and token requests count together, then both are 429", async () => {
    for (let attempt = 0; ; attempt++) {
      const minute = Math.floor(Date.now() / 60_000);
      const { tenantId, key } = await newTenant("bta_quota");
      expect((await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { requestsPerMinute: 6 }, token: adminToken() })).status).toBe(200);
      // Three requests of the minute: the session, its lane and the mint; 3 are left.
      const sessionPath = `/v1/sessions/s_quota_${attempt}`;
      expect((await call("/v1/sessions", { body: { id: `s_quota_${attempt}` }, token: key })).status).toBe(201);
      expect((await call(`${sessionPath}/lanes/main`, { method: "PUT", token: key })).status).toBe(201);
      const { token } = await mint(`s_quota_${attempt}`, key, { scopes: ["watch"] });
      const statuses: number[] = [];
      for (const credential of [token, key, token, token, key]) statuses.push((await call(`${sessionPath}/lanes/main/snapshot`, { token: credential })).status);
      // The quota counts per minute: a run that crossed into the next one is repeated (bounded).
      if (Math.floor(Date.now() / 60_000) !== minute && attempt < 3) continue;
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      return;
    }
  });
});
