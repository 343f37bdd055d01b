import { describe, expect, it } from "vitest";
import { pendingAssistantFrames } from "../../harness/session/builtin-addresses.ts";
import { scriptedCursor } from "../../models/scripted/script-source.ts";
import { brief, deferred, heldHook, kinds, messageOf, nextEvent, ofType, settledRecord, transcript, unwrap, withDriveRig, type DriveRig } from "./drive-helpers.ts";
import { leftoverOperationValues } from "./helpers.ts";

// The effect gate against abort (reference §4.3), both orders: admission first (the effect runs,
// the committed marker then pulls its signal) and abort first (admission is closed synchronously;
// a later admit is refused and the procedure reconciles). ARCHITECTURE D14.3: the marker commits,
// then operation_abort is bound, then the gate is signalled.

const TEXT = "one two three four five six seven eight nine ten";

/** Accepts a prompt, drives it, and reports the end state after `during` ran mid-pass. */
async function abortedRun(rig: DriveRig, during: (abort: () => Promise<void>) => Promise<void> | void) {
  const lane = await rig.harness.lane("main");
  const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
  const driving = lane.drive({ operationId });
  await during(async () => {
    unwrap(await lane.requestAbort(operationId));
  });
  const record = settledRecord(await driving);
  const entries = transcript(lane);
  const last = entries.at(-1);
  return {
    operationId,
    record,
    entries,
    briefs: entries.map((entry) => brief(messageOf(entry))),
    last: last && messageOf(last),
    tip: lane.getTipId(),
    cursor: rig.session.getValue(scriptedCursor),
    frames: last ? rig.session.readList(pendingAssistantFrames(operationId, last.id)) : [],
    leftovers: leftoverOperationValues(rig.session, operationId),
    events: rig.events,
  };
}

describe("abort mid-stream (admission first)", () => {
  it("cuts the stream, stores the partial assistant as aborted and ends the run aborted", async () => {
    const run = await withDriveRig(
      async (rig) =>
        abortedRun(rig, async (abort) => {
          await nextEvent(rig.harness, (event) => event.type === "message_update");
          await abort();
        }),
      { steps: [{ text: TEXT, chunkMs: 20 }] },
    );
    expect(run.record).toMatchObject({ status: "aborted", tipId: run.tip });
    expect(run.last).toMatchObject({ role: "assistant", stopReason: "aborted" });
    const partial = run.last?.role === "assistant" ? run.last.content.map((block) => (block.type === "text" ? block.text : "")).join("") : "";
    expect(partial.length).toBeLessThan(TEXT.length);
    expect(TEXT.startsWith(partial)).toBe(true);
    expect(run.last?.role === "assistant" && run.last.errorMessage).toBeTruthy();
    const all = kinds(run.events);
    // D14.3: operation_abort is bound before the gate is signalled, so it precedes the cut stream.
    expect(all.slice(all.indexOf("operation_abort"))).toEqual(["operation_abort", "message_end", "entry_added", "usage", "stats", "turn_end", "run_end"]);
    expect(ofType(run.events, "turn_end")).toMatchObject([{ message: { stopReason: "aborted" } }]);
    expect(ofType(run.events, "run_end")).toMatchObject([{ status: "aborted" }]);
    expect(run.frames).toEqual([]);
    expect(run.leftovers).toEqual([]);
  });

  it("an abort while after_response is awaiting settles the raw response as aborted", async () => {
    const run = await withDriveRig(
      async (rig) => {
        const held = heldHook();
        rig.harness.hooks.on("after_response", (_event, { signal }) => held.hold(signal));
        const result = await abortedRun(rig, async (abort) => {
          await held.entered;
          await abort();
          held.release();
        });
        return { ...result, hookSignalAborted: held.signal()?.aborted };
      },
      { steps: [{ text: "complete answer" }] },
    );
    expect(run.hookSignalAborted).toBe(true);
    expect(run.record.status).toBe("aborted");
    expect(run.briefs).toEqual(["user: go", "assistant(aborted): complete answer"]);
    expect(run.leftovers).toEqual([]);
  });
});

describe("abort first: the provider is never called", () => {
  it("an abort while before_request is awaiting: the hook's signal is pulled, the stream is refused", async () => {
    const run = await withDriveRig(
      async (rig) => {
        const held = heldHook();
        rig.harness.hooks.on("before_request", (_event, { signal }) => held.hold(signal));
        const result = await abortedRun(rig, async (abort) => {
          await held.entered;
          await abort();
          held.release();
        });
        return { ...result, hookSignalAborted: held.signal()?.aborted };
      },
      { steps: [{ text: "never" }] },
    );
    expect(run.hookSignalAborted).toBe(true);
    expect(run.record.status).toBe("aborted");
    expect(run.cursor).toBeUndefined();
    expect(run.briefs).toEqual(["user: go"]);
    // The request intent never committed: no turn was opened.
    expect(kinds(run.events).filter((type) => type.startsWith("turn_") || type === "usage")).toEqual([]);
    expect(run.leftovers).toEqual([]);
  });

  it("an abort while transform_context is awaiting refuses before_request (and the provider)", async () => {
    const run = await withDriveRig(
      async (rig) => {
        const held = heldHook();
        let beforeRequest = 0;
        rig.harness.hooks.on("transform_context", (_event, { signal }) => held.hold(signal));
        rig.harness.hooks.on("before_request", () => {
          beforeRequest++;
        });
        const result = await abortedRun(rig, async (abort) => {
          await held.entered;
          await abort();
          held.release();
        });
        return { ...result, beforeRequest };
      },
      { steps: [{ text: "never" }] },
    );
    expect(run.beforeRequest).toBe(0);
    expect(run.record.status).toBe("aborted");
    expect(run.cursor).toBeUndefined();
    expect(run.briefs).toEqual(["user: go"]);
  });

  it("an abort between the request intent and the stream admission settles a synthetic aborted response", async () => {
    const run = await withDriveRig(
      async (rig) =>
        abortedRun(rig, (abort) => {
          // turn_start is bound by the intent commit, and the pass awaits its delivery before it
          // admits the stream: an abort requested from the listener closes admission first.
          const requested = deferred<Promise<void>>();
          const off = rig.harness.events.on("turn_start", () => {
            off();
            requested.resolve(abort());
          });
          return requested.promise.then((marker) => marker);
        }),
      { steps: [{ text: "never" }] },
    );
    expect(run.record.status).toBe("aborted");
    expect(run.cursor).toBeUndefined();
    expect(run.last).toMatchObject({ role: "assistant", stopReason: "aborted", content: [], api: "unknown", provider: "scripted", model: "script" });
    expect(run.last?.role === "assistant" && run.last.usage.totalTokens).toBe(0);
    const all = kinds(run.events);
    expect(all.slice(all.indexOf("turn_start"))).toEqual(["turn_start", "operation_abort", "entry_added", "usage", "stats", "turn_end", "run_end"]);
    expect(run.leftovers).toEqual([]);
  });

  it("an abort while before_run is awaiting drops its injected messages and ends aborted", async () => {
    const run = await withDriveRig(
      async (rig) => {
        const held = heldHook();
        rig.harness.hooks.on("before_run", async (_event, { signal }) => {
          await held.hold(signal);
          return { messages: [{ role: "user", content: "injected", timestamp: Date.now() }] };
        });
        return abortedRun(rig, async (abort) => {
          await held.entered;
          await abort();
          held.release();
        });
      },
      { steps: [{ text: "never" }] },
    );
    expect(run.record.status).toBe("aborted");
    expect(run.briefs).toEqual(["user: go"]);
    expect(run.cursor).toBeUndefined();
  });
});

describe("abort reconciles a tool batch", () => {
  it("planned calls settle as 'cancelled before completion' results, then the run ends aborted", async () => {
    const run = await withDriveRig(
      async (rig) =>
        abortedRun(rig, (abort) => {
          // The settlement that enters `tools` binds usage; the pass awaits its delivery.
          const requested = deferred<Promise<void>>();
          const off = rig.harness.events.on("usage", () => {
            off();
            requested.resolve(abort());
          });
          return requested.promise.then((marker) => marker);
        }),
      { steps: [{ toolCalls: [{ name: "lookup", arguments: {} }] }, { text: "never" }] },
    );
    expect(run.record.status).toBe("aborted");
    expect(run.briefs).toEqual(["user: go", "assistant(toolUse): [call lookup]", "toolResult(lookup, error): The tool call was cancelled before completion."]);
    expect(run.record.tipId).toBe(run.tip);
    const all = kinds(run.events);
    expect(all.slice(all.indexOf("operation_abort"))).toEqual([
      "operation_abort",
      "tool_start",
      "tool_end",
      "message_start",
      "message_end",
      "entry_added",
      "stats",
      "turn_end",
      "run_end",
    ]);
    expect(run.leftovers).toEqual([]);
  });
});
