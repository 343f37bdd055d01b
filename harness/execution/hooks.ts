import type { JsonObject, JsonValue } from "../../schema/json.ts";
import type { CompactionReason, HarnessEvent, ModelIdentity, OperationKind } from "../../schema/lane.ts";
import type { AgentMessage, AssistantMessage, StopReason, ToolResultMessage } from "../../schema/messages.ts";
import type { Usage } from "../../schema/usage.ts";
import type { BranchPreparation } from "../compaction/branch-summary.ts";
import type { CompactionPreparation } from "../compaction/preparation.ts";
import { errorMessage, InvalidHookResult } from "./errors.ts";

// Harness-global hooks: awaited interception (reference §5.1, ARCHITECTURE D12). Handlers run in
// registration order; each whole pipeline is admitted through the Drive's gate as one unit by the caller
// (`gate.admit((signal) => hooks.runBeforeTool(event, { signal }))`). A throwing handler is reported
// through `onHandlerError` and skipped, except `before_drive` (rethrown: fails the pass) and
// `before_tool` (becomes a block with the error message): both fail closed.

/** The 11 hooks of §5.1 (the keys of HOOK_DURABILITY at runtime). */
export type HookName = keyof HookEvents;

/** pass-local: affects this pass only; request-local: lives while one provider request is built;
 * transition-consumed: commits with the dependent transition (a crash before it may rerun the hook). */
export type HookDurability = "pass-local" | "request-local" | "transition-consumed";
export const HOOK_DURABILITY = {
  before_drive: "pass-local",
  before_run: "transition-consumed", before_run_end: "transition-consumed",
  transform_context: "request-local", before_request: "request-local", before_payload: "request-local",
  after_response: "transition-consumed", before_tool: "transition-consumed", after_tool: "transition-consumed",
  before_compaction: "transition-consumed", before_navigation: "transition-consumed",
} as const satisfies Record<HookName, HookDurability>;

/** The model a request targets: its identity plus the limits hooks may reason about. */
export type HookModel = ModelIdentity & { contextWindow: number; maxTokens: number };
export type RequestStep = "assistant" | "deferred" | "compaction" | "branch_summary";
/** Plain provider stream options (no signal, no lifecycle callbacks: those are stripped). */
export type StreamOptionsPatch = { [key: string]: JsonValue | undefined };
/** The harness resources a run may draw on (skills, prompt templates), opaque here. */
export type HookResources = { skills?: JsonValue; promptTemplates?: JsonValue };
export type SettledAssistantMessage = AssistantMessage & { stopReason: Exclude<StopReason, "pending"> };
/** What `before_compaction` sees: the reconstructed preparation (reference §6.2). */
export type CompactionPreparationView = CompactionPreparation;
/** What `before_navigation` sees: the abandoned branch as the summarizer would read it (reference §6.5). */
export type BranchPreparationView = BranchPreparation & { fromTipId: string; ancestorId: string | null };
/** A hook-supplied compaction, used as-is (§6.3). */
export type CompactResult = {
  summary: string;
  tokensBefore: number;
  usage?: Usage;
  retainedTail: AgentMessage[];
  details?: JsonValue;
};
/** A hook-supplied branch summary (§6.5). */
export type BranchSummaryResult = { summary: string; usage?: Usage; readFiles: string[]; modifiedFiles: string[] };
export type ToolBlock = { reason: string; terminate?: boolean };
export type ToolOutcome = { content: ToolResultMessage["content"]; details?: JsonValue; isError: boolean; usage?: Usage };

/** Event fields per hook (before `{lane, runId}` is added). */
export interface HookEvents {
  before_drive: { operation: OperationKind };
  before_run: { prompt: AgentMessage[]; resources: HookResources };
  before_run_end: { messages: AgentMessage[] };
  transform_context: { messages: AgentMessage[]; systemPrompt: string };
  before_request: { model: HookModel; step: RequestStep; attempt: number; streamOptions: StreamOptionsPatch };
  before_payload: { model: HookModel; payload: JsonValue };
  after_response: { status?: number; headers?: Record<string, string>; message: SettledAssistantMessage };
  before_tool: { toolCallId: string; toolName: string; args: JsonObject };
  after_tool: { toolCallId: string; toolName: string; args: JsonObject } & ToolOutcome;
  before_compaction: { reason: CompactionReason; preparation: CompactionPreparationView; customInstructions?: string };
  before_navigation: { targetId: string; preparation: BranchPreparationView; customInstructions?: string };
}
/** What one handler may return per hook. */
export interface HookResults {
  before_drive: void;
  before_run: { messages?: AgentMessage[] };
  before_run_end: { followUp?: string };
  transform_context: { messages?: AgentMessage[]; systemPrompt?: string };
  before_request: { streamOptions?: StreamOptionsPatch };
  before_payload: { payload?: JsonValue };
  after_response: { message?: SettledAssistantMessage };
  before_tool: { args?: JsonObject; block?: ToolBlock };
  after_tool: Partial<ToolOutcome> & { terminate?: boolean };
  before_compaction: { decline?: boolean; compaction?: CompactResult };
  before_navigation: { decline?: boolean; summary?: BranchSummaryResult };
}

export type HookScope = { lane: string; runId: string };
/** The triggering invocation's authority: the admitted effect signal of the Drive's gate. */
export type HookContext = { signal: AbortSignal };
export type HookEvent<N extends HookName> = HookEvents[N] & HookScope;
export type HookHandler<N extends HookName> = (
  event: HookEvent<N>,
  context: HookContext,
) => HookResults[N] | void | Promise<HookResults[N] | void>;

export type HookErrorInfo = { hook: HookName; handlerId?: string; lane: string; runId: string; error: unknown };
/** The `handler_error{kind:"hook"}` event for a reported hook failure. */
export function hookErrorEvent(info: HookErrorInfo): HarnessEvent {
  return { type: "handler_error", kind: "hook", hook: info.hook, error: errorMessage(info.error), lane: info.lane };
}

/** A structural hook's decision: the first decline or result stops the pipeline; neither → generate. */
export type StructuralDecision<R> =
  | { decision: "generate" }
  | { decision: "decline" }
  | { decision: "result"; result: R };
/** What each pipeline returns after aggregation. */
export interface HookOutputs {
  before_drive: void;
  /** Only the injected messages, in order (the caller appends them after the prompt). */
  before_run: { messages: AgentMessage[] };
  before_run_end: { followUp?: string };
  transform_context: { messages: AgentMessage[]; systemPrompt: string };
  before_request: { streamOptions: StreamOptionsPatch };
  before_payload: { payload: JsonValue };
  after_response: { message: SettledAssistantMessage };
  before_tool: { args: JsonObject; block?: ToolBlock };
  after_tool: ToolOutcome & { terminate?: boolean };
  before_compaction: StructuralDecision<CompactResult>;
  before_navigation: StructuralDecision<BranchSummaryResult>;
}
type AfterToolOutcome = HookOutputs["after_tool"];

type Registration<N extends HookName> = { handler: HookHandler<N>; id?: string };
type Step<N extends HookName> = { ok: true; result: HookResults[N] | undefined } | { ok: false; error: unknown };

const STRIPPED_OPTIONS = new Set(["signal", "onPayload", "onResponse", "onProviderStreamEvent"]);

type Run<N extends HookName> = (event: HookEvent<N>, ctx: HookContext) => Promise<HookOutputs[N]>;

export class HookRegistry {
  private readonly handlers: { [N in HookName]: Registration<N>[] } = {
    before_drive: [], before_run: [], before_run_end: [], transform_context: [], before_request: [],
    before_payload: [], after_response: [], before_tool: [], after_tool: [], before_compaction: [],
    before_navigation: [],
  };

  constructor(private readonly onHandlerError: (info: HookErrorInfo) => void) {}

  /** Registers a handler (after all earlier ones); the id is for observability only. */
  on<N extends HookName>(name: N, handler: HookHandler<N>, options: { id?: string } = {}): () => void {
    const registration: Registration<N> = options.id === undefined ? { handler } : { handler, id: options.id };
    const list: Registration<N>[] = this.handlers[name];
    list.push(registration);
    return () => {
      const index = list.indexOf(registration);
      if (index >= 0) list.splice(index, 1);
    };
  }

  /** Whether any handler is registered (lets callers skip work a pipeline would need). */
  has(name: HookName): boolean {
    return this.handlers[name].length > 0;
  }

  /** Fails closed: the first throw is reported and rethrown (the pass fails; ARCHITECTURE D14.24). */
  readonly runBeforeDrive: Run<"before_drive"> = async (event, ctx) => {
    for (const registration of this.bound("before_drive")) {
      const step = await this.call("before_drive", registration, { ...event }, ctx);
      if (!step.ok) throw step.error;
    }
  };

  /** Injections append; each handler sees the prompt plus prior injections. */
  readonly runBeforeRun: Run<"before_run"> = async (event, ctx) => {
    const none: AgentMessage[] = [];
    const view = (injected: AgentMessage[]) => ({ ...event, prompt: [...event.prompt, ...injected] });
    const messages = await this.fold("before_run", ctx, none, view, (injected, result) =>
      result.messages ? [...injected, ...result.messages] : injected);
    return { messages };
  };

  /** The latest defined follow-up wins. */
  readonly runBeforeRunEnd: Run<"before_run_end"> = (event, ctx) =>
    this.fold("before_run_end", ctx, {}, () => ({ ...event }), (state, result) =>
      result.followUp === undefined ? state : { followUp: result.followUp });

  /** Chained field patches. */
  readonly runTransformContext: Run<"transform_context"> = (event, ctx) => {
    const { messages, systemPrompt } = event;
    return this.fold("transform_context", ctx, { messages, systemPrompt }, (state) => ({ ...event, ...state }),
      (state, result) => ({
        messages: result.messages ?? state.messages,
        systemPrompt: result.systemPrompt ?? state.systemPrompt,
      }));
  };

  /** Chained shallow patches over the stream options; signal and lifecycle callbacks are stripped. */
  readonly runBeforeRequest: Run<"before_request"> = async (event, ctx) => {
    const view = (options: StreamOptionsPatch) => ({ ...event, streamOptions: { ...options } });
    const initial = stripOptions(event.streamOptions);
    const streamOptions = await this.fold("before_request", ctx, initial, view, (options, result) =>
      result.streamOptions ? { ...options, ...stripOptions(result.streamOptions) } : options);
    return { streamOptions };
  };

  /** Chained provider payload. */
  readonly runBeforePayload: Run<"before_payload"> = async (event, ctx) => {
    const payload = await this.fold("before_payload", ctx, event.payload, (current) => ({ ...event, payload: current }),
      (current, result) => (result.payload === undefined ? current : result.payload));
    return { payload };
  };

  /** Chained; a result must stay a settled assistant and may turn `aborted` only under an aborted signal. */
  readonly runAfterResponse: Run<"after_response"> = async (event, ctx) => {
    const view = (current: SettledAssistantMessage) => ({ ...event, message: current });
    const message = await this.fold("after_response", ctx, event.message, view, (current, result, registration) => {
      const next = result.message;
      if (next === undefined) return current;
      const invalid = !isSettledAssistant(next)
        ? "after_response must return a settled assistant message"
        : next.stopReason === "aborted" && current.stopReason !== "aborted" && !ctx.signal.aborted
          ? "after_response may return stopReason aborted only once the signal is aborted"
          : undefined;
      if (invalid === undefined) return next;
      this.report("after_response", registration, event, new InvalidHookResult(invalid));
      return current;
    });
    return { message };
  };

  /** Args chain; the first block is terminal. A throw blocks with the error message (fail-closed). */
  readonly runBeforeTool: Run<"before_tool"> = async (event, ctx) => {
    let args = event.args;
    for (const registration of this.bound("before_tool")) {
      const step = await this.call("before_tool", registration, { ...event, args }, ctx);
      if (!step.ok) return { args, block: { reason: errorMessage(step.error) } };
      if (step.result?.args !== undefined) args = step.result.args;
      if (step.result?.block !== undefined) return { args, block: step.result.block };
    }
    return { args };
  };

  /** Field-by-field patch; each handler sees the fields patched so far. */
  readonly runAfterTool: Run<"after_tool"> = (event, ctx) => {
    const { content, isError, details, usage } = event;
    const initial = withDefined({ content, isError }, { details, usage });
    return this.fold("after_tool", ctx, initial, (outcome) => ({ ...event, ...outcome }), withDefined);
  };

  /** Stops at the first decline or compaction; neither means generate. */
  readonly runBeforeCompaction: Run<"before_compaction"> = (event, ctx) =>
    this.structural("before_compaction", event, ctx, (result) => result.compaction);

  /** Stops at the first decline or summary; neither means generate. */
  readonly runBeforeNavigation: Run<"before_navigation"> = (event, ctx) =>
    this.structural("before_navigation", event, ctx, (result) => result.summary);

  /** One chained pass: each handler sees `view(state)`; each successful result folds into the state. */
  private async fold<N extends HookName, S>(
    name: N, ctx: HookContext, initial: S, view: (state: S) => HookEvent<N>,
    apply: (state: S, result: NonNullable<HookResults[N]>, registration: Registration<N>) => S,
  ): Promise<S> {
    let state = initial;
    for (const registration of this.bound(name)) {
      const step = await this.call(name, registration, view(state), ctx);
      if (step.ok && step.result !== undefined && step.result !== null) state = apply(state, step.result, registration);
    }
    return state;
  }

  /** Decline and a result from one handler is a handler error; that result is ignored. */
  private async structural<N extends "before_compaction" | "before_navigation", R>(
    name: N, event: HookEvent<N>, ctx: HookContext, pick: (result: HookResults[N]) => R | undefined,
  ): Promise<StructuralDecision<R>> {
    for (const registration of this.bound(name)) {
      const step = await this.call(name, registration, { ...event }, ctx);
      if (!step.ok || !step.result) continue;
      const result = pick(step.result);
      const decline = step.result.decline === true;
      if (decline && result !== undefined) {
        this.report(name, registration, event, new InvalidHookResult(`${name} returned both decline and a result`));
      } else if (decline) return { decision: "decline" };
      else if (result !== undefined) return { decision: "result", result };
    }
    return { decision: "generate" };
  }

  /** The handlers bound when a pipeline starts; (un)registration during a run affects later runs. */
  private bound<N extends HookName>(name: N): Registration<N>[] {
    const list: Registration<N>[] = this.handlers[name];
    return [...list];
  }

  private async call<N extends HookName>(
    name: N, registration: Registration<N>, event: HookEvent<N>, ctx: HookContext,
  ): Promise<Step<N>> {
    try {
      return { ok: true, result: (await registration.handler(event, ctx)) ?? undefined };
    } catch (error) {
      this.report(name, registration, event, error);
      return { ok: false, error };
    }
  }

  private report<N extends HookName>(name: N, registration: Registration<N>, event: HookScope, error: unknown): void {
    const info: HookErrorInfo = { hook: name, lane: event.lane, runId: event.runId, error };
    if (registration.id !== undefined) info.handlerId = registration.id;
    try {
      this.onHandlerError(info);
    } catch {
      // Reporting is observation only; a failing reporter never changes the pipeline's outcome.
    }
  }
}

function isSettledAssistant(message: { role: string; stopReason: StopReason }): boolean {
  return message.role === "assistant" && message.stopReason !== "pending";
}

/** `base` with every defined outcome field of `patch` (undefined never clears a field; other keys are ignored). */
function withDefined(base: AfterToolOutcome, patch: Partial<AfterToolOutcome>): AfterToolOutcome {
  const { content, details, isError, usage, terminate } = patch;
  return {
    ...base,
    ...(content !== undefined && { content }),
    ...(details !== undefined && { details }),
    ...(isError !== undefined && { isError }),
    ...(usage !== undefined && { usage }),
    ...(terminate !== undefined && { terminate }),
  };
}

function stripOptions(options: StreamOptionsPatch): StreamOptionsPatch {
  const out: StreamOptionsPatch = {};
  for (const [key, value] of Object.entries(options)) {
    if (STRIPPED_OPTIONS.has(key) || typeof value === "function") continue;
    out[key] = value;
  }
  return out;
}
