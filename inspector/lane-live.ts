import type { LaneSnapshot, RunningToolRow, SnapshotOperation } from "../schema/lane.ts";
import { agentVersionText } from "./agent-format.ts";
import { dollars, el, json, time } from "./dom.ts";
import { messageText } from "./entry-kind.ts";

/**
 * The live parts of a lane, drawn from its folded snapshot: each part is a function of the
 * snapshot, redrawn only when its own text changed (so a streaming answer does not redraw the
 * queue, and focus in one part survives updates of another).
 */
export interface LivePart {
  key: (snapshot: LaneSnapshot) => string;
  draw: (snapshot: LaneSnapshot) => (Node | string)[];
}

export const LIVE_PARTS: Record<string, LivePart> = {
  state: {
    key: (s) => json([s.tipId, s.configuration, s.faulted, s.stats, s.transcript.length, s.olderEntries]),
    draw: (s) => [
      el(
        "dl",
        { class: "facts" },
        el("dt", {}, "Tip"), el("dd", { "data-tip": s.tipId ?? "" }, s.tipId ?? "root (empty)"),
        el("dt", {}, "Model"), el("dd", {}, `${s.configuration.model.provider}/${s.configuration.model.modelId} · thinking ${s.configuration.thinkingLevel}`),
        el("dt", {}, "Tools"), el("dd", {}, s.configuration.activeToolNames.join(", ") || "none"),
        el("dt", {}, "Transcript"), el("dd", {}, `${s.transcript.length} entries${s.olderEntries ? " (older ones left out)" : ""}`),
        el("dt", {}, "Session"), el("dd", {}, `${s.stats.messageCount} messages · ${s.stats.usage.totalTokens} tokens · ${dollars(s.stats.usage.cost.total)}`),
        s.faulted && el("dt", {}, "Faulted"),
        s.faulted && el("dd", { class: "error" }, "the session is faulted"),
      ),
    ],
  },
  operation: {
    key: (s) => json(s.operation === null ? null : { ...s.operation, streamingMessage: undefined, runningTools: undefined }),
    draw: (s) => [operationView(s.operation)],
  },
  streaming: {
    key: (s) => json(s.operation?.streamingMessage?.content ?? null),
    draw: (s) => streamingView(s.operation),
  },
  tools: {
    key: (s) => json(s.operation?.runningTools ?? []),
    draw: (s) => toolsView(s.operation?.runningTools ?? []),
  },
  queue: {
    key: (s) => json(s.queues),
    draw: (s) =>
      s.queues.length === 0
        ? [el("p", { class: "muted" }, "Queue empty.")]
        : [el("ol", { class: "queue" }, ...s.queues.map((item) => el("li", { "data-queued": item.kind }, el("strong", {}, item.kind), " ", item.type === "message" ? messageText(item.message) : `custom ${item.customType}`)))],
  },
  result: {
    key: (s) => json(s.lastResult ?? null),
    draw: (s) => {
      const result = s.lastResult;
      if (!result) return [el("p", { class: "muted" }, "No operation has settled yet.")];
      return [
        el(
          "p",
          { "data-last-status": result.status },
          el("strong", {}, `${result.kind} ${result.status}`),
          ` · ${result.operationId} · ended ${time(result.endedAt)}`,
        ),
        result.agent ? el("p", { "data-result-agent": agentVersionText(result.agent) }, `Ran under agent ${agentVersionText(result.agent)}`) : "",
        result.error ? el("p", { class: "error" }, `${result.error.code}: ${result.error.message}`) : "",
      ];
    },
  },
};

function operationView(operation: SnapshotOperation | null): Node {
  if (operation === null) return el("p", { class: "muted", "data-operation": "none" }, "Idle.");
  return el(
    "div",
    { "data-operation": operation.status },
    el("p", {}, el("strong", {}, `${operation.kind} ${operation.status}`), ` · ${operation.id} · since ${time(operation.startedAt)}`),
    operation.retry ? el("p", { class: "warn" }, `Retry ${operation.retry.attempt} of ${operation.retry.maxAttempts} at ${time(operation.retry.nextAttemptAt)}`) : "",
    operation.deferred ? el("p", { class: "warn" }, `Suspended: deferred answer, poll ${operation.deferred.poll}. Resume polls it now.`) : "",
  );
}

function streamingView(operation: SnapshotOperation | null): Node[] {
  const message = operation?.streamingMessage;
  if (!message) return [];
  return message.content.map((block) => {
    if (block.type === "thinking") return el("p", { class: "thinking" }, block.thinking);
    if (block.type === "text") return el("p", { class: "streaming-text" }, block.text);
    return el("p", { class: "muted" }, `→ ${block.name} ${json(block.arguments)}`);
  });
}

function toolsView(rows: readonly RunningToolRow[]): Node[] {
  if (rows.length === 0) return [];
  return [
    el(
      "ul",
      { class: "tools" },
      ...rows.map((row) =>
        el(
          "li",
          { "data-tool-call": row.toolCallId, "data-tool-status": row.status === "running" && row.executor === "client" ? "waiting-client" : row.status },
          el("strong", {}, row.toolName),
          ` ${json(row.args)} · `,
          row.status === "running" ? (row.executor === "client" ? "waiting for the client's answer" : "running") : row.isError ? "failed" : "done",
        ),
      ),
    ),
  ];
}
