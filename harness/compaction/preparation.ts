import type { Entry } from "../../schema/entries.ts";
import { isJsonObject, type JsonValue } from "../../schema/json.ts";
import type { AgentMessage } from "../../schema/messages.ts";
import type { CompactionSettings } from "../../schema/settings.ts";
import { projectEntries, type EntryProjectors } from "../execution/context.ts";
import { estimateContextTokens, estimateMessageTokens, usageTokens } from "./tokens.ts";

// Compaction preparation (reference §6.2): over the compaction-bounded path (newest compaction ..
// tip), where to cut, what to summarize and what to keep verbatim. The context a compaction sees is
// the previous summary (if any), its retained tail, then every later entry's messages, exactly as a
// provider request would (§6.4); the cut works on that message list.

/** Files the summarized work touched: carried from the previous compaction and the tool calls. */
export interface FileOps {
  read: string[];
  written: string[];
  edited: string[];
}

export interface CompactionPreparation {
  /** Messages before the cut (before the split turn's start), summarized. */
  messagesToSummarize: AgentMessage[];
  /** A split turn's beginning, summarized by its own request (empty unless `isSplitTurn`). */
  turnPrefixMessages: AgentMessage[];
  /** Messages kept verbatim after the summary. */
  retainedTail: AgentMessage[];
  isSplitTurn: boolean;
  tokensBefore: number;
  /** The newest compaction's summary: the new summary updates it instead of starting over. */
  previousSummary?: string;
  fileOps: FileOps;
  settings: CompactionSettings;
}

/** Where the preparation cut a path's message list: what is stored, the messages are re-derived. */
export interface CompactionCut {
  cutIndex: number;
  /** The split turn's first message, when the cut falls inside a turn. */
  turnStartIndex?: number;
}

/** The messages of a bounded path as compaction sees them, with the previous compaction's parts. */
export interface PathContext {
  messages: AgentMessage[];
  previousSummary?: string;
  previousDetails?: JsonValue;
  /** How many leading messages are the previous compaction's retained tail. */
  retainedCount?: number;
}

export function pathContext(path: readonly Entry[], projectors: EntryProjectors = {}): PathContext {
  const first = path[0];
  if (first?.type !== "compaction") return { messages: projectEntries(path, projectors) };
  return {
    messages: [...first.retainedTail, ...projectEntries(path.slice(1), projectors)],
    previousSummary: first.summary,
    ...(first.details !== undefined && { previousDetails: first.details }),
    retainedCount: first.retainedTail.length,
  };
}

/**
 * The estimated size of the context a path projects to, its previous summary included (§6.1). A
 * response kept in a compaction's retained tail counted the context before that compaction, so
 * only a later response's count anchors the estimate (else a compaction would look as large as
 * what it replaced, and compact again at once).
 */
export function contextTokens(context: PathContext): number {
  const { messages, previousSummary } = context;
  if (previousSummary === undefined) return estimateContextTokens(messages);
  const summary: AgentMessage = { role: "compactionSummary", summary: previousSummary, tokensBefore: 0, timestamp: 0 };
  return estimateContextTokens([summary, ...messages], 1 + (context.retainedCount ?? 0));
}

/**
 * `contextTokens(pathContext(path))` without projecting the whole path: the newest response with
 * a provider count after the compaction anchors it, and only the entries after it are projected
 * and estimated (a warm boundary pays for its newest messages, not for the whole context).
 */
export function pathTokens(path: readonly Entry[], projectors: EntryProjectors = {}): number {
  const first = path[0]?.type === "compaction" ? 1 : 0;
  for (let index = path.length - 1; index >= first; index--) {
    const entry = path[index];
    if (entry?.type !== "message" || entry.message.role !== "assistant") continue;
    const { message } = entry;
    if (message.stopReason === "error" || message.stopReason === "aborted") continue;
    const counted = usageTokens(message.usage);
    if (counted === undefined) continue;
    return counted + projectEntries(path.slice(index + 1), projectors).reduce((sum, later) => sum + estimateMessageTokens(later), 0);
  }
  return contextTokens(pathContext(path, projectors));
}

/** Any message but a tool result (§6.2): a call and its result are never separated. */
function isCutPoint(message: AgentMessage): boolean {
  return message.role !== "toolResult";
}

/** Where a turn begins: input from outside the assistant loop. */
function isTurnStart(message: AgentMessage): boolean {
  return message.role === "user" || message.role === "custom" || message.role === "bashExecution" || message.role === "branchSummary";
}

/**
 * The cut (§6.2): walking back from the newest message, accumulate estimated tokens until
 * `keepRecentTokens` is reached, then cut at the first valid cut point at or after that position.
 * When none follows it (the budget is reached inside the newest messages, all tool results: a
 * large file just read), the nearest cut point before it is taken, so the kept part is somewhat
 * over the budget instead of everything (which would leave nothing to compact, and an overflow
 * nothing to recover with). Never reaching the budget keeps everything (cut 0). A cut inside a
 * turn marks the turn split.
 */
export function findCut(messages: readonly AgentMessage[], keepRecentTokens: number): CompactionCut {
  const cutPoints = messages.flatMap((message, index) => (isCutPoint(message) ? [index] : []));
  let cutIndex = 0;
  let accumulated = 0;
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (!message) continue;
    accumulated += estimateMessageTokens(message);
    if (accumulated >= keepRecentTokens) {
      cutIndex = cutPoints.find((point) => point >= index) ?? cutPoints.findLast((point) => point < index) ?? 0;
      break;
    }
  }
  const cut = messages[cutIndex];
  if (!cut || isTurnStart(cut)) return { cutIndex };
  for (let index = cutIndex - 1; index >= 0; index--) {
    const message = messages[index];
    if (message && isTurnStart(message)) return { cutIndex, turnStartIndex: index };
  }
  return { cutIndex };
}

/**
 * `prepareCompaction(path, settings)`: undefined when there is nothing to summarize (everything
 * fits in the kept tail). `tokensBefore` estimates the whole current context, summary included.
 */
export function prepareCompaction(path: readonly Entry[], settings: CompactionSettings, projectors: EntryProjectors = {}): CompactionPreparation | undefined {
  const context = pathContext(path, projectors);
  const cut = findCut(context.messages, settings.keepRecentTokens);
  return preparationAt(context, cut, settings);
}

/** The preparation a stored cut names over the same path (the reconstruction of §3.4). */
export function preparationAt(context: PathContext, cut: CompactionCut, settings: CompactionSettings): CompactionPreparation | undefined {
  const { messages, previousSummary } = context;
  const summarizedEnd = cut.turnStartIndex ?? cut.cutIndex;
  const messagesToSummarize = messages.slice(0, summarizedEnd);
  const turnPrefixMessages = cut.turnStartIndex === undefined ? [] : messages.slice(cut.turnStartIndex, cut.cutIndex);
  if (messagesToSummarize.length === 0 && turnPrefixMessages.length === 0) return undefined;
  return {
    messagesToSummarize,
    turnPrefixMessages,
    retainedTail: messages.slice(cut.cutIndex),
    isSplitTurn: cut.turnStartIndex !== undefined,
    tokensBefore: contextTokens(context),
    ...(previousSummary !== undefined && { previousSummary }),
    fileOps: fileOpsOf([context.previousDetails], [...messagesToSummarize, ...turnPrefixMessages]),
    settings,
  };
}

const READ_TOOLS = new Set(["read", "read_file"]);
const WRITE_TOOLS = new Set(["write", "write_file"]);
const EDIT_TOOLS = new Set(["edit", "edit_file"]);

/**
 * Carried forward from earlier summaries' `details.readFiles/modifiedFiles` (the previous
 * compaction's; a branch summary's too), then extracted from the summarized tool calls that name a
 * `path` (or `file_path`).
 */
export function fileOpsOf(carried: readonly (JsonValue | undefined)[], messages: readonly AgentMessage[]): FileOps {
  const read = new Set<string>(carried.flatMap((details) => stringsAt(details, "readFiles")));
  const written = new Set<string>();
  const edited = new Set<string>(carried.flatMap((details) => stringsAt(details, "modifiedFiles")));
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    for (const block of message.content) {
      if (block.type !== "toolCall") continue;
      const path = block.arguments.path ?? block.arguments.file_path;
      if (typeof path !== "string") continue;
      if (READ_TOOLS.has(block.name)) read.add(path);
      else if (WRITE_TOOLS.has(block.name)) written.add(path);
      else if (EDIT_TOOLS.has(block.name)) edited.add(path);
    }
  }
  return { read: [...read].sort(), written: [...written].sort(), edited: [...edited].sort() };
}

/** The compaction entry's `details`: files only read, and files modified (written or edited). */
export function fileDetails(fileOps: FileOps): { readFiles: string[]; modifiedFiles: string[] } {
  const modified = new Set([...fileOps.written, ...fileOps.edited]);
  return { readFiles: fileOps.read.filter((path) => !modified.has(path)), modifiedFiles: [...modified].sort() };
}

function stringsAt(details: JsonValue | undefined, key: string): string[] {
  if (!isJsonObject(details)) return [];
  const list = details[key];
  return Array.isArray(list) ? list.filter((item): item is string => typeof item === "string") : [];
}

/**
 * The durable preparation (`pi.op.preparation/{op}:{taskId}`): the path it was cut from and where,
 * never the messages themselves (entries are write-once, so the path ending at `tipId` reads back
 * the same; a stored preparation stays small whatever the conversation's size).
 */
export interface StoredCompactionPreparation {
  kind: "compaction";
  tipId: string;
  messageCount: number;
  cutIndex: number;
  turnStartIndex?: number;
}

export function storedPreparation(tipId: string, context: PathContext, cut: CompactionCut): StoredCompactionPreparation {
  return {
    kind: "compaction",
    tipId,
    messageCount: context.messages.length,
    cutIndex: cut.cutIndex,
    ...(cut.turnStartIndex !== undefined && { turnStartIndex: cut.turnStartIndex }),
  };
}

/**
 * The preparation a stored one names, over the path read back from its tip. Should the projection
 * of that path have changed (entry projectors are registered per process), the cut is chosen again.
 */
export function reconstructPreparation(
  stored: StoredCompactionPreparation,
  path: readonly Entry[],
  settings: CompactionSettings,
  projectors: EntryProjectors = {},
): CompactionPreparation | undefined {
  const context = pathContext(path, projectors);
  const cut: CompactionCut =
    context.messages.length === stored.messageCount
      ? { cutIndex: stored.cutIndex, ...(stored.turnStartIndex !== undefined && { turnStartIndex: stored.turnStartIndex }) }
      : findCut(context.messages, settings.keepRecentTokens);
  return preparationAt(context, cut, settings);
}
