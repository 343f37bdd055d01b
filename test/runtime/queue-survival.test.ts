import { describe, expect, it } from "vitest";
import { pendingEntry } from "../../harness/session/builtin-addresses.ts";
import { withRig } from "./helpers.ts";
import { expectOk, queued, settledRecord, transcript, user, withObject } from "./queue-helpers.ts";

// Queued input survives terminals and process loss (reference §3.7: no terminal drain).

describe("queued input survives", () => {
  it("run completion: a nextRun queued mid-run is never consumed and stays queued after the run", async () => {
    const result = await withRig(async ({ session, harness }) => {
      const lane = await harness.lane("main");
      const run = expectOk(await lane.accept({ kind: "prompt", prompt: "current" }));
      const next = expectOk(await lane.nextRun("later")).entryId;
      const record = settledRecord(await lane.drive({ operationId: run.operationId, waitForRetry: true }));
      const after = { entries: transcript(lane), queue: queued(lane), payload: session.getValue(pendingEntry(next)) !== undefined };
      const second = settledRecord(await lane.prompt(""));
      return { record, after, second, entries: transcript(lane), queue: queued(lane) };
    });
    expect(result.record.status).toBe("completed");
    expect(result.after).toEqual({ entries: ["user:current", "assistant:current"], queue: ["nextRun:later"], payload: true });
    expect(result.second.status).toBe("completed");
    expect(result.entries).toEqual(["user:current", "assistant:current", "user:later", "assistant:later"]);
    expect(result.queue).toEqual([]);
  });

  it("a harness close and re-create: the queue (ids, kinds, payloads, order) is restored", async () => {
    const result = await withObject(async (first, reopen) => {
      const lane = await first.harness.lane("main");
      const hold = expectOk(await lane.accept({ kind: "prompt", prompt: "hold" }));
      expectOk(await lane.appendCustomEntry("note", { keep: [1, 2] }));
      expectOk(await lane.nextRun("next"));
      expectOk(await lane.requestAbort(hold.operationId));
      expectOk(await lane.steer("steer"));
      expectOk(await lane.followUp("follow"));
      expectOk(await lane.appendMessage(user("written")));
      const before = lane.inspectExecution().queues;
      await first.harness.close();

      const second = await reopen();
      const restored = await second.harness.lane("main");
      const after = restored.inspectExecution().queues;
      const record = settledRecord(await restored.drive({ operationId: hold.operationId }));
      const survived = queued(restored);
      expectOk(await restored.accept({ kind: "prompt", prompt: "" }));
      return { before, after, open: second.open, record, survived, entries: transcript(restored), queue: queued(restored) };
    });
    expect(result.after).toEqual(result.before);
    expect(result.after.map((item) => item.kind)).toEqual(["write", "nextRun", "steer", "followUp", "write"]);
    expect(result.open).toMatchObject([{ lane: "main", aborting: true }]);
    expect(result.record.status).toBe("aborted");
    expect(result.survived).toEqual(["write:note", "nextRun:next", "steer:steer", "followUp:follow", "write:written"]);
    expect(result.entries).toEqual(["user:hold", "custom:note", "user:next", "user:steer", "user:follow", "user:written"]);
    expect(result.queue).toEqual([]);
  });
});
