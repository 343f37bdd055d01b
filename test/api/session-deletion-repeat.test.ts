import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { shardOf } from "../../durable-objects/session/due-work/deferred-registrations.ts";
import { call, newTenant } from "./helpers.ts";
import { blockSessionRows } from "./deferred-helpers.ts";

// docs/data.md "One end user's sessions": "At once: the matched sessions
// leave listings and searches (GET /v1/sessions), and a repeat of the DELETE matches only what is
// still listed ({"matched":0})."

describe("DELETE /v1/sessions?metadata repeated", () => {
  it("a repeat of the DELETE while the matched sessions wait in the queue answers matched 0", async () => {
    const { tenantId, key } = await newTenant("rv_del_repeat");
    expect((await call("/v1/sessions", { token: key, body: { id: "u1_a", metadata: { user: "u1" } } })).status).toBe(201);
    // Its deletion cannot complete yet (its shard refuses), so it stays queued, as any session does until its turn.
    await blockSessionRows(env.DEFERRED_INDEX.getByName(shardOf(`${tenantId}:u1_a`)), `${tenantId}:u1_a`, true);
    const first = await call("/v1/sessions?metadata.user=u1", { method: "DELETE", token: key });
    expect(await first.json()).toEqual({ matched: 1 });
    const listed = await (await call("/v1/sessions?metadata.user=u1", { token: key })).json<{ items: unknown[] }>();
    expect(listed.items).toEqual([]);
    const repeat = await call("/v1/sessions?metadata.user=u1", { method: "DELETE", token: key });
    expect(await repeat.json()).toEqual({ matched: 0 });
  });
});
