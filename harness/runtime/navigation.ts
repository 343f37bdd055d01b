import type { StoredBranchPreparation } from "../compaction/branch-summary.ts";
import { operationPreparation } from "../session/builtin-addresses.ts";
import type { Session } from "../session/session.ts";
import { setValue } from "../session/writes.ts";
import type { NavigationRequest, OperationAdmission } from "./acceptance.ts";
import { admissionRefusal, runSettingsOf } from "./acceptance.ts";
import type { HarnessCore } from "./core.ts";
import { err, ok, type Result } from "./errors.ts";
import type { Planner } from "./lane-command.ts";
import type { OperationMeta, OperationState } from "./types.ts";

/**
 * Navigation acceptance (reference §3.1, §6.5), one lane command: the lane must be idle, the target
 * must not be the tip already (`current_tip`), the root (null) takes no label (`root_label`) and
 * no summary (`summarize_root`), and a non-null target must exist. Unsummarized, it commits the
 * meta and `navigation.ready_to_commit`. Summarized, it also stores where the abandoned branch
 * runs (the left tip down to the common ancestor with the target) and opens
 * `summary.deciding{commit_navigation}`; when nothing would be left behind (the target lies ahead
 * of the tip, or the lane is empty) there is nothing to summarize and the move is a plain one. The
 * inbox is untouched; like every acceptance it runs no work.
 */
export function planNavigationAcceptance(
  core: HarnessCore,
  lane: string,
  operationId: string,
  request: NavigationRequest,
): Planner<Result<OperationAdmission>> {
  return (m, state) => {
    const refused = admissionRefusal(core, m, state, lane, operationId);
    if (refused) return { writes: [], value: err(refused) };
    const { targetId, label, customInstructions } = request;
    const summarize = request.summarize === true;
    if (targetId === state.tipId) return { writes: [], value: err({ code: "InvalidNavigation", lane, reason: "current_tip" }) };
    if (targetId === null && label !== undefined) return { writes: [], value: err({ code: "InvalidNavigation", lane, reason: "root_label" }) };
    if (targetId === null && summarize) return { writes: [], value: err({ code: "InvalidNavigation", lane, reason: "summarize_root" }) };
    if (targetId !== null && !m.getEntries([targetId]).has(targetId)) return { writes: [], value: err({ code: "UnknownTarget", targetId }) };
    const startedAt = core.clock();
    const settings = runSettingsOf(core.settings(), m);
    const meta: OperationMeta = {
      operationId,
      lane,
      sourceTipId: state.tipId,
      startedAt,
      intent: {
        kind: "navigation",
        targetId,
        summarize,
        ...(label !== undefined && { label }),
        ...(summarize && customInstructions !== undefined && { customInstructions }),
      },
    };
    const scope = { control: { status: "running" as const }, settings, latestAssistantEntryId: null };
    const left = summarize && targetId !== null && state.tipId !== null ? abandonedBranch(core.session, state.tipId, targetId) : undefined;
    const taskId = left ? core.ids.next() : undefined;
    const opState: OperationState = left && taskId
      ? {
          ...scope,
          at: "summary.deciding",
          task: {
            taskId,
            ...(customInstructions !== undefined && { customInstructions }),
            boundary: { kind: "commit_navigation", targetId, ...(label !== undefined && { label }) },
          },
        }
      : { ...scope, at: "navigation.ready_to_commit", targetId, ...(label !== undefined && { label }) };
    return {
      writes: [
        ...(left && taskId ? [setValue(operationPreparation<StoredBranchPreparation>(operationId, taskId), left)] : []),
      ],
      next: { ...state, operation: { meta, state: opState } },
      events: () => [{ type: "navigation_start", lane, runId: operationId, targetId, startedAt }],
      afterCommit: () => core.wake.due(lane, operationId, startedAt),
      value: ok({ operationId, kind: "navigation", startedAt }),
    };
  };
}

/**
 * Where the branch the tip leaves for the target runs: from the tip down to their newest shared
 * entry, over structure only (no payload is read). Undefined when nothing would be left (the
 * target descends from the tip).
 */
function abandonedBranch(session: Session, tipId: string, targetId: string): StoredBranchPreparation | undefined {
  const targetPath = new Set(session.scanBranchStructure({ start: targetId, order: "newestFirst" }).map((entry) => entry.id));
  const tipPath = session.scanBranchStructure({ start: tipId, order: "newestFirst" });
  const ancestor = tipPath.find((entry) => targetPath.has(entry.id));
  if (ancestor?.id === tipId) return undefined;
  return { kind: "branch_summary", fromTipId: tipId, ancestorId: ancestor?.id ?? null };
}
