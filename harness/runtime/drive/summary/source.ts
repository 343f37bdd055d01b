import type { Entry } from "../../../../schema/entries.ts";
import type { Usage } from "../../../../schema/usage.ts";
import { branchSummaryRequest, prepareBranch, type StoredBranchPreparation } from "../../../compaction/branch-summary.ts";
import { fileDetails, reconstructPreparation, type CompactionPreparation, type StoredCompactionPreparation } from "../../../compaction/preparation.ts";
import { combineSummaries, summaryRequests, type SummaryRequest, type SummaryRequestKind } from "../../../compaction/summarizer.ts";
import type { BranchPreparationView } from "../../../execution/hooks.ts";
import { operationPreparation } from "../../../session/builtin-addresses.ts";
import type { Session } from "../../../session/session.ts";
import type { OperationState, SummaryTask } from "../../types.ts";
import type { Pass } from "../pass.ts";
import type { SummaryResult } from "./boundary.ts";

// What a summary task summarizes, read back from its stored preparation (reference §6.2, §6.5).
// The algorithm follows from the boundary: `commit_navigation` summarizes the abandoned branch,
// anything else compacts the lane's context.

/** A summary's requests and how their texts make its result. */
export interface SummaryWork {
  requests: SummaryRequest[];
  result(texts: readonly { kind: SummaryRequestKind; text: string }[], usage: Usage | undefined): SummaryResult;
}

export function summaryWork(pass: Pass, task: SummaryTask, state: OperationState): SummaryWork {
  if (task.boundary.kind === "commit_navigation") {
    const preparation = readBranchPreparation(pass, task);
    return {
      requests: [branchSummaryRequest(preparation, task.customInstructions)],
      result: (texts, usage) => ({
        kind: "branch_summary",
        summary: texts.find((part) => part.kind === "branch")?.text ?? "",
        details: fileDetails(preparation.fileOps),
        ...(usage && { usage }),
      }),
    };
  }
  const preparation = readCompactionPreparation(pass, task, state);
  return {
    requests: summaryRequests(preparation, task.customInstructions),
    result: (texts, usage) => ({
      kind: "compaction",
      summary: combineSummaries(preparation, texts),
      retainedTail: preparation.retainedTail,
      tokensBefore: preparation.tokensBefore,
      details: fileDetails(preparation.fileOps),
      ...(usage && { usage }),
    }),
  };
}

/** The compaction preparation stored at acceptance (or by the boundary), read back over the same (write-once) path. */
export function readCompactionPreparation(pass: Pass, task: SummaryTask, state: OperationState): CompactionPreparation {
  const { core } = pass;
  const stored = core.session.getValue(operationPreparation<StoredCompactionPreparation | StoredBranchPreparation>(pass.operationId, task.taskId))?.value;
  if (!stored || stored.kind !== "compaction") throw new Error(`Invariant: operation ${pass.operationId} has no compaction preparation for task ${task.taskId}`);
  const path =
    pass.lane.state.tipId === stored.tipId
      ? pass.lane.contextPath()
      : core.session.scanBranch({ start: stored.tipId, order: "newestFirst", stopAtType: "compaction" }).reverse();
  const preparation = reconstructPreparation(stored, path, state.settings.compaction, core.projectors);
  if (!preparation) throw new Error(`Invariant: the stored preparation of ${pass.operationId} names nothing to summarize`);
  return preparation;
}

/** What a branch summary may read at most when the lane's model is unknown (its request then fails anyway). */
const FALLBACK_BRANCH_BUDGET = 100_000;

/**
 * The abandoned branch, newest messages first within the lane model's window less the reserve
 * (the summary request must fit), read page by page from the left tip towards the ancestor.
 */
export function readBranchPreparation(pass: Pass, task: SummaryTask): BranchPreparationView {
  const { core } = pass;
  const stored = core.session.getValue(operationPreparation<StoredCompactionPreparation | StoredBranchPreparation>(pass.operationId, task.taskId))?.value;
  if (!stored || stored.kind !== "branch_summary") throw new Error(`Invariant: operation ${pass.operationId} has no branch preparation for task ${task.taskId}`);
  const { provider, modelId } = pass.lane.state.configuration.model;
  const window = core.models.getModel(provider, modelId)?.contextWindow;
  const reserve = currentReserve(pass);
  const budget = window === undefined ? FALLBACK_BRANCH_BUDGET : Math.max(window - reserve, 1);
  const preparation = prepareBranch(abandoned(core.session, stored), budget, core.projectors);
  return { ...preparation, fromTipId: stored.fromTipId, ancestorId: stored.ancestorId };
}

function currentReserve(pass: Pass): number {
  return pass.lane.state.operation?.state.settings.compaction.reserveTokens ?? 0;
}

const PAGE = 200;

/** The left branch's entries newest first, down to (not including) the common ancestor, a page at a time. */
function* abandoned(session: Session, stored: StoredBranchPreparation): Generator<Entry> {
  let start: string | null = stored.fromTipId;
  while (start !== null && start !== stored.ancestorId) {
    const page = session.scanBranch({ start, order: "newestFirst", limit: PAGE, ...(stored.ancestorId !== null && { stopAtId: stored.ancestorId }) });
    for (const entry of page) {
      if (entry.id === stored.ancestorId) return;
      yield entry;
    }
    if (page.length < PAGE) return;
    start = page[page.length - 1]?.parentId ?? null;
  }
}
