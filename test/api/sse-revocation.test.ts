import { describe, expect, it } from "vitest";
import { adminToken, call } from "./helpers.ts";
import { mint } from "./browser-token-helpers.ts";
import { eventsOf, isRunEndEvent, openEvents, snapshotOf } from "./sse-helpers.ts";
import { prompt, watchSetup } from "./watch-helpers.ts";

// SSE streams are bounded and closed like watch sockets (docs/api-watch.md "Streaming over HTTP
// (SSE)"): a revoked key ends them; a browser token with the `watch` scope opens them as EventSource does.

describe("lane event streams: revocation and browser tokens", { timeout: 30_000 }, () => {
  it("ends an open stream with an `error` event (1008) when its key is revoked", async () => {
    const { tenantId, key, keyId, sessionPath } = await watchSetup("sse_revoke");
    const { stream } = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}` });
    snapshotOf(await stream.next());
    const revoked = await call(`/v1/admin/tenants/${tenantId}/keys/${keyId}`, { method: "DELETE", token: adminToken() });
    expect(revoked.status).toBeLessThan(300);
    const rest = (await stream.ended()).filter((item) => item.event !== "comment");
    expect(rest.at(-1)?.event).toBe("error");
    expect(JSON.parse(rest.at(-1)?.data ?? "{}")).toEqual({ code: 1008, reason: "The API key was revoked" });
    // A reconnect (as EventSource would) is refused.
    expect((await call(`${sessionPath}/lanes/main/events`, { token: key })).status).toBe(401);
  });

  it("streams to an EventSource-style GET with `?access_token=` (a `watch` token); a `prompt`-only token is refused", async () => {
    const { key, stub, sessionId, sessionPath } = await watchSetup("sse_token");
    const { token } = await mint(sessionId, key, { scopes: ["watch"], lanes: ["main"], ttlSeconds: 60 });
    const { stream } = await openEvents(`${sessionPath}/lanes/main/events?access_token=${token}`);
    snapshotOf(await stream.next());
    const runId = await prompt(stub, "main", "seen by the page");
    expect(eventsOf(await stream.until(isRunEndEvent(runId))).at(-1)?.event).toMatchObject({ type: "run_end", runId });
    await stream.cancel();
    const { token: promptOnly } = await mint(sessionId, key, { scopes: ["prompt"], ttlSeconds: 60 });
    expect((await call(`${sessionPath}/lanes/main/events?access_token=${promptOnly}`)).status).toBe(403);
    expect((await call(`${sessionPath}/lanes/other/events?access_token=${token}`)).status).toBe(403);
  });
});
