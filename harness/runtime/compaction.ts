import type { Entry } from "../../schema/entries.ts";
import { findCut, pathContext, preparationAt, storedPreparation, type StoredCompactionPreparation } from "../compaction/preparation.ts";
import { estimateMessageTokens } from "../compaction/tokens.ts";
import { operationPreparation } from "../session/builtin-addresses.ts";
import { setValue } from "../session/writes.ts";
import type { CompactionRequest, OperationAdmission } from "./acceptance.ts";
import { admissionRefusal, runSettingsOf } from "./acceptance.ts";
import type { HarnessCore } from "./core.ts";
import { err, ok, type Result } from "./errors.ts";
import type { Planner } from "./lane-command.ts";
import type { OperationMeta, OperationState } from "./types.ts";

/**
 * Manual compaction acceptance (reference §3.1), one lane command: the lane must be idle; the
 * compaction-bounded path from the tip is prepared with the current compaction settings, and with
 * nothing to summarize the request is refused (`NothingToCompact`). It commits the preparation, the
 * meta and `summary.deciding` with a `finish` boundary; the inbox is untouched and no work runs.
 */
export function planCompactionAcceptance(
  core: HarnessCore,
  lane: string,
  operationId: string,
  request: CompactionRequest,
  /** The lane's compaction-bounded context path (read on the line: the tip cannot move under it). */
  contextPath: () => readonly Entry[],
): Planner<Result<OperationAdmission>> {
  return (m, state) => {
    const refused = admissionRefusal(core, m, state, lane, operationId);
    if (refused) return { writes: [], value: err(refused) };
    const settings = runSettingsOf(core.settings(), m);
    const tipId = state.tipId;
    const context = pathContext(tipId === null ? [] : contextPath(), core.projectors);
    const cut = findCut(context.messages, settings.compaction.keepRecentTokens);
    if (tipId === null || !preparationAt(context, cut, settings.compaction)) {
      // Said in the user's terms: how big the context is against the recent part a compaction keeps.
      const estimatedTokens = context.messages.reduce((sum, message) => sum + estimateMessageTokens(message), 0);
      return { writes: [], value: err({ code: "NothingToCompact", lane, estimatedTokens, keepRecentTokens: settings.compaction.keepRecentTokens }) };
    }
    const { customInstructions } = request;
    const taskId = core.ids.next();
    const startedAt = core.clock();
    const meta: OperationMeta = {
      operationId,
      lane,
      sourceTipId: tipId,
      startedAt,
      intent: { kind: "compaction", ...(customInstructions !== undefined && { customInstructions }) },
    };
    const opState: OperationState = {
      at: "summary.deciding",
      task: { taskId, reason: "manual", ...(customInstructions !== undefined && { customInstructions }), boundary: { kind: "finish" } },
      control: { status: "running" },
      settings,
      latestAssistantEntryId: null,
    };
    return {
      writes: [
        setValue(operationPreparation<StoredCompactionPreparation>(operationId, taskId), storedPreparation(tipId, context, cut)),
      ],
      next: { ...state, operation: { meta, state: opState } },
      events: () => [{ type: "compaction_start", lane, runId: operationId, reason: "manual", startedAt }],
      afterCommit: () => core.wake.due(lane, operationId, startedAt),
      value: ok({ operationId, kind: "compaction", startedAt }),
    };
  };
}
