import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import type { HarnessEvent } from "../../schema/lane.ts";
import { createSession } from "../helpers/sessions.ts";
import { SCRIPT } from "./helpers.ts";
import { acceptPrompt, attach, settledRecord, until } from "./crash-rig.ts";
import { deliveredSoFar, foldEvents } from "./watch-fold.ts";

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

  it("live updates follow the host's pacing per lane: a wide spacing sends fewer, larger deltas with the same text", async () => {
    const { stub } = await createSession("delta-pacing");
    const result = await runInDurableObject(stub, async (instance: SessionObject) => {
      await appendScriptSteps(instance.session(), [{ text: WORDS, chunkMs: 2 }, { text: WORDS, chunkMs: 2 }]);
      const asked: string[] = [];
      // Lane "paced" is a large audience (one update a minute); "main" keeps the wire throttle.
      const rig = await attach(instance, { liveUpdateIntervalMs: (lane) => (asked.push(lane), lane === "paced" ? 60_000 : 50) });
      const updates = new Map<string, string[]>();
      rig.harness.events.on("message_update", (event) => {
        const texts = updates.get(event.lane) ?? [];
        texts.push(event.delta.blocks.map((block) => (block.t === "text" ? (block.replace ?? block.append ?? "") : "")).join(""));
        updates.set(event.lane, texts);
      });
      const answers: Record<string, string> = {};
      for (const name of ["main", "paced"]) {
        const lane = await rig.harness.lane(name);
        await lane.setModel(SCRIPT);
        const record = settledRecord(await lane.drive({ operationId: await acceptPrompt(lane, "stream please") }));
        answers[name] = JSON.stringify(record.status);
      }
      await deliveredSoFar(rig.harness);
      return { asked: [...new Set(asked)].sort(), main: updates.get("main") ?? [], paced: updates.get("paced") ?? [], answers };
    });
    expect(result.asked).toEqual(["main", "paced"]);
    expect(result.answers).toEqual({ main: '"completed"', paced: '"completed"' });
    // At most the first update goes out; a minute's spacing holds every later delta for message_end.
    expect(result.paced.length).toBeLessThanOrEqual(1);
    expect(result.main.length).toBeGreaterThan(1);
    // Whatever the pacing, the deltas continue one another through the same answer (nothing repeated).
    for (const texts of [result.main, result.paced]) expect(WORDS.includes(texts.join(""))).toBe(true);
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
