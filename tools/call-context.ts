import type { ToolInvocation } from "../harness/execution/tools.ts";
import { sessionMetadata } from "../harness/session/builtin-addresses.ts";
import type { Session } from "../harness/session/session.ts";
import type { ToolCallContext } from "../schema/tools.ts";

/** Builds the context of one call of a tool of this session (schema/tools.ts `ToolCallContext`). */
export type CallContextOf = (invocation: ToolInvocation, toolCallId: string) => ToolCallContext;

/**
 * The call context as the session stands when the call is made: its tenant and id, the lane and
 * operation of the run, the call's ids, the agent version the run was accepted under, and the session's metadata read at that moment (a replay
 * after a crash carries the same ids, and the metadata as it is then).
 */
export function callContextOf(session: Pick<Session, "metadata" | "getValue">, tenantId: string): CallContextOf {
  return (invocation, toolCallId) => ({
    tenantId,
    sessionId: session.metadata.id,
    lane: invocation.lane,
    operationId: invocation.operationId,
    toolCallId,
    invocationId: invocation.invocationId,
    ...(invocation.agent && { agent: invocation.agent }),
    metadata: session.getValue(sessionMetadata)?.value ?? {},
  });
}
