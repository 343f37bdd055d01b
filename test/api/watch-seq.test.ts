import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { toWire } from "../../schema/wire.ts";
import { unwrap } from "../helpers/sessions.ts";
import { call } from "./helpers.ts";
import { objectOf, tenantWithSession } from "./session-helpers.ts";

// The session's event counter numbers every event from the first one of a fresh object, watched or
// not: a REST snapshot's seq and a socket's event seqs always come from the same count.

describe("watch seq on a fresh object", () => {
  it("counts the events of a run that nobody watched, so the next snapshot's seq is past them", async () => {
    const { tenantId, sid, key, base } = await tenantWithSession("seqfresh");
    expect((await call(`${base}/lanes/main`, { method: "PUT", body: {}, token: key })).status).toBe(201);
    await abortAllDurableObjects();
    const stub = objectOf(tenantId, sid);
    const counted = await runInDurableObject(stub, async (instance: SessionObject, state) => {
      const stored: unknown = state.storage.kv.get("watch.seq.reserved");
      const before = typeof stored === "number" ? stored : 0;
      const harness = await instance.harness();
      let events = 0;
      harness.events.on("*", () => void events++);
      const admission = unwrap(await instance.acceptOperation("main", toWire({ kind: "prompt", prompt: "nobody watches" })));
      unwrap(await instance.operation("main", admission.operationId, 10_000));
      await harness.events.emitBatch([]);
      return { before, events };
    });
    const response = await call(`${base}/lanes/main/snapshot`, { token: key });
    expect(response.status).toBe(200);
    const { seq } = await response.json<{ seq: number }>();
    expect(counted.events).toBeGreaterThan(5);
    expect(seq - counted.before).toBe(counted.events);
  });
});
