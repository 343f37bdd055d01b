import { describe, expect, it } from "vitest";
import { CaptureStore, canonicalJson, resolveCapture } from "../../harness/runtime/captures.ts";
import { readOperation } from "../../harness/runtime/operation-codec.ts";
import { value } from "../../harness/session/addresses.ts";
import { ECHO } from "./helpers.ts";
import { settledRecord, unwrap, withDriveRig } from "./drive-helpers.ts";

// Content-addressed captures (QUALITY P3): an operation references its captured settings and its
// generation's configuration by key; equal content is stored once and never rewritten.

describe("captures", () => {
  it("canonical JSON ignores key order, so equal content has one key", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { y: 1, x: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[2,{"x":2,"y":1}]},"b":1}');
  });

  it("stores settings once across operations; a changed setting is a new capture; open operations read theirs back", async () => {
    const result = await withDriveRig(
      async ({ harness, session }) => {
        const lane = await harness.lane("main");
        const captures = () => session.scanValues(value<unknown>("pi.capture", "")).length;
        for (let turn = 0; turn < 3; turn++) {
          const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: `turn ${turn}` }));
          settledRecord(await lane.drive({ operationId }));
        }
        const afterThreeRuns = captures();
        await harness.updateSettings({ steeringMode: "one-at-a-time" });
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "with new settings" }));
        const open = readOperation(session, operationId);
        settledRecord(await lane.drive({ operationId }));
        return { afterThreeRuns, afterChange: captures(), openSettings: open?.state.settings };
      },
      { model: ECHO },
    );
    // RunSettings and the generation's capture (lane configuration, request options and model
    // limits): two captures for three runs; new settings add one.
    expect(result.afterThreeRuns).toBe(2);
    expect(result.afterChange).toBe(3);
    expect(result.openSettings?.steeringMode).toBe("one-at-a-time");
  });

  it("never overwrites a capture with other content under the same key (a collision takes the next key)", async () => {
    const result = await withDriveRig(async ({ session }) => {
      const store = new CaptureStore();
      const first = await session.mutate((m) => {
        const captured = store.capture(m, { a: 1 });
        m.commit(captured.writes);
        return captured.key;
      });
      // Simulate a collision: other content already sits under the key { b: 2 } would take.
      const colliding = new CaptureStore().capture({ getValue: () => undefined }, { b: 2 }).key;
      await session.setValue(value<unknown>("pi.capture", colliding), { something: "else" });
      const second = await session.mutate((m) => {
        const captured = store.capture(m, { b: 2 });
        m.commit(captured.writes);
        return captured.key;
      });
      return { first, colliding, second, stored: resolveCapture(session, second), kept: resolveCapture(session, colliding) };
    });
    expect(result.second).toBe(`${result.colliding}.1`);
    expect(result.stored).toEqual({ b: 2 });
    expect(result.kept).toEqual({ something: "else" });
    expect(result.first).not.toBe(result.colliding);
  });
});
