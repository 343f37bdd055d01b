import type { NavigationRequest, OperationAdmission } from "./acceptance.ts";
import { admissionRefusal, runSettingsOf } from "./acceptance.ts";
import type { HarnessCore } from "./core.ts";
import { err, ok, type Result } from "./errors.ts";
import type { Planner } from "./lane-command.ts";
import { metaWrites, stateWrites } from "./operation-codec.ts";
import type { OperationMeta, OperationState } from "./types.ts";

/**
 * Navigation acceptance (reference §3.1), one lane command: the lane must be idle, the target must
 * not be the tip already (`current_tip`), the root (null) takes no label (`root_label`), and a
 * non-null target must exist. It commits the meta and `navigation.ready_to_commit`; the inbox is
 * untouched. Like every acceptance it runs no work: the drive commits the move.
 */
export function planNavigationAcceptance(
  core: HarnessCore,
  lane: string,
  operationId: string,
  request: NavigationRequest,
): Planner<Result<OperationAdmission>> {
  return (m, state) => {
    const refused = admissionRefusal(m, state, lane, operationId);
    if (refused) return { writes: [], value: err(refused) };
    const { targetId, label } = request;
    if (targetId === state.tipId) return { writes: [], value: err({ code: "InvalidNavigation", lane, reason: "current_tip" }) };
    if (targetId === null && label !== undefined) return { writes: [], value: err({ code: "InvalidNavigation", lane, reason: "root_label" }) };
    if (targetId !== null && !m.getEntries([targetId]).has(targetId)) return { writes: [], value: err({ code: "UnknownTarget", targetId }) };
    const startedAt = core.clock();
    const meta: OperationMeta = {
      operationId,
      lane,
      sourceTipId: state.tipId,
      startedAt,
      intent: { kind: "navigation", targetId, summarize: false, ...(label !== undefined && { label }) },
    };
    const opState: OperationState = {
      at: "navigation.ready_to_commit",
      targetId,
      ...(label !== undefined && { label }),
      control: { status: "running" },
      settings: runSettingsOf(core.settings()),
      latestAssistantEntryId: null,
    };
    return {
      writes: [...metaWrites(m, core.captures, meta, opState.settings), ...stateWrites(m, core.captures, operationId, opState, undefined)],
      next: { ...state, operation: { meta, state: opState } },
      events: () => [{ type: "navigation_start", lane, runId: operationId, targetId, startedAt }],
      afterCommit: () => core.wake.due(lane, operationId, startedAt),
      value: ok({ operationId, kind: "navigation", startedAt }),
    };
  };
}
