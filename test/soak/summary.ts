import type { InvariantChecker } from "./invariants.ts";
import type { LaneFollower } from "./lane-follower.ts";
import type { Ledger } from "./ledger.ts";
import type { SoakOptions } from "./options.ts";
import type { WebhookTally } from "./webhooks.ts";

// The soak's printed summary: what was accepted (cases), how often the server was killed, how the
// operations ended, where the queued inputs went, and every violation with what is needed to debug it.

export interface SummaryInput {
  options: SoakOptions;
  kills: number;
  /** Restarts tried again because another process took their port. */
  portRetries: number;
  inProgressRetries: number;
  /** How often the client tool answerers looked at their lanes. */
  clientPolls: number;
  seconds: number;
  ledger: Ledger;
  checker: InvariantChecker;
  followers: readonly LaneFollower[];
  webhooks: WebhookTally;
}

export function printSummary(log: (line: string) => void, input: SummaryInput): void {
  const { options, ledger, checker, followers } = input;
  const sum = (read: (follower: LaneFollower) => number) => followers.reduce((total, follower) => total + read(follower), 0);
  const lines = [
    `summary (seed ${options.seed})`,
    `  cases: ${ledger.operations.length} operations accepted, ${ledger.queued.length} queued inputs accepted`,
    `  kills: ${input.kills} (SIGKILL of the whole process group), ${input.seconds} s; ${input.inProgressRetries} retries waited out 409 IdempotencyInProgress; ${input.portRetries} starts tried again on another port`,
    `  operations settled: ${[...checker.statuses].map(([status, count]) => `${status} ${count}`).join(", ") || "none"}`,
    `  queued inputs: placed once ${checker.placements.placed}, handed back ${checker.placements.handedBack}, still queued ${checker.placements.stillQueued}, drained by an abort whose answer a kill swallowed ${checker.placements.lostWithAbortAnswer}`,
    ...checker.lostWithAbortAnswer.map((line) => `    - ${line}`),
    `  tool calls in transcripts: ${checker.toolCalls}; replay "never" requests at the fixtures: http ${checker.neverToolCalls}, MCP ${checker.neverMcpCalls}`,
    `  client tool answers: ${ledger.clientAnswers.size} posted (${[...ledger.clientAnswers.values()].filter((answer) => answer.status === 202).length} accepted), ${checker.clientAnswersPlaced} placed; ${input.clientPolls} polls`,
    `  deferred runs: ${ledger.suspended.size} seen suspended, ${ledger.cronOnly.size} left to the minute cron, ${checker.cronResumed} of those settled`,
    `  watchers (SSE, resumed with Last-Event-ID): ${sum((follower) => follower.events)} events, ${sum((follower) => follower.reconnects)} reconnects, ${sum((follower) => follower.gaps)} restarts from a snapshot`,
    `  webhooks: ${input.webhooks.attempts} attempts for ${input.webhooks.events} events; ${input.webhooks.refused} refused or timed out by the receiver, ${input.webhooks.redelivered} events arrived after a refusal, ${input.webhooks.duplicates} arrived more than once`,
    `  workload: ${[...ledger.counts].map(([what, count]) => `${what} ${count}`).join("; ")}`,
    `  violations: ${checker.violations.length}`,
    ...checker.violations.map((violation) => `    - ${violation.invariant}: ${violation.detail}`),
  ];
  for (const line of lines) log(line);
}
