import type { LeafName } from "../../../harness/runtime/types.ts";

// The crash matrix (QUALITY R1, reference §4.6 and §9.3 Tier A) as data: every leaf of the 13 ×
// every crash position × every intent, filtered by reachability. A cell (leaf × position) either
// names the intents whose operation can be killed there, or says in one word why the position does
// not exist for that leaf. The drivers (driver.ts, hosted.ts) turn each reachable triple into a
// real kill; the summary (tally.ts) prints how many combinations exist, how many ran and passed.

/** The four durable crash positions of a repeat-sensitive effect (reference §4.6). */
export const POSITIONS = ["before_intent", "after_intent", "during_effect", "after_settlement"] as const;
export type Position = (typeof POSITIONS)[number];

export type IntentClass = "prompt" | "tool" | "client" | "compaction" | "navigation" | "deferred";

/**
 * The intents, by class. Tools of each kind that runs code (builtin, http, MCP) and each replay
 * class (`never`, `safe`: the two tools/ defines; builtin tools are all `safe`); client tools are
 * their own class (the tenant's client is the effect).
 */
export const INTENTS = {
  prompt: "prompt",
  "tool:builtin:safe": "tool",
  "tool:http:never": "tool",
  "tool:http:safe": "tool",
  "tool:mcp:never": "tool",
  "tool:mcp:safe": "tool",
  client: "client",
  "compaction:manual": "compaction",
  "compaction:threshold": "compaction",
  "compaction:overflow": "compaction",
  "navigation:plain": "navigation",
  "navigation:summarized": "navigation",
  deferred: "deferred",
} as const satisfies Record<string, IntentClass>;
export type IntentName = keyof typeof INTENTS;
export const INTENT_NAMES = Object.keys(INTENTS) as IntentName[];

/** Intents whose tools live outside the object (a real local server): they run through the hosted object (hosted.ts). */
export const HOSTED_INTENTS: readonly IntentName[] = ["tool:http:never", "tool:http:safe", "tool:mcp:never", "tool:mcp:safe"];

/** Why a position does not exist for a leaf, in one word. */
export type Absent =
  /** The leaf performs no effect of its own (nothing is in flight there). */
  | "no-effect"
  /** The leaf is entered only by acceptance: no settlement leads into it. */
  | "acceptance"
  /** The durable state at that position is another leaf (the cell of that leaf covers it). */
  | "next-leaf"
  /** The intent commit of this effect is made at the leaf before it (that leaf's before_intent cell). */
  | "prior-leaf";

type Cell = readonly IntentName[] | Absent;

/** Every intent that is a run (manual compaction and navigation are structural operations). */
const RUNS: readonly IntentName[] = [
  "prompt",
  "tool:builtin:safe",
  "tool:http:never",
  "tool:http:safe",
  "tool:mcp:never",
  "tool:mcp:safe",
  "client",
  "compaction:threshold",
  "compaction:overflow",
  "deferred",
];
const TOOLS: readonly IntentName[] = ["tool:builtin:safe", "tool:http:never", "tool:http:safe", "tool:mcp:never", "tool:mcp:safe", "client"];
const SUMMARIES: readonly IntentName[] = ["compaction:manual", "compaction:threshold", "compaction:overflow", "navigation:summarized"];

/**
 * The table. A `Record` over LeafName: the compiler refuses it unless all 13 leaves are rows.
 * - starting: entered only by acceptance; killed in `before_run`, before the start commit.
 * - checkpoint: the boundary pass (before the next intent) and right after the settlement that entered it.
 * - assistant.ready: before the request intent (in `before_request`); after the settlement of an
 *   in-run compaction that resumes to a new request (overflow: the continuation needs an assistant).
 * - assistant.effect_pending: after the intent with no frame; during the stream with frames committed.
 * - assistant.retry_wait: after a retryable failure settled.
 * - tools: a call planned (before its intent), effect_pending with no progress, in its effect
 *   (progress checkpoint, a server holding the call, a client result posted but not staged), and
 *   after its staging commit (outcome_ready).
 * - deferred.suspended: before the poll intent, and after a still-pending poll settled back into it.
 * - deferred.effect_pending: after the poll intent (no frame) and during the poll's stream.
 * - summary.*: deciding (in the hook), ready (in `before_request`), effect_pending (a request
 *   admitted and lost; during: the second request of a split turn, the first one's usage
 *   committed), retry_wait (after a failed attempt settled).
 * - navigation.ready_to_commit: entered only by acceptance; killed before its one commit.
 */
export const TABLE: Record<LeafName, Record<Position, Cell>> = {
  starting: { before_intent: RUNS, after_intent: "no-effect", during_effect: "no-effect", after_settlement: "acceptance" },
  checkpoint: { before_intent: RUNS, after_intent: "no-effect", during_effect: "no-effect", after_settlement: RUNS },
  "assistant.ready": { before_intent: RUNS, after_intent: "next-leaf", during_effect: "next-leaf", after_settlement: ["compaction:overflow"] },
  "assistant.effect_pending": { before_intent: "prior-leaf", after_intent: RUNS, during_effect: RUNS, after_settlement: "next-leaf" },
  "assistant.retry_wait": { before_intent: "no-effect", after_intent: "no-effect", during_effect: "no-effect", after_settlement: RUNS },
  tools: { before_intent: TOOLS, after_intent: TOOLS, during_effect: TOOLS, after_settlement: TOOLS },
  "deferred.suspended": { before_intent: ["deferred"], after_intent: "next-leaf", during_effect: "next-leaf", after_settlement: ["deferred"] },
  "deferred.effect_pending": { before_intent: "prior-leaf", after_intent: ["deferred"], during_effect: ["deferred"], after_settlement: "next-leaf" },
  "summary.deciding": { before_intent: SUMMARIES, after_intent: "no-effect", during_effect: "no-effect", after_settlement: "no-effect" },
  "summary.ready": { before_intent: SUMMARIES, after_intent: "next-leaf", during_effect: "next-leaf", after_settlement: "no-effect" },
  "summary.effect_pending": { before_intent: "prior-leaf", after_intent: SUMMARIES, during_effect: ["compaction:manual"], after_settlement: "next-leaf" },
  "summary.retry_wait": { before_intent: "no-effect", after_intent: "no-effect", during_effect: "no-effect", after_settlement: SUMMARIES },
  "navigation.ready_to_commit": { before_intent: ["navigation:plain"], after_intent: "no-effect", during_effect: "no-effect", after_settlement: "acceptance" },
};

export const LEAVES = Object.keys(TABLE) as LeafName[];

/** The test file (family) each leaf's cases run in, so vitest spreads the matrix over its workers. */
export type Family = "run" | "tools" | "structural" | "deferred";
export const FAMILY: Record<LeafName, Family> = {
  starting: "run",
  checkpoint: "run",
  "assistant.ready": "run",
  "assistant.effect_pending": "run",
  "assistant.retry_wait": "run",
  tools: "tools",
  "deferred.suspended": "deferred",
  "deferred.effect_pending": "deferred",
  "summary.deciding": "structural",
  "summary.ready": "structural",
  "summary.effect_pending": "structural",
  "summary.retry_wait": "structural",
  "navigation.ready_to_commit": "structural",
};

export interface MatrixCase {
  leaf: LeafName;
  position: Position;
  intent: IntentName;
  /** False when the case is reachable but sampled out (see `sampled`). */
  runs: boolean;
}

/**
 * Sampling: the http and MCP members of the tool class run only in the tools leaf, the one leaf
 * whose behaviour depends on the tool's kind and replay class; elsewhere (starting, checkpoint,
 * assistant.*) the class is run by its builtin member, whose run reaches those leaves the same way.
 * So every leaf × position × intent class that is reachable runs at least once.
 */
function sampled(leaf: LeafName, intent: IntentName): boolean {
  return HOSTED_INTENTS.includes(intent) && leaf !== "tools";
}

/** Every reachable leaf × position × intent, in table order. */
export function casesOf(family?: Family): MatrixCase[] {
  return LEAVES.filter((leaf) => family === undefined || FAMILY[leaf] === family).flatMap((leaf) =>
    POSITIONS.flatMap((position) => {
      const cell = TABLE[leaf][position];
      return typeof cell === "string" ? [] : cell.map((intent) => ({ leaf, position, intent, runs: !sampled(leaf, intent) }));
    }),
  );
}

/** The size of the whole cross product (13 leaves × 4 positions × every intent). */
export const COMBINATIONS = LEAVES.length * POSITIONS.length * INTENT_NAMES.length;

export const caseName = (c: Pick<MatrixCase, "leaf" | "position" | "intent">): string => `${c.leaf} × ${c.position} × ${c.intent}`;
