import { readOperation } from "../../harness/runtime/operation-codec.ts";
import { describe, expect, it } from "vitest";
import { types, withRig } from "./helpers.ts";
import { IMAGE, branchEntries, commitCounter, expectErr, expectOk, pendingAssistant, settledAssistant, transcript, user } from "./queue-helpers.ts";

// Prompt normalization at acceptance (reference §3.1): text + images → one user message; message
// prompts are placed as given; invalid input fails before anything is written.

describe("prompt input normalization", () => {
  it("text with images becomes one user message with the text block first", async () => {
    const entries = await withRig(async ({ harness }) => {
      const lane = await harness.lane("main");
      expectOk(await lane.accept({ kind: "prompt", prompt: "look", images: [IMAGE] }));
      return branchEntries(lane);
    });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ type: "message", message: { role: "user", content: [{ type: "text", text: "look" }, IMAGE] } });
  });

  it("an image alone is a valid prompt", async () => {
    const entries = await withRig(async ({ harness }) => {
      const lane = await harness.lane("main");
      expectOk(await lane.accept({ kind: "prompt", prompt: "", images: [IMAGE] }));
      return branchEntries(lane);
    });
    expect(entries[0]).toMatchObject({ type: "message", message: { role: "user", content: [IMAGE] } });
  });

  it("a message array is placed in order; every message is a prompt entry", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      const mark = events.length;
      const admission = expectOk(await lane.accept({ kind: "prompt", prompt: [user("one"), settledAssistant("two"), user("three")] }));
      const meta = readOperation(session, admission.operationId)?.meta;
      const entries = branchEntries(lane);
      return { meta, ids: entries.map((entry) => entry.id), entries: transcript(lane), events: types(events.slice(mark)) };
    });
    expect(result.entries).toEqual(["user:one", "assistant:two", "user:three"]);
    expect(result.meta?.intent).toEqual({ kind: "run", promptEntryIds: result.ids });
    expect(result.events).toEqual(["run_start", ...Array.from({ length: 3 }, () => ["message_start", "message_end", "entry_added"]).flat(), "stats"]);
  });

  it("rejects pending assistants and images with non-user messages before writing anything", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      const mark = events.length;
      const commits = commitCounter(session);
      const pending = expectErr(await lane.accept({ kind: "prompt", prompt: [user("fine"), pendingAssistant()] }));
      const images = expectErr(await lane.accept({ kind: "prompt", prompt: [user("fine"), settledAssistant("no")], images: [IMAGE] }));
      return { pending, images, commits: commits.count, events: events.length - mark, current: lane.inspectExecution().current };
    });
    expect(result.pending).toEqual({ code: "InvalidMessage", lane: "main", reason: "pending_assistant" });
    expect(result.images).toEqual({ code: "InvalidMessage", lane: "main", reason: "images_with_non_user" });
    expect(result.commits).toBe(0);
    expect(result.events).toBe(0);
    expect(result.current).toBeNull();
  });

  it("an empty message array is an empty prompt; appendMessage refuses a pending assistant, idle or busy", async () => {
    const result = await withRig(async ({ session, harness }) => {
      const lane = await harness.lane("main");
      const commits = commitCounter(session);
      const emptyArray = expectErr(await lane.accept({ kind: "prompt", prompt: [] }));
      const idleAppend = expectErr(await lane.appendMessage(pendingAssistant()));
      const rejectedCommits = commits.count;
      expectOk(await lane.accept({ kind: "prompt", prompt: "busy now" }));
      const busyAppend = expectErr(await lane.appendMessage(pendingAssistant()));
      return { emptyArray, idleAppend, busyAppend, rejectedCommits, queue: lane.inspectExecution().queues, entries: transcript(lane) };
    });
    expect(result.emptyArray).toEqual({ code: "InvalidMessage", lane: "main", reason: "empty" });
    expect(result.idleAppend).toEqual({ code: "InvalidMessage", lane: "main", reason: "pending_assistant" });
    expect(result.busyAppend).toEqual({ code: "InvalidMessage", lane: "main", reason: "pending_assistant" });
    expect(result.rejectedCommits).toBe(0);
    expect(result.queue).toEqual([]);
    expect(result.entries).toEqual(["user:busy now"]);
  });

  it("after close, accept and the queue commands answer Closed", async () => {
    const result = await withRig(async ({ harness }) => {
      const lane = await harness.lane("main");
      const queuedBefore = expectOk(await lane.steer("before close")).entryId;
      await harness.close();
      return {
        accept: expectErr(await lane.accept({ kind: "prompt", prompt: "late" })),
        steer: expectErr(await lane.steer("late")),
        cancel: expectErr(await lane.cancelQueued(queuedBefore)),
        append: expectErr(await lane.appendCustomEntry("late", null)),
      };
    });
    expect(result).toEqual({ accept: { code: "Closed" }, steer: { code: "Closed" }, cancel: { code: "Closed" }, append: { code: "Closed" } });
  });
});
