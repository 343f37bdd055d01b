import type { OperationAdmission } from "../../schema/lane-answers.ts";
import type { Entry, NewEntry } from "../../schema/entries.ts";
import type { HarnessEvent, LaneQueuedItem } from "../../schema/lane.ts";
import type { AgentMessage } from "../../schema/messages.ts";
import type { DeferredMode, HarnessResources, HarnessSettings } from "../../schema/settings.ts";
import { branchTip, operationResult, pendingEntry, sessionAgent } from "../session/builtin-addresses.ts";
import { isUuidV7 } from "../session/ids.ts";
import { deleteValue, insertEntry, setValue } from "../session/writes.ts";
import type { HarnessCore } from "./core.ts";
import { err, ok, type LaneError, type Result } from "./errors.ts";
import { selectEligible } from "./inbox.ts";
import type { Planner } from "./lane-command.ts";
import { entryOfQueued, queueView, type LaneProjection } from "./lane-state.ts";
import type { SessionReader } from "../session/mutation.ts";
import { normalizePrompt, type PromptInput } from "./messages.ts";
import type { OperationMeta, OperationState, RunSettings } from "./types.ts";
import type { ImageContent } from "../../schema/messages.ts";
import { firstRequestIntent, type FirstRequest, type FirstRequestLane } from "./first-request.ts";

/** A run request (reference §3.1). */
export type RunRequest = (
  | { kind: "prompt"; prompt: PromptInput; images?: ImageContent[] }
  | { kind: "skill"; name: string; additionalInstructions?: string }
  | { kind: "prompt_template"; name: string; args?: string[] }
) & { operationId?: string; deferred?: DeferredMode };

/**
 * A navigation request (reference §3.1): move the lane's tip to `targetId` (null: the root),
 * optionally labelling the target. Summarized navigation arrives with the summary leaves.
 */
/** Navigation (reference §3.1, §6.5): move the lane's tip; `summarize` also summarizes the branch it leaves. */
export type NavigationRequest = { kind: "navigation"; targetId: string | null; label?: string; summarize?: boolean; customInstructions?: string; operationId?: string };

/** A manual compaction request (reference §3.1): summarize the lane's context so far. */
export type CompactionRequest = { kind: "compaction"; customInstructions?: string; operationId?: string };

export type OperationRequest = RunRequest | NavigationRequest | CompactionRequest;

export type { OperationAdmission };

/** What an operation captures at acceptance, read on the line: the settings, and the agent version the session is bound to. */
export function runSettingsOf(settings: HarnessSettings, m: Pick<SessionReader, "getValue">): RunSettings {
  const agent = m.getValue(sessionAgent)?.value;
  return {
    compaction: settings.compaction,
    steeringMode: settings.steeringMode,
    followUpMode: settings.followUpMode,
    toolExecution: settings.toolExecution,
    ...(agent && { agent: { id: agent.id, version: agent.version } }),
  };
}

/** Skill and template requests become one user message; an empty template becomes none. */
export function requestMessages(
  request: RunRequest,
  resources: HarnessResources,
  now: number,
): Result<AgentMessage[]> | { ok: false; error: LaneError } {
  switch (request.kind) {
    case "prompt": {
      const normalized = normalizePrompt(request.prompt, request.images, now);
      return normalized.ok ? ok(normalized.messages) : err({ code: "InvalidMessage", lane: "", reason: normalized.reason });
    }
    case "skill": {
      const skill = resources.skills[request.name];
      if (!skill) return err({ code: "UnknownSkill", name: request.name });
      const extra = request.additionalInstructions ? `\n\n${request.additionalInstructions}` : "";
      const text = `<skill name="${request.name}">\n${skill.content}\n</skill>${extra}`;
      return ok([{ role: "user", content: text, timestamp: now }]);
    }
    case "prompt_template": {
      const template = resources.promptTemplates[request.name];
      if (!template) return err({ code: "UnknownTemplate", name: request.name });
      const text = formatTemplate(template.content, request.args ?? []);
      return ok(text.length === 0 ? [] : [{ role: "user", content: text, timestamp: now }]);
    }
  }
}

/** `$1`…`$9` are positional arguments; `$@` and `$ARGUMENTS` are all of them joined by spaces. */
export function formatTemplate(content: string, args: readonly string[]): string {
  return content
    .replace(/\$(?:@|ARGUMENTS)/g, args.join(" "))
    .replace(/\$([1-9])/g, (_, index: string) => args[Number(index) - 1] ?? "")
    .trim();
}

/**
 * What every acceptance refuses before anything else (reference §3.1), on the line: a busy lane,
 * and an operation id that is not a fresh UUIDv7 (settled, or still open or pending on any lane).
 */
export function admissionRefusal(core: Pick<HarnessCore, "operationOpen">, m: Pick<SessionReader, "getValue">, state: LaneProjection, lane: string, operationId: string): LaneError | undefined {
  if (state.operation) {
    const { meta } = state.operation;
    return { code: "LaneBusy", lane, operationId: meta.operationId, operationKind: meta.intent.kind };
  }
  if (!isUuidV7(operationId) || core.operationOpen(operationId, lane) || state.pending.includes(operationId) || m.getValue(operationResult(operationId))) {
    return { code: "InvalidOperationId", operationId };
  }
  return undefined;
}

/**
 * A caller that drives the run at once in this process: the acceptance may carry the run's first
 * request intent (first-request.ts), handed to `carried` when it does.
 */
export interface DrivenAtOnce {
  lane: FirstRequestLane;
  carried(first: FirstRequest): void;
}

/**
 * The acceptance transaction (reference §3.1): one commit captures eligible inbox items in global
 * order, places them and then the request's messages, and opens the operation at `starting` (or,
 * driven at once, at its first request intent when that is exact: first-request.ts). It installs
 * no drive and runs no hook, provider, tool or timer.
 */
export function planRunAcceptance(
  core: HarnessCore,
  lane: string,
  operationId: string,
  promptMessages: AgentMessage[],
  deferred?: DeferredMode,
  drivenAtOnce?: DrivenAtOnce,
): Planner<Result<OperationAdmission>> {
  return (m, state) => {
    const refused = admissionRefusal(core, m, state, lane, operationId);
    if (refused) return { writes: [], value: err(refused) };
    const settings = core.settings();
    const { selected, remainder } = selectEligible(state.inbox, {
      write: true,
      nextRun: true,
      steer: settings.steeringMode,
      followUp: settings.followUpMode,
    });
    // A lone queued write never validates acceptance (§3.1 validity rule).
    if (promptMessages.length === 0 && !selected.some((item) => item.kind !== "write")) {
      return { writes: [], value: err({ code: "InvalidMessage", lane, reason: "empty" }) };
    }
    const startedAt = core.clock();
    const captured = selected.flatMap((item) => state.queued.get(item.entryId) ?? []);
    const placed: NewEntry[] = [];
    let parentId = state.tipId;
    for (const view of captured) {
      placed.push(entryOfQueued(view, parentId));
      parentId = view.entryId;
    }
    const promptEntryIds: string[] = [];
    for (const message of promptMessages) {
      const id = core.ids.next(startedAt);
      placed.push({ id, parentId, type: "message", message });
      promptEntryIds.push(id);
      parentId = id;
    }
    const meta: OperationMeta = { operationId, lane, sourceTipId: state.tipId, startedAt, intent: { kind: "run", promptEntryIds } };
    const starting: OperationState = {
      at: "starting",
      control: { status: "running" },
      settings: { ...runSettingsOf(settings, m), ...(deferred !== undefined && { deferred }) },
      latestAssistantEntryId: null,
    };
    const first = drivenAtOnce && parentId !== null ? firstRequestIntent(core, drivenAtOnce.lane, state, promptMessages, starting, operationId, parentId) : undefined;
    const opState: OperationState = first?.state ?? starting;
    const capturedIds = new Set(captured.map((view) => view.entryId));
    const queued = new Map([...state.queued].filter(([id]) => !capturedIds.has(id)));
    return {
      writes: [
        ...placed.map(insertEntry),
        ...captured.map((view) => deleteValue(pendingEntry(view.entryId))),
        setValue(branchTip(lane), parentId),
      ],
      next: { ...state, tipId: parentId, inbox: remainder, queued, operation: { meta, state: opState } },
      events: (done) => [
        { type: "run_start", lane, runId: operationId, startedAt },
        ...placementEvents(lane, operationId, done?.entries ?? []),
        ...(captured.length > 0 ? [queueUpdate(lane, queueView({ inbox: remainder, queued }))] : []),
        ...(first ? [first.turnStart] : []),
      ],
      afterCommit: () => {
        if (first) drivenAtOnce?.carried(first);
        core.wake.due(lane, operationId, startedAt);
      },
      value: ok({ operationId, kind: "run", startedAt }),
    };
  };
}

/** Message lifecycle then `entry_added`, per placed entry, in placement order (§5.2). */
export function placementEvents(lane: string, runId: string | undefined, entries: readonly Entry[]): HarnessEvent[] {
  return entries.flatMap((entry): HarnessEvent[] => {
    const added: HarnessEvent = { type: "entry_added", lane, entry };
    if (entry.type !== "message") return [added];
    const run = runId === undefined ? {} : { runId };
    return [
      { type: "message_start", lane, ...run, message: entry.message },
      { type: "message_end", lane, ...run, message: entry.message, entryId: entry.id },
      added,
    ];
  });
}

export function queueUpdate(lane: string, queues: LaneQueuedItem[]): HarnessEvent {
  return { type: "queue_update", lane, queues };
}
