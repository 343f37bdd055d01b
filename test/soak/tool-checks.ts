import type { Entry } from "../../schema/entries.ts";
import { TOOL_CALL_CONTEXT_META_KEY } from "../../schema/tools.ts";
import type { RecordedMcpRequest } from "../mcp-recorded-request.ts";
import type { ReceivedCall } from "../node/tool-webhook-server.ts";
import type { Ledger } from "./ledger.ts";
import type { OperationView } from "./operations.ts";

// The tool checks of the soak that need more than the transcript (QUALITY R9 "every tool call
// answered once; `replay: "never"` at most once"): the `replay: "never"` tools (the http one and
// the MCP one) reached their servers at most once per operation and call id, as the local fixtures
// counted; and every client tool answer the client posted is placed at most once, as the result of
// the very call it answered, and exactly once when it was accepted and the run completed.

type Violate = (invariant: string, detail: string) => void;

/** One (operation, call id) per `replay: "never"` call that reached its server: more than one is a violation. */
export function checkNeverOnce(tool: string, sessionId: string, calls: readonly { operationId: string; toolCallId: string }[], violate: Violate): number {
  const seen = new Map<string, number>();
  for (const call of calls) {
    const key = `${call.operationId}/${call.toolCallId}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  for (const [key, count] of seen) if (count > 1) violate('replay: "never" runs at most once', `${sessionId}: ${tool} call ${key} reached its server ${count} times`);
  return calls.length;
}

/** The http tool's calls as its fixture recorded them (the body carries the call's context). */
export function httpCalls(received: readonly ReceivedCall[]): { operationId: string; toolCallId: string }[] {
  return received.flatMap((call) => {
    const body = call.body;
    if (typeof body !== "object" || body === null || !("toolCallId" in body) || !("operationId" in body)) return [];
    return [{ operationId: String(body.operationId), toolCallId: String(body.toolCallId) }];
  });
}

/** The MCP tool's `tools/call` requests for `tool` as the MCP fixture recorded them (the context is in `_meta`). */
export function mcpCalls(received: readonly RecordedMcpRequest[], tool: string): { operationId: string; toolCallId: string }[] {
  return received.flatMap((request) => {
    if (request.method !== "tools/call" || request.tool !== tool) return [];
    const meta = request.meta;
    const context = typeof meta === "object" && meta !== null && TOOL_CALL_CONTEXT_META_KEY in meta ? (meta as Record<string, unknown>)[TOOL_CALL_CONTEXT_META_KEY] : undefined;
    if (typeof context !== "object" || context === null || !("operationId" in context) || !("toolCallId" in context)) return [{ operationId: "(no context)", toolCallId: "(no context)" }];
    return [{ operationId: String(context.operationId), toolCallId: String(context.toolCallId) }];
  });
}

/** Client tool answers of `sessionId`: each placed as its own call's result, once when it had to be. */
export function checkClientAnswers(sessionId: string, entries: ReadonlyMap<string, Entry>, ledger: Ledger, views: ReadonlyMap<string, OperationView>, violate: Violate): number {
  const results = new Map<string, { entryId: string; toolCallId: string }[]>();
  for (const entry of entries.values()) {
    if (entry.type !== "message" || entry.message.role !== "toolResult") continue;
    const toolCallId = entry.message.toolCallId;
    for (const [marker] of JSON.stringify(entry.message.content).matchAll(/<mk:client-[^>]+>/g)) results.set(marker, [...(results.get(marker) ?? []), { entryId: entry.id, toolCallId }]);
  }
  let placed = 0;
  for (const answer of ledger.clientAnswers.values()) {
    if (answer.sessionId !== sessionId) continue;
    const where = `${sessionId}/${answer.lane}: the answer ${answer.marker} to ${answer.operationId}/${answer.toolCallId}`;
    const holders = results.get(answer.marker) ?? [];
    if (holders.length > 0) placed++;
    for (const holder of holders) if (holder.toolCallId !== answer.toolCallId) violate("a client tool answer is its own call's result", `${where} is the result of ${holder.toolCallId} in entry ${holder.entryId}`);
    const view = views.get(answer.operationId);
    const completed = view?.state === "settled" && view.result.status === "completed";
    if (answer.status === 202 && completed && holders.length !== 1) violate("an accepted client tool answer is placed once", `${where} (accepted, the run completed) is in ${holders.length} entries`);
  }
  return placed;
}
