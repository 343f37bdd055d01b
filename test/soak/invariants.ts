import type { Entry } from "../../schema/entries.ts";
import type { LaneExecutionInfo } from "../../schema/lane.ts";
import type { RecordedMcpRequest } from "../mcp-recorded-request.ts";
import type { ReceivedCall } from "../node/tool-webhook-server.ts";
import type { SoakClient } from "./cluster.ts";
import type { Ledger, QueuedMarker } from "./ledger.ts";
import { awaitSettled, type OperationView } from "./operations.ts";
import { checkClientAnswers, checkNeverOnce, httpCalls, mcpCalls } from "./tool-checks.ts";

// The checks after the chaos (QUALITY R6, R9), through the public API only: every accepted
// operation settles with exactly one result record (counted in the session's export) and leaves
// its lane idle; every queued input is placed in the session once, or was handed back, or is still
// queued (never lost, never twice); every tool call has exactly one result, a client tool's being
// the answer the client posted for it (tool-checks.ts); the http and MCP tools with `replay:
// "never"` reached their servers at most once per call id (counted at the fixtures); no entry id
// appears twice; every fork is readable and as sound.
//
// One outcome is neither placed nor handed back, and yet no loss of the service's making: a steer
// or follow-up drained by an abort whose answer a kill swallowed, along with the `operation_abort`
// event (the drained input exists only in those two, docs/api-lanes.md "What an abort does to the
// queue"). The client knows when that may have happened: an operation ended `aborted` and no abort
// answer with `newlyRequested: true` nor its event reached the client. Such an input, sent before
// that operation ended, is counted apart (`lostWithAbortAnswer`) and listed, not a violation.

export interface Violation {
  invariant: string;
  detail: string;
}

export interface SoakSession {
  id: string;
  lanes: string[];
  scheduleId: string;
}

type ExportLine = { type: "session"; branches: Record<string, string | null> } | { type: "entry"; entry: Entry } | { type: "result"; record: { operationId: string; status: string } } | { type: string };

/** How long the check waits for every accepted operation to settle after the last kill. */
const SETTLE_BOUND_MS = 240_000;

const markersIn = (value: unknown): string[] => [...JSON.stringify(value).matchAll(/<mk:[^>]+>/g)].map((match) => match[0]);

export class InvariantChecker {
  readonly violations: Violation[] = [];
  readonly statuses = new Map<string, number>();
  readonly placements = { placed: 0, handedBack: 0, stillQueued: 0, lostWithAbortAnswer: 0 };
  /** The inputs counted in `lostWithAbortAnswer`, with the abort that drained them. */
  readonly lostWithAbortAnswer: string[] = [];
  toolCalls = 0;
  neverToolCalls = 0;
  neverMcpCalls = 0;
  clientAnswersPlaced = 0;
  /** Deferred runs left to the minute cron that settled. */
  cronResumed = 0;

  constructor(
    private readonly client: SoakClient,
    private readonly ledger: Ledger,
    private readonly fixtureCalls: (scope: string) => Promise<ReceivedCall[]>,
    private readonly mcpFixtureCalls: (scope: string) => Promise<RecordedMcpRequest[]>,
  ) {}

  /** What the workload sent with `marker`: the queued input (kind, entry) or the run (how, operation id). */
  private describe(marker: string): string {
    const queued = this.ledger.queued.find((item) => item.marker === marker);
    if (queued) return `${queued.kind} on ${queued.lane}, entry ${queued.entryId}`;
    const answer = [...this.ledger.clientAnswers.values()].find((item) => item.marker === marker);
    if (answer) return `client tool answer on ${answer.lane} to ${answer.operationId}/${answer.toolCallId}, last post ${answer.status}`;
    const operation = this.ledger.operations.find((item) => item.marker === marker);
    return operation ? `${operation.how} ${operation.operationId} on ${operation.lane}` : "not sent by the workload";
  }

  private violate(invariant: string, detail: string): void {
    this.violations.push({ invariant, detail });
  }

  async check(sessions: readonly SoakSession[]): Promise<void> {
    const records = await this.settleAll();
    for (const session of sessions) await this.checkSession(session, records);
    for (const fork of this.ledger.forks) await this.checkFork(fork);
  }

  /** Waits (bounded) until every accepted operation answers `settled`; returns each one's view. */
  private async settleAll(): Promise<Map<string, OperationView>> {
    const deadline = Date.now() + SETTLE_BOUND_MS;
    const views = new Map<string, OperationView>();
    for (const operation of this.ledger.operations) {
      const view = await awaitSettled(this.client, this.ledger, `/v1/sessions/${operation.sessionId}/lanes/${operation.lane}`, operation.operationId, deadline);
      views.set(operation.operationId, view);
      if (view.state !== "settled") this.violate("every accepted operation settles", `${operation.how} ${operation.operationId} on ${operation.sessionId}/${operation.lane} is still ${JSON.stringify(view)}`);
      else {
        if (this.ledger.cronOnly.has(operation.operationId)) this.cronResumed++;
        const error = view.result.error;
        // A failure's message too (an aborted run's code says enough).
        const status = error ? `${view.result.status} (${error.code}${view.result.status === "failed" ? `: ${error.message.slice(0, 80)}` : ""})` : view.result.status;
        this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
      }
    }
    return views;
  }

  private async checkSession(session: SoakSession, views: Map<string, OperationView>): Promise<void> {
    const exported = await this.exportOf(session.id);
    if (!exported) return;
    for (const operation of this.ledger.operations.filter((known) => known.sessionId === session.id)) {
      const count = exported.records.get(operation.operationId) ?? 0;
      if (count !== 1) this.violate("exactly one result record per accepted operation", `${operation.how} ${operation.operationId} on ${session.id}/${operation.lane}: ${count} records`);
    }
    const placed = this.checkTree(session.id, exported.entries);
    const stillQueued = new Set<string>();
    for (const lane of session.lanes) {
      const where = `${session.id}/${lane}`;
      const info = await this.client.expect<LaneExecutionInfo>(200, "GET", `/v1/sessions/${session.id}/lanes/${lane}`);
      if (info.current !== null) this.violate("every lane is idle at the end", `${where}: current ${JSON.stringify(info.current)}`);
      const pending = await this.client.expect<{ items: unknown[] }>(200, "GET", `/v1/sessions/${session.id}/lanes/${lane}/pending`);
      if (pending.items.length > 0) this.violate("every lane is idle at the end", `${where}: pending ${JSON.stringify(pending.items)}`);
      for (const marker of markersIn(info.queues)) stillQueued.add(marker);
    }
    for (const item of this.ledger.queued.filter((queued) => queued.sessionId === session.id)) {
      const where = `${session.id}/${item.lane}: ${item.kind} ${item.marker} (entry ${item.entryId})`;
      const count = placed.get(item.marker) ?? 0;
      if (count === 1) this.placements.placed++;
      else if (count > 1) continue; // reported by checkTree
      else if (this.ledger.handedBack.has(item.marker)) this.placements.handedBack++;
      else if (stillQueued.has(item.marker)) this.placements.stillQueued++;
      else {
        const drainer = this.unseenDrain(item, views);
        if (drainer === undefined) this.violate("a queued input is placed or handed back", `${where} is neither placed, handed back nor queued`);
        else {
          this.placements.lostWithAbortAnswer++;
          this.lostWithAbortAnswer.push(`${where}: drained by the abort of ${drainer}, whose answer and event a kill swallowed`);
        }
      }
    }
    for (const operation of this.ledger.operations.filter((known) => known.sessionId === session.id && known.marker !== undefined)) {
      const view = views.get(operation.operationId);
      const completed = view?.state === "settled" && view.result.status === "completed";
      const count = placed.get(operation.marker ?? "") ?? 0;
      if (completed && count !== 1) this.violate("a completed run's prompt is placed once", `${session.id}/${operation.lane}: ${operation.how} ${operation.operationId} prompt ${operation.marker} placed ${count} times`);
    }
    this.neverToolCalls += checkNeverOnce("never_lookup", session.id, httpCalls(await this.fixtureCalls(session.id)), (invariant, detail) => this.violate(invariant, detail));
    this.neverMcpCalls += checkNeverOnce("kb_echo", session.id, mcpCalls(await this.mcpFixtureCalls(session.id), "echo"), (invariant, detail) => this.violate(invariant, detail));
    this.clientAnswersPlaced += checkClientAnswers(session.id, exported.entries, this.ledger, views, (invariant, detail) => this.violate(invariant, detail));
  }

  /**
   * An operation of the item's lane that ended `aborted` after the item was sent, whose drain the
   * client never saw (see the header): the abort that may have taken a steer or follow-up with it.
   */
  private unseenDrain(item: QueuedMarker, views: ReadonlyMap<string, OperationView>): string | undefined {
    if (item.kind === "nextRun") return undefined; // an abort leaves nextRun items queued
    const candidates = this.ledger.operations.filter((operation) => {
      if (operation.sessionId !== item.sessionId || operation.lane !== item.lane || this.ledger.drainSeen.has(operation.operationId)) return false;
      const view = views.get(operation.operationId);
      if (view?.state !== "settled" || view.result.status !== "aborted" || view.result.error?.code === "cancelled_before_start") return false;
      // One machine, one clock; a second of slack for the server's coarser time.
      return view.result.endedAt + 1000 >= item.sentAt;
    });
    return candidates.length > 0 ? candidates.map((operation) => `${operation.how} ${operation.operationId}`).join(" or ") : undefined;
  }

  /**
   * A fork: readable, and its copied tree holds no doubled entry, marker or tool result. A fork of a
   * lane whose run was at its tool step copies the branch as it was (docs/api-sessions.md "Forks":
   * operations in flight stay with the source), so its tip's calls may have no result yet.
   */
  private async checkFork(forkId: string): Promise<void> {
    const exported = await this.exportOf(forkId);
    if (exported) this.checkTree(forkId, exported.entries, true);
  }

  /** The session's entries (a doubled id is a violation) and result records per operation, from its export. */
  private async exportOf(sessionId: string): Promise<{ entries: Map<string, Entry>; records: Map<string, number> } | undefined> {
    const exported = await this.client.sendText("GET", `/v1/sessions/${sessionId}/export`);
    if (exported.status !== 200) {
      this.violate("the session can be read", `export of ${sessionId}: ${exported.status} ${exported.text.slice(0, 300)}`);
      return undefined;
    }
    const entries = new Map<string, Entry>();
    const records = new Map<string, number>();
    for (const text of exported.text.split("\n")) {
      if (text === "") continue;
      const line: ExportLine = JSON.parse(text);
      if (line.type === "entry" && "entry" in line) {
        if (entries.has(line.entry.id)) this.violate("no entry id appears twice", `${sessionId}: entry ${line.entry.id}`);
        entries.set(line.entry.id, line.entry);
      }
      if (line.type === "result" && "record" in line) records.set(line.record.operationId, (records.get(line.record.operationId) ?? 0) + 1);
    }
    return { entries, records };
  }

  /**
   * Over the whole tree (navigation leaves abandoned branches): each marker in at most one message
   * entry (returned: marker → how many hold it), and on every root-to-leaf path each tool call of a
   * response that asked for tools answered by exactly one result, no result without its call.
   */
  private checkTree(sessionId: string, entries: Map<string, Entry>, openTip = false): Map<string, number> {
    // Message entries only: a compaction entry's retained tail repeats messages it keeps.
    const holders = new Map<string, string[]>();
    for (const entry of entries.values()) {
      if (entry.type !== "message") continue;
      for (const marker of new Set(markersIn(entry))) holders.set(marker, [...(holders.get(marker) ?? []), `${entry.id} (${entry.message.role})`]);
    }
    const placed = new Map([...holders].map(([marker, ids]) => [marker, ids.length]));
    for (const [marker, ids] of holders) if (ids.length > 1) this.violate("an input is placed at most once", `${sessionId}: ${marker} (${this.describe(marker)}) is in entries ${ids.join(", ")}`);
    const parents = new Set([...entries.values()].flatMap((entry) => (entry.parentId === null ? [] : [entry.parentId])));
    const problems = new Set<string>();
    for (const leaf of [...entries.values()].filter((entry) => !parents.has(entry.id))) {
      for (const problem of toolProblems(pathTo(entries, leaf.id), openTip)) problems.add(problem);
    }
    this.toolCalls += [...entries.values()].reduce((total, entry) => total + (entry.type === "message" && entry.message.role === "assistant" ? entry.message.content.filter((part) => part.type === "toolCall").length : 0), 0);
    for (const problem of problems) this.violate("every tool call has exactly one result", `${sessionId}: ${problem}`);
    return placed;
  }
}

/** The entries from the root to `tipId`, root first. */
function pathTo(entries: Map<string, Entry>, tipId: string | null): Entry[] {
  const path: Entry[] = [];
  for (let id = tipId; id !== null; ) {
    const entry = entries.get(id);
    if (!entry) break;
    path.push(entry);
    id = entry.parentId;
  }
  return path.reverse();
}

/**
 * The tool-call problems of one path. A result answers the latest call with its id before it (ids
 * restart after a compaction: the scripted model numbers calls by those in its context). With
 * `openTip`, the calls of the path's last response, followed by nothing but results, may lack one.
 */
function toolProblems(path: Entry[], openTip: boolean): string[] {
  const calls: { id: string; entryId: string; asked: boolean; results: number }[] = [];
  const problems: string[] = [];
  for (const entry of path) {
    if (entry.type !== "message") continue;
    const message = entry.message;
    if (message.role === "assistant") {
      for (const part of message.content) if (part.type === "toolCall") calls.push({ id: part.id, entryId: entry.id, asked: message.stopReason === "toolUse", results: 0 });
    } else if (message.role === "toolResult") {
      const call = calls.findLast((candidate) => candidate.id === message.toolCallId);
      if (call) call.results++;
      else problems.push(`result entry ${entry.id} answers no call (${message.toolCallId})`);
    }
  }
  const tipResponse = openTip ? path.findLast((entry) => !(entry.type === "message" && entry.message.role === "toolResult")) : undefined;
  const mayBeOpen = (call: { entryId: string; results: number }) => call.results === 0 && call.entryId === tipResponse?.id;
  for (const call of calls) if (call.results > 1 || (call.asked && call.results !== 1 && !mayBeOpen(call))) problems.push(`call ${call.id} of entry ${call.entryId} has ${call.results} results`);
  return problems;
}
