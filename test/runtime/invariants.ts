import { readOperation, readResult } from "../../harness/runtime/operation-codec.ts";
import { openOperations } from "../../harness/runtime/restore.ts";
import { readLaneState, type ReadLaneState } from "../../harness/runtime/lane-state-form.ts";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { SqlSessionStorage } from "../../durable-objects/session/storage/sql-session-storage.ts";
import type { OperationState } from "../../harness/runtime/types.ts";
import { list, value } from "../../harness/session/addresses.ts";
import { branchTipInventoryPrefix, operationIdOfKey, operationResult, pendingEntry } from "../../harness/session/builtin-addresses.ts";
import type { Session } from "../../harness/session/session.ts";
import type { UsageScan } from "../../harness/session/storage.ts";
import { addUsage, zeroUsage } from "../../harness/session/usage.ts";
import type { Entry } from "../../schema/entries.ts";
import type { OperationResultRecord } from "../../schema/lane.ts";
import type { Usage, UsageRow } from "../../schema/usage.ts";

// The invariant checker of the crash tests (QUALITY R1); the crash rig that parks, kills, reopens
// and drives is crash-rig.ts, the fold-equivalence helpers watch-fold.ts.
//
// The durable invariants of QUALITY R1 (reference §1.4 lifetimes, §1.7 ledger, §3.7 inbox, §3.8
// terminal suffix), checked by reading storage only. Returns every violation found, so a test can
// `expect(checkInvariants(session)).toEqual([])` and see all of them at once when one fails.

/** The usage ledger reader (Session does not expose it; the object's SQL storage does). */
export interface UsageLedger {
  scanUsage(scan?: UsageScan): UsageRow[];
}

export interface InvariantOptions {
  /** Restrict the lane-scoped checks to this lane (session-wide checks always run). */
  lane?: string;
  /** When given, `stats.usage` must equal the sum of the ledger rows, and each assistant entry's usage its one row. */
  ledger?: UsageLedger;
  /**
   * Texts of the inputs queued (steer, followUp, nextRun) during the test: each must be found exactly
   * once, placed as a user entry or still queued as a pending payload (queued input is never lost
   * and never placed twice).
   */
  queued?: readonly string[];
  /** Executions of each tool counted at the tool itself: a `replay: "never"` tool runs at most once per call. */
  effects?: readonly { tool: string; replay: "never" | "safe"; executions: number }[];
}

/** Operation-owned value namespaces; keys start with the operation id (`op` or `op:…`). */
const OPERATION_NAMESPACES = ["pi.op.meta", "pi.op.state", "pi.op.generation", "pi.op.tool_args", "pi.op.tool_memo", "pi.op.tool_result", "pi.op.preparation", "pi.pending.tool_output"] as const;

export function checkInvariants(session: Session, options: InvariantOptions = {}): string[] {
  const violations: string[] = [];
  const fail = (message: string): void => {
    violations.push(message);
  };

  // Entries: unique ids, existing parents.
  const entries = session.findEntries({ order: "asc" });
  const byId = new Map<string, Entry>();
  for (const entry of entries) {
    if (byId.has(entry.id)) fail(`entry ${entry.id} appears twice`);
    byId.set(entry.id, entry);
  }
  for (const entry of entries) {
    if (entry.parentId !== null && !byId.has(entry.parentId)) fail(`entry ${entry.id} names a missing parent ${entry.parentId}`);
  }
  // No entry duplicated under another id: each tool call is answered by one placed result.
  const answered = new Set<string>();
  for (const entry of entries) {
    if (entry.type !== "message" || entry.message.role !== "toolResult") continue;
    if (answered.has(entry.message.toolCallId)) fail(`tool call ${entry.message.toolCallId} has two placed results`);
    answered.add(entry.message.toolCallId);
  }

  // Branch tips (every lane is a branch) point at existing entries.
  for (const tip of session.scanValues(branchTipInventoryPrefix())) {
    if (tip.value !== null && !byId.has(tip.value)) fail(`branch "${tip.address.key}" tip ${tip.value} does not exist`);
  }

  // Lanes: current operations are complete, last operations have their record.
  const allLanes = session.scanValues(value<ReadLaneState>("pi.lane.state", "")).map((stored) => ({ name: stored.address.key, state: readLaneState(stored.value) }));
  const lanes = options.lane === undefined ? allLanes : allLanes.filter((lane) => lane.name === options.lane);
  if (options.lane !== undefined && lanes.length === 0) fail(`lane "${options.lane}" has no durable state`);
  // The current operation of a lane is the open one whose meta names it (at most one per lane).
  let open = new Map<string, string>();
  try {
    open = openOperations(session);
  } catch (error) {
    fail(`open operations: ${error instanceof Error ? error.message : String(error)}`);
  }
  const current = new Map<string, { lane: string; state: OperationState | undefined }>();
  for (const [name, op] of open) {
    if (!allLanes.some((lane) => lane.name === name)) fail(`open operation ${op} names lane "${name}", which has no durable state`);
    current.set(op, { lane: name, state: readOperation(session, op)?.state });
  }
  for (const { name, state } of lanes) {
    const tip = session.getValue(value<string | null>("pi.branch.tip", name));
    if (!tip) fail(`lane "${name}" has no tip value`);
    if (state.lastOperationId !== null) {
      const record = readResult(session, state.lastOperationId);
      if (!record) fail(`lane "${name}" last operation ${state.lastOperationId} has no pi.result record`);
      else if (record.operationId !== state.lastOperationId) fail(`pi.result/${state.lastOperationId} names ${record.operationId}`);
    }
    const op = open.get(name);
    if (op !== undefined) {
      const meta = readOperation(session, op)?.meta;
      if (!meta) fail(`lane "${name}" current operation ${op} has no stored meta`);
      else if (meta.lane !== name) fail(`operation ${op} is current on "${name}" but belongs to "${meta.lane}"`);
      if (!current.get(op)?.state) fail(`lane "${name}" current operation ${op} has no stored state`);
      if (session.getValue(operationResult(op))) fail(`current operation ${op} already has a pi.result record`);
    }
    // Queued input: every inbox item has its payload and is not placed yet.
    for (const item of state.inbox) {
      if (!session.getValue(pendingEntry(item.entryId))) fail(`inbox item ${item.entryId} (${item.kind}) of "${name}" has no pending payload`);
      if (byId.has(item.entryId)) fail(`inbox item ${item.entryId} of "${name}" is also a placed entry`);
    }
  }

  // Records: one immutable record per terminal operation; nothing operation-owned survives it.
  const records = session.scanValues(value<OperationResultRecord>("pi.result", ""));
  const terminal = new Set<string>();
  for (const stored of records) {
    const op = stored.address.key;
    terminal.add(op);
    const record = readResult(session, op);
    if (record?.operationId !== op) fail(`pi.result/${op} does not read back as its own record`);
    if ((stored.value.status === "failed") !== (stored.value.error !== undefined)) fail(`pi.result/${op} has error iff failed broken (${stored.value.status})`);
    if (current.has(op)) fail(`operation ${op} has a record but is still current`);
  }
  for (const namespace of OPERATION_NAMESPACES) {
    for (const stored of session.scanValues(value<unknown>(namespace, ""))) {
      const op = operationIdOfKey(stored.address.key.split(":")[0] ?? "");
      if (terminal.has(op)) fail(`${namespace}/${stored.address.key} survives the terminal of ${op}`);
      else if (!current.has(op)) fail(`${namespace}/${stored.address.key} belongs to no current operation`);
    }
  }

  // Frame lists exist only for the current response of a current effect_pending operation. The
  // candidate response ids are every assistant entry (a settled response) plus that response.
  const assistantIds = entries.filter((entry) => entry.type === "message" && entry.message.role === "assistant").map((entry) => entry.id);
  for (const op of [...terminal, ...current.keys()]) {
    for (const responseId of assistantIds) {
      if (session.readList(list<unknown>("pi.pending.assistant_frame", `${op}:${responseId}`), { limit: 1 }).length > 0) {
        fail(`pi.pending.assistant_frame/${op}:${responseId} survives settlement`);
      }
    }
  }

  // Pending payloads: each belongs to an inbox item or to a staged outcome of a live tool batch,
  // and a reserved result id is never in two representations at once.
  const owners = new Set<string>();
  for (const { state } of allLanes) for (const item of state.inbox) owners.add(item.entryId);
  for (const [op, { state }] of current) {
    if (state?.at !== "tools") continue;
    for (const call of state.batch.calls) {
      const staged = session.getValue(pendingEntry(call.resultEntryId)) !== undefined;
      const placed = byId.has(call.resultEntryId);
      if (call.status === "outcome_ready") {
        owners.add(call.resultEntryId);
        if (!staged) fail(`staged outcome ${call.resultEntryId} of ${op} has no pending payload`);
      } else if (staged) fail(`tool result ${call.resultEntryId} of ${op} is pending while ${call.status}`);
      if ((call.status === "completed") !== placed) fail(`tool result ${call.resultEntryId} of ${op} is ${call.status} but ${placed ? "placed" : "not placed"}`);
    }
  }
  for (const stored of session.scanValues(pendingEntry(""))) {
    if (!owners.has(stored.address.key)) fail(`pi.pending.entry/${stored.address.key} is orphaned (no inbox item, no staged outcome)`);
    if (byId.has(stored.address.key)) fail(`pi.pending.entry/${stored.address.key} coexists with its placed entry`);
  }

  // Stats are a projection: message count and the ledger sum.
  const stats = session.getStats();
  const messages = entries.filter((entry) => entry.type === "message").length;
  if (stats.messageCount !== messages) fail(`stats.messageCount ${stats.messageCount} ≠ ${messages} message entries`);
  if (options.ledger) {
    const rows = options.ledger.scanUsage();
    const sum = rows.reduce((total: Usage, row) => addUsage(total, row.usage), zeroUsage());
    const drift = usageDrift(stats.usage, sum);
    if (drift) fail(`stats.usage ≠ ledger sum (${drift})`);
    // Usage exact: every assistant response has exactly one row, holding exactly its usage.
    for (const entry of entries) {
      if (entry.type !== "message" || entry.message.role !== "assistant") continue;
      const own = rows.filter((row) => row.entryId === entry.id);
      if (own.length !== 1) fail(`assistant entry ${entry.id} has ${own.length} usage rows`);
      const rowDrift = own[0] && usageDrift(own[0].usage, entry.message.usage);
      if (rowDrift) fail(`usage row of ${entry.id} ≠ its message's usage (${rowDrift})`);
    }
  }
  for (const text of options.queued ?? []) {
    const placed = entries.filter((entry) => entry.type === "message" && entry.message.role === "user" && userText(entry.message.content) === text).length;
    const pending = session.scanValues(pendingEntry("")).filter((stored) => JSON.stringify(stored.value).includes(JSON.stringify(text))).length;
    if (placed + pending !== 1) fail(`queued input "${text}" is placed ${placed} and pending ${pending} times (expected once in all)`);
  }
  for (const effect of options.effects ?? []) {
    if (effect.replay === "never" && effect.executions > 1) fail(`replay "never" tool ${effect.tool} executed ${effect.executions} times`);
  }
  return violations;
}

function userText(content: string | readonly { type: string; text?: string }[]): string {
  return typeof content === "string" ? content : content.map((block) => block.text ?? "").join("");
}

function usageDrift(a: Usage, b: Usage): string | undefined {
  const pairs: [string, number | undefined, number | undefined][] = [
    ["input", a.input, b.input],
    ["output", a.output, b.output],
    ["cacheRead", a.cacheRead, b.cacheRead],
    ["cacheWrite", a.cacheWrite, b.cacheWrite],
    ["totalTokens", a.totalTokens, b.totalTokens],
    ["cost.total", a.cost.total, b.cost.total],
    ["reasoning", a.reasoning ?? 0, b.reasoning ?? 0],
  ];
  const off = pairs.filter(([, x, y]) => Math.abs((x ?? 0) - (y ?? 0)) > 1e-9).map(([name, x, y]) => `${name}: ${x} vs ${y}`);
  return off.length > 0 ? off.join(", ") : undefined;
}

/** The invariants of the session hosted by a Durable Object, with its SQL usage ledger. */
export function objectInvariants(instance: SessionObject, state: DurableObjectState, lane?: string, more: Pick<InvariantOptions, "queued" | "effects"> = {}): string[] {
  const ledger = SqlSessionStorage.open(state.storage);
  if (!ledger) return ["no session is stored in this object"];
  return checkInvariants(instance.session(), { ...(lane !== undefined && { lane }), ledger, ...more });
}
