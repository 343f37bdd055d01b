import { runInDurableObject } from "cloudflare:test";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { AgentHarness, type OpenOperation } from "../../harness/runtime/harness.ts";
import { createModelRegistry } from "../../models/registry.ts";
import { SessionScriptSource } from "../../models/scripted/script-source.ts";
import type { LaneError, Result } from "../../harness/runtime/errors.ts";
import type { AgentLane, SuspendedRun } from "../../harness/runtime/lane.ts";
import type { DriveOutcome } from "../../harness/runtime/types.ts";
import type { Session } from "../../harness/session/session.ts";
import type { Write } from "../../harness/session/storage.ts";
import { zeroUsage } from "../../harness/session/usage.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { Entry } from "../../schema/entries.ts";
import type { HarnessEvent, OperationResultRecord } from "../../schema/lane.ts";
import type { AgentMessage, AssistantMessage } from "../../schema/messages.ts";
import { createSession } from "../helpers/sessions.ts";
import { ECHO, openRig, type Rig } from "./helpers.ts";

// Shared helpers of the lane / acceptance / queue / boundary tests.

type RigOptions = { model?: { provider: string; modelId: string }; steps?: ScriptStep[] };

/** A rig that also reports the open operations `AgentHarness.create` listed. */
export type AttachedRig = Rig & { open: OpenOperation[] };

/** Attaches a harness (scripted models, every event recorded) to a session, like `openRig`. */
export async function attachRig(session: Session): Promise<AttachedRig> {
  const models = createModelRegistry({ scripted: true, scriptSource: () => new SessionScriptSource(session) });
  const wakes: Rig["wakes"] = [];
  const { harness, open } = await AgentHarness.create({ session, models, seed: { model: ECHO } });
  const events: HarnessEvent[] = [];
  harness.events.on("*", (event) => {
    events.push(event);
  });
  return { session, harness, events, wakes, open };
}

/**
 * Like `withRig`, but also hands the body a `reopen()` that attaches a new harness to a new Session
 * over the same object storage (after the previous harness was closed).
 */
export async function withObject<T>(body: (rig: Rig, reopen: () => Promise<AttachedRig>) => Promise<T>, options: RigOptions = {}): Promise<T> {
  const { stub } = await createSession("rtq");
  return runInDurableObject(stub, async (instance: SessionObject) =>
    body(await openRig(instance.session(), options), () => attachRig(instance.session())),
  );
}

/** Counts the commits of a session from now on (every mutation goes through `beginMutation`). */
export function commitCounter(session: Session): { readonly count: number; readonly writes: (readonly Write[])[]; reset(): void } {
  const seen: (readonly Write[])[] = [];
  const begin = session.beginMutation.bind(session);
  session.beginMutation = async () => {
    const scope = await begin();
    const commit = scope.commit.bind(scope);
    scope.commit = (writes) => {
      seen.push(writes);
      return commit(writes);
    };
    return scope;
  };
  return {
    get count() {
      return seen.length;
    },
    writes: seen,
    reset: () => void seen.splice(0),
  };
}

/** The value of a successful lane result; a tagged error fails the test with its code. */
export function expectOk<T>(result: Result<T> | { ok: false; error: LaneError }): T {
  if (!result.ok) throw new Error(`Expected success, got ${JSON.stringify(result.error)}`);
  return result.value;
}

/** The error of a failed lane result; a success fails the test. */
export function expectErr<T>(result: Result<T> | { ok: false; error: LaneError }): LaneError {
  if (result.ok) throw new Error(`Expected a failure, got ${JSON.stringify(result.value)}`);
  return result.error;
}

/** The settled record of a drive or convenience result. */
export function settledRecord(result: Result<DriveOutcome | OperationResultRecord | SuspendedRun>): OperationResultRecord {
  const value = expectOk(result);
  if (!("kind" in value)) throw new Error("Expected a settled record, got a suspended run");
  if (value.kind === "settled") return value.outcome;
  if (value.kind === "waiting") throw new Error(`Expected a settled record, got waiting(${value.reason})`);
  return value;
}

/** Accepts a run and drives it to its record (the primitives the `prompt` convenience composes). */
export async function acceptAndDrive(lane: AgentLane, prompt: string): Promise<OperationResultRecord> {
  const admission = expectOk(await lane.accept({ kind: "prompt", prompt }));
  return settledRecord(await lane.drive({ operationId: admission.operationId, waitForRetry: true }));
}

export function textOf(message: AgentMessage): string {
  switch (message.role) {
    case "user":
    case "custom":
      return typeof message.content === "string" ? message.content : message.content.map((b) => (b.type === "text" ? b.text : `[${b.type}]`)).join("");
    case "assistant":
      return message.content.map((b) => (b.type === "text" ? b.text : b.type === "toolCall" ? `call(${b.name})` : "")).join("");
    case "toolResult":
      return message.toolName;
    default:
      return message.role;
  }
}

/** A compact description of one entry: `role:text` for messages, `custom:type` for custom entries. */
export function describeEntry(entry: Entry): string {
  if (entry.type === "custom") return `custom:${entry.customType}`;
  if (entry.type !== "message") return entry.type;
  return `${entry.message.role}:${textOf(entry.message)}`;
}

export function describeMessage(message: AgentMessage): string {
  return `${message.role}:${textOf(message)}`;
}

/** The lane's branch, oldest first, described. */
export function transcript(lane: AgentLane): string[] {
  return lane.findEntries({ order: "oldestFirst" }).map(describeEntry);
}

/** The branch entries, oldest first. */
export function branchEntries(lane: AgentLane): Entry[] {
  return lane.findEntries({ order: "oldestFirst" });
}

/** Asserts the entries form one parent→child chain, each parented to the previous. */
export function chained(entries: readonly Entry[]): boolean {
  return entries.every((entry, index) => index === 0 || entry.parentId === entries[index - 1]?.id);
}

export function ofType<T extends HarnessEvent["type"]>(events: readonly HarnessEvent[], type: T): Extract<HarnessEvent, { type: T }>[] {
  return events.filter((event): event is Extract<HarnessEvent, { type: T }> => event.type === type);
}

/** The queue of a `queue_update` event as `kind:text` strings. */
export function queueOf(event: Extract<HarnessEvent, { type: "queue_update" }> | undefined): string[] {
  if (!event) throw new Error("Expected a queue_update event");
  return event.queues.map((item) => `${item.kind}:${item.type === "message" ? textOf(item.message) : item.customType}`);
}

/** The lane's current queue as `kind:text` strings. */
export function queued(lane: AgentLane): string[] {
  return queueOf({ type: "queue_update", lane: lane.name, queues: lane.inspectExecution().queues });
}

/** Waits (politely, bounded) until `predicate` holds; fails the test when it never does. */
export async function until(predicate: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (predicate()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`Timed out waiting for ${what}`);
}

export function user(text: string): AgentMessage {
  return { role: "user", content: text, timestamp: 1 };
}

export function pendingAssistant(): AssistantMessage {
  return { role: "assistant", content: [], api: "test", provider: "scripted", model: "echo", usage: zeroUsage(), stopReason: "pending", timestamp: 1 };
}

export function settledAssistant(text: string): AssistantMessage {
  return { ...pendingAssistant(), content: [{ type: "text", text }], stopReason: "stop" };
}

export const IMAGE = { type: "image" as const, data: "iVBORw0KGgo=", mimeType: "image/png" };

/**
 * Leaves the idle lane with a queued mix, in this global order:
 * write(note) · nextRun(next-1) · steer(steer-1) · followUp(follow-1) · write(user "written") ·
 * steer(steer-2) · followUp(follow-2) · nextRun(next-2).
 * Writes queue only while an operation is open, so a run ("hold") is accepted, the mix is enqueued
 * (steer/followUp after the abort request, which would otherwise drain them) and the run is then
 * driven to its aborted terminal, which never consumes queued input.
 */
export async function queueMixed(lane: AgentLane): Promise<{ ids: string[]; holdId: string }> {
  const hold = expectOk(await lane.accept({ kind: "prompt", prompt: "hold" }));
  const ids: string[] = [];
  ids.push(expectOk(await lane.appendCustomEntry("note", { n: 1 })).entryId);
  ids.push(expectOk(await lane.nextRun("next-1")).entryId);
  expectOk(await lane.requestAbort(hold.operationId));
  ids.push(expectOk(await lane.steer("steer-1")).entryId);
  ids.push(expectOk(await lane.followUp("follow-1")).entryId);
  ids.push(expectOk(await lane.appendMessage(user("written"))).entryId);
  ids.push(expectOk(await lane.steer("steer-2")).entryId);
  ids.push(expectOk(await lane.followUp("follow-2")).entryId);
  ids.push(expectOk(await lane.nextRun("next-2")).entryId);
  const record = settledRecord(await lane.drive({ operationId: hold.operationId }));
  if (record.status !== "aborted") throw new Error(`hold run ended ${record.status}`);
  return { ids, holdId: hold.operationId };
}
