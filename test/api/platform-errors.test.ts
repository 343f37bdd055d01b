import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { platformFailure } from "../../durable-objects/rpc/platform-errors.ts";
import { call } from "./helpers.ts";
import { objectOf, scriptedLane, SLOW_STEP, tenantWithSession } from "./session-helpers.ts";

// Platform errors map to documented codes (ARCHITECTURE D16): an object that was reset or is
// overloaded is 503 `Overloaded` with `Retry-After`, never a 500. The reset is a real one: the test
// resets the object (`ctx.abort()`, reached through the test pool's runInDurableObject, not any
// route) while a request is waiting on it.

/** An Error shaped like the runtime's: message plus the flags it sets on infrastructure errors. */
const platformError = (message: string, flags: Record<string, boolean>): Error => Object.assign(new Error(message), flags);

describe("platform errors", () => {
  it("a Durable Object reset under a waiting request answers 503 Overloaded with Retry-After, logged under the server's request id", async () => {
    const { tenantId, key, base, sid } = await tenantWithSession("reset");
    await scriptedLane(tenantId, sid, [SLOW_STEP]);
    const accepted = await call(`${base}/lanes/main/operations`, { body: { kind: "prompt", prompt: "go" }, token: key });
    expect(accepted.status).toBe(202);
    const { operationId } = await accepted.json<{ operationId: string }>();
    const warnings = vi.spyOn(console, "warn");
    const waiting = call(`${base}/lanes/main/operations/${operationId}?wait=30`, { token: key, headers: { "x-request-id": "client-id-7" } });
    // Bounded: the long poll is in the object once the operation reports it is running.
    for (let i = 0; i < 100; i++) {
      const state = await (await call(`${base}/lanes/main/operations/${operationId}`, { token: key })).json<{ state: string }>();
      if (state.state === "active") break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await runInDurableObject(objectOf(tenantId, sid), (_instance: SessionObject, state) => state.abort("reset by the test")).catch(() => undefined);
    const answer = await waiting;
    expect(answer.status).toBe(503);
    expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(0);
    const body = await answer.json<{ error: { requestId: string } }>();
    expect(body).toMatchObject({ error: { code: "Overloaded", details: { reason: "reset" }, clientRequestId: "client-id-7" } });
    expect(body.error.requestId).toBe(answer.headers.get("x-request-id"));
    const logged = warnings.mock.calls.map(([line]) => String(line)).find((line) => line.includes(body.error.requestId));
    warnings.mockRestore();
    expect(JSON.parse(logged ?? "{}")).toMatchObject({ requestId: body.error.requestId, clientRequestId: "client-id-7", platformError: "reset by the test" });
    // The object comes back on the next request, storage intact.
    expect((await call(`${base}/lanes/main`, { token: key })).status).toBe(200);
  });

  it("classifies the runtime's overloaded, retryable and reset errors; anything else stays a bug", () => {
    const overloaded = platformError("Durable Object is overloaded. Too many requests queued.", { overloaded: true, retryable: false });
    expect(platformFailure(overloaded)).toMatchObject({ code: "Overloaded", details: { reason: "overloaded", retryAfterSeconds: expect.any(Number) } });
    const transient = platformError("Network connection lost.", { retryable: true });
    expect(platformFailure(transient)).toMatchObject({ code: "Overloaded", details: { reason: "transient", retryAfterSeconds: 1 } });
    const reset = platformError("Durable Object reset because its code was updated.", { durableObjectReset: true });
    expect(platformFailure(reset)).toMatchObject({ code: "Overloaded", details: { reason: "reset", retryAfterSeconds: 1 } });
    expect(platformFailure(new Error("Serialized RPC arguments or return values are limited to 32MiB"))).toBeUndefined();
    expect(platformFailure(new TypeError("x is undefined"))).toBeUndefined();
    expect(platformFailure("a string")).toBeUndefined();
  });
});
