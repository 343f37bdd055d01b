import type { AgentVersionRef } from "../../schema/agent-binding.ts";
import type { JsonObject, JsonValue } from "../../schema/json.ts";
import type { ToolResultMessage } from "../../schema/messages.ts";
import type { ToolExecutionMode } from "../../schema/settings.ts";
import type { Usage } from "../../schema/usage.ts";

// The Tools port (reference §7.2, ARCHITECTURE D11). The engine knows tools only through this
// port: a declaration (what the model is told and how a lost effect is treated) and either an
// implementation it executes or a client that answers the call from outside. Tools never get the
// Session, a mutator or storage: memos and progress checkpoints are their only durable surface.

/** What happens to an effect whose outcome a process loss left unknown: re-run it, or report it interrupted. */
export type ToolReplay = "never" | "safe";

export interface ToolDeclaration {
  name: string;
  description: string;
  /** The JSON Schema of the arguments (an object schema). */
  parameters: JsonObject;
  replay: ToolReplay;
  /** Overrides the run's execution mode: one sequential tool makes its whole batch sequential. */
  executionMode?: ToolExecutionMode;
  /** Who implements it ("builtin", "http", "client", or a host's own kind). */
  kind: string;
}

/** Text and image blocks, as a tool result carries them. */
export type ToolContent = ToolResultMessage["content"];

/** A partial or final result as tools produce it. */
export interface ToolOutput {
  content: ToolContent;
  details?: JsonValue;
  isError?: boolean;
  usage?: Usage;
  /** Names this result makes active on the lane from its placement on. */
  addedToolNames?: string[];
  /** True on every result of a batch ends the run without another assistant turn. */
  terminate?: boolean;
}

/** A progress update; `checkpoint` also stores it durably (the latest one survives a crash). */
export type ToolProgress = Pick<ToolOutput, "content" | "details" | "usage">;

/**
 * The invocation's durable identity (stable across a safe replay) and its memos: values the
 * invocation records once and reads back after a replay. Every memo operation is checked on the
 * line against the call still being in flight; after the call settles they reject.
 */
export interface ToolInvocation {
  invocationId: string;
  operationId: string;
  /** The lane whose run made the call. */
  lane: string;
  /** The agent version the run was accepted under (its RunSettings), when the session is bound to one. */
  agent?: AgentVersionRef;
  turnId: string;
  getMemo(name: string): Promise<JsonValue | undefined>;
  setMemo(name: string, value: JsonValue | undefined): Promise<void>;
}

export interface ToolExecuteContext {
  toolCallId: string;
  /** Aborted when the operation is aborted or the harness closes. */
  signal: AbortSignal;
  onUpdate(partial: ToolProgress, options?: { checkpoint?: true }): void;
  invocation: ToolInvocation;
}

/** A tool the engine executes (builtin, http, a host's own). */
export interface ExecutableTool {
  readonly kind: "executable";
  readonly declaration: ToolDeclaration;
  /** A compatibility shim run before validation; a throw becomes an error result. */
  prepareArguments?(args: JsonObject): JsonObject;
  /** Throws on failure: the message becomes an error result. */
  execute(args: JsonObject, context: ToolExecuteContext): Promise<ToolOutput>;
}

/** A tool the tenant's client executes: the run waits until a result is posted. */
export interface ClientTool {
  readonly kind: "client";
  readonly declaration: ToolDeclaration;
  /** Without a result within this long the call ends with an error result. */
  readonly timeoutMs?: number;
}

export type ResolvedTool = ExecutableTool | ClientTool;

export interface ToolsPort {
  /** The tool a name resolves to now, if any. */
  resolve(name: string): ResolvedTool | undefined;
}

export const noTools: ToolsPort = { resolve: () => undefined };

/**
 * Runs `effect` at most once per invocation as far as its result goes: the memo `name` answers a
 * repeat (after a safe replay), else the effect runs and its result is recorded. Recorded exactly
 * once, executed at least once: a crash between the effect and the memo runs it again.
 */
export async function step(invocation: ToolInvocation, name: string, effect: () => Promise<JsonValue>): Promise<JsonValue> {
  const recorded = await invocation.getMemo(name);
  if (recorded !== undefined) return recorded;
  const result = await effect();
  await invocation.setMemo(name, result);
  return result;
}

/** Memo names are non-empty and contain no `:` (they end a storage key). */
export function validMemoName(name: string): boolean {
  return name.length > 0 && name.length <= 128 && !name.includes(":");
}
