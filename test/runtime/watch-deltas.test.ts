import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session-object.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import type { HarnessEvent } from "../../schema/lane.ts";
import { createSession } from "../helpers/sessions.ts";
import { SCRIPT } from "./helpers.ts";
import { acceptPrompt, attach, deliveredSoFar, foldEvents, settledRecord, until } from "./invariants.ts";

// message_update carries what changed (a delta), not the whole partial again. A capture first sends
// the update its watchers have not had yet, so a replica folded from any earlier snapshot equals a
// snapshot captured mid-stream, streaming message included.

const WORDS = Array.from({ length: 240 }, (_, i) => `word${i}`).join(" ");

describe("streaming deltas", () => {
  it("a replica folded from before the stream equals fresh snapshots taken while it streams, and the final one", async () => {
    const { stub } = await createSession("deltas");
    const result = await runInDurableObject(stub, async (instance: SessionObject) => {
      await appendScriptSteps(instance.session(), [{ text: WORDS, chunkMs: 4 }]);
      const rig = await attach(instance);
      const lane = await rig.harness.lane("main");
      await lane.setModel(SCRIPT);
      const watch = await lane.watch();
      let replica = watch.snapshot;
      watch.start((event) => void (replica = foldEvents(replica, [event])));
      const operationId = await acceptPrompt(lane, "stream please");
      const pass = lane.drive({ operationId });
      const midStream: { replica: unknown; fresh: unknown }[] = [];
      for (let probe = 0; probe < 3; probe++) {
        const seen = rig.events.filter((event) => event.type === "message_update").length;
        await until(() => rig.events.filter((event) => event.type === "message_update").length > seen, "another update");
        const fresh = await lane.watch();
        fresh.unsubscribe();
        await deliveredSoFar(rig.harness);
        midStream.push({ replica, fresh: fresh.snapshot });
      }
      settledRecord(await pass);
      await deliveredSoFar(rig.harness);
      const final = await lane.watch();
      final.unsubscribe();
      return { midStream, replica, final: final.snapshot };
    });
    for (const { replica, fresh } of result.midStream) expect(replica).toStrictEqual(fresh);
    expect(result.replica).toStrictEqual(result.final);
  });

  it("the bytes of a stream's updates grow with the answer, not with its square", async () => {
    const { stub } = await createSession("delta-bytes");
    const result = await runInDurableObject(stub, async (instance: SessionObject) => {
      await appendScriptSteps(instance.session(), [{ text: WORDS, chunkMs: 4 }]);
      const rig = await attach(instance);
      const lane = await rig.harness.lane("main");
      await lane.setModel(SCRIPT);
      const updates: HarnessEvent[] = [];
      rig.harness.events.on("message_update", (event) => void updates.push(event));
      const operationId = await acceptPrompt(lane, "stream please");
      settledRecord(await lane.drive({ operationId }));
      return { updates: updates.length, bytes: updates.reduce((sum, event) => sum + JSON.stringify(event).length, 0) };
    });
    expect(result.updates).toBeGreaterThan(5);
    // Whole partials per update would send about updates × answer / 2 (here tens of KB).
    expect(result.bytes).toBeLessThan(WORDS.length + 250 * result.updates);
  });
});
