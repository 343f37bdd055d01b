import type { Entry } from "../../schema/entries.ts";
import type { LaneExecutionInfo } from "../../schema/lane.ts";
import type { ReceivedCall } from "../node/tool-webhook-server.ts";
import { sleep, type SoakClient } from "./cluster.ts";
import type { Ledger } from "./ledger.ts";

// The checks after the chaos (QUALITY R6, R9), through the public API only: every accepted
// operation settles with exactly one result record (counted in the session's export) and leaves
// its lane idle; every queued input is placed on its lane's branch once, or was handed back, or is
// still queued (never lost, never twice); every tool call has exactly one result; the http tool
// with `replay: "never"` was called at most once per call id (counted at the fixture); no entry id
// appears twice.

export interface Violation {
  invariant: string;
  detail: string;
}

export interface SoakSession {
  id: string;
  lanes: string[];
}

type OperationView = { state: "settled"; result: { status: string; error?: { code: string } } } | { state: "active" | "pending" };
type ExportLine = { type: "session"; branches: Record<string, string | null> } | { type: "entry"; entry: Entry } | { type: "result"; record: { operationId: string; status: string } } | { type: string };

/** How long the check waits for every accepted operation to settle after the last kill. */
const SETTLE_BOUND_MS = 240_000;

const markersIn = (value: unknown): string[] => [...JSON.stringify(value).matchAll(/<mk:[^>]+>/g)].map((match) => match[0]);

export class InvariantChecker {
  readonly violations: Violation[] = [];
  readonly statuses = new Map<string, number>();
  readonly placements = { placed: 0, handedBack: 0, stillQueued: 0 };
  toolCalls = 0;
  neverToolCalls = 0;

  constructor(
    private readonly client: SoakClient,
    private readonly ledger: Ledger,
    private readonly fixtureCalls: (scope: string) => Promise<ReceivedCall[]>,
  ) {}

  private violate(invariant: string, detail: string): void {
    this.violations.push({ invariant, detail });
  }

  async check(sessions: readonly SoakSession[]): Promise<void> {
    const records = await this.settleAll();
    for (const session of sessions) await this.checkSession(session, records);
  }

  /** Waits (bounded) until every accepted operation answers `settled`; returns each one's view. */
  private async settleAll(): Promise<Map<string, OperationView>> {
    const deadline = Date.now() + SETTLE_BOUND_MS;
    const views = new Map<string, OperationView>();
    for (const operation of this.ledger.operations) {
      const path = `/v1/sessions/${operation.sessionId}/lanes/${operation.lane}/operations/${operation.operationId}`;
      let view = await this.client.expect<OperationView>(200, "GET", path);
      while (view.state !== "settled" && Date.now() < deadline) {
        if (view.state === "pending") await sleep(500);
        view = await this.client.expect<OperationView>(200, "GET", `${path}?wait=10`);
      }
      views.set(operation.operationId, view);
      if (view.state !== "settled") this.violate("every accepted operation settles", `${operation.how} ${operation.operationId} on ${operation.sessionId}/${operation.lane} is still ${JSON.stringify(view)}`);
      else {
        const status = view.result.error ? `${view.result.status} (${view.result.error.code})` : view.result.status;
        this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
      }
    }
    return views;
  }

  private async checkSession(session: SoakSession, views: Map<string, OperationView>): Promise<void> {
    const exported = await this.client.sendText("GET", `/v1/sessions/${session.id}/export`);
    if (exported.status !== 200) return this.violate("the session can be read", `export of ${session.id}: ${exported.status} ${exported.text.slice(0, 300)}`);
    const lines: ExportLine[] = exported.text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
    const entries = new Map<string, Entry>();
    const recordsPerOperation = new Map<string, number>();
    let branches: Record<string, string | null> = {};
    for (const line of lines) {
      if (line.type === "session" && "branches" in line) branches = line.branches;
      if (line.type === "entry" && "entry" in line) {
        if (entries.has(line.entry.id)) this.violate("no entry id appears twice", `${session.id}: entry ${line.entry.id}`);
        entries.set(line.entry.id, line.entry);
      }
      if (line.type === "result" && "record" in line) recordsPerOperation.set(line.record.operationId, (recordsPerOperation.get(line.record.operationId) ?? 0) + 1);
    }
    for (const operation of this.ledger.operations.filter((known) => known.sessionId === session.id)) {
      const count = recordsPerOperation.get(operation.operationId) ?? 0;
      if (count !== 1) this.violate("exactly one result record per accepted operation", `${operation.how} ${operation.operationId} on ${session.id}/${operation.lane}: ${count} records`);
    }
    for (const lane of session.lanes) await this.checkLane(session.id, lane, branchOf(entries, branches[lane] ?? null), views);
    await this.checkNeverTool(session.id);
  }

  private async checkLane(sessionId: string, lane: string, branch: Entry[], views: Map<string, OperationView>): Promise<void> {
    const where = `${sessionId}/${lane}`;
    const info = await this.client.expect<LaneExecutionInfo>(200, "GET", `/v1/sessions/${sessionId}/lanes/${lane}`);
    if (info.current !== null) this.violate("every lane is idle at the end", `${where}: current ${JSON.stringify(info.current)}`);
    const pending = await this.client.expect<{ items: unknown[] }>(200, "GET", `/v1/sessions/${sessionId}/lanes/${lane}/pending`);
    if (pending.items.length > 0) this.violate("every lane is idle at the end", `${where}: pending ${JSON.stringify(pending.items)}`);
    const stillQueued = new Set(info.queues.flatMap((item) => markersIn(item)));

    const placed = new Map<string, number>();
    for (const entry of branch) for (const marker of markersIn(entry)) placed.set(marker, (placed.get(marker) ?? 0) + 1);
    for (const item of this.ledger.queued.filter((queued) => queued.sessionId === sessionId && queued.lane === lane)) {
      const count = placed.get(item.marker) ?? 0;
      if (count > 1) this.violate("a queued input is placed at most once", `${where}: ${item.kind} ${item.marker} (entry ${item.entryId}) placed ${count} times`);
      else if (count === 1) this.placements.placed++;
      else if (this.ledger.handedBack.has(item.marker)) this.placements.handedBack++;
      else if (stillQueued.has(item.marker)) this.placements.stillQueued++;
      else this.violate("a queued input is placed or handed back", `${where}: ${item.kind} ${item.marker} (entry ${item.entryId}) is neither placed, handed back nor queued`);
    }
    for (const operation of this.ledger.operations.filter((known) => known.sessionId === sessionId && known.lane === lane)) {
      if (!operation.marker) continue;
      const count = placed.get(operation.marker) ?? 0;
      const view = views.get(operation.operationId);
      const completed = view?.state === "settled" && view.result.status === "completed";
      if (count > 1 || (completed && count !== 1)) this.violate("a run's prompt is placed once", `${where}: ${operation.how} ${operation.operationId} (${JSON.stringify(view)}) prompt ${operation.marker} placed ${count} times`);
    }
    this.checkToolResults(where, branch);
  }

  /** Every tool call of a response that asked for tools has exactly one result; no result without its call. */
  private checkToolResults(where: string, branch: Entry[]): void {
    const calls = new Map<string, boolean>();
    const results = new Map<string, number>();
    for (const entry of branch) {
      if (entry.type !== "message") continue;
      const message = entry.message;
      if (message.role === "assistant") {
        for (const part of message.content) if (part.type === "toolCall") calls.set(part.id, message.stopReason === "toolUse");
      } else if (message.role === "toolResult") {
        results.set(message.toolCallId, (results.get(message.toolCallId) ?? 0) + 1);
      }
    }
    this.toolCalls += calls.size;
    for (const [id, asked] of calls) {
      const count = results.get(id) ?? 0;
      if (count > 1 || (asked && count !== 1)) this.violate("every tool call has exactly one result", `${where}: call ${id} has ${count} results`);
    }
    for (const id of results.keys()) if (!calls.has(id)) this.violate("every tool result answers a call", `${where}: result for unknown call ${id}`);
  }

  /** `replay: "never"`: the fixture saw each (operation, call id) at most once. */
  private async checkNeverTool(sessionId: string): Promise<void> {
    const seen = new Map<string, number>();
    for (const call of await this.fixtureCalls(sessionId)) {
      const body = call.body;
      if (typeof body !== "object" || body === null || !("toolCallId" in body) || !("operationId" in body)) continue;
      const key = `${String(body.operationId)}/${String(body.toolCallId)}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
      this.neverToolCalls++;
    }
    for (const [key, count] of seen) if (count > 1) this.violate('replay: "never" runs at most once', `${sessionId}: call ${key} reached the tool ${count} times`);
  }
}

/** The entries of the branch whose tip is `tipId`, root first. */
function branchOf(entries: Map<string, Entry>, tipId: string | null): Entry[] {
  const branch: Entry[] = [];
  for (let id = tipId; id !== null; ) {
    const entry = entries.get(id);
    if (!entry) break;
    branch.push(entry);
    id = entry.parentId;
  }
  return branch.reverse();
}
