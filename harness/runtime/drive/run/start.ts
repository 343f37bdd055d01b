import type { NewEntry } from "../../../../schema/entries.ts";
import type { AgentMessage } from "../../../../schema/messages.ts";
import { branchTip } from "../../../session/builtin-addresses.ts";
import { insertEntry, setValue } from "../../../session/writes.ts";
import { placementEvents } from "../../acceptance.ts";
import { invalidReason } from "../../messages.ts";
import type { StateAt } from "../../types.ts";
import { decideOnLine } from "./checkpoint.ts";
import { probeThreshold } from "./threshold.ts";
import { generate } from "../assistant/generation.ts";
import { currentOperation, type Pass, type Step } from "../pass.ts";
import { continueOperation, settled, type TransitionPlan } from "../transition.ts";

/**
 * `starting` (reference §3.4): the gated `before_run` pipeline may inject messages; on the line
 * they are placed after the tip and the boundary decides at once with `need_assistant`, which
 * means `assistant.ready` (placing eligible queued input too), or a threshold compaction first
 * when the context already leaves less than the reserve free and nothing projecting is placed.
 *
 * When that commit would write nothing but the leaf (no injection, nothing queued), it is not
 * made (QUALITY P2/P3): the run goes straight on to prepare its first request, and the request
 * intent is the run's first commit after acceptance. A crash before it restores `starting` and
 * reruns `before_run`, exactly as a crash before the boundary commit would; nothing was consumed.
 */
export async function startRun(pass: Pass, state: StateAt<"starting">): Promise<Step> {
  const { core } = pass;
  const { meta } = currentOperation(pass);
  const promptIds = meta.intent.kind === "run" ? meta.intent.promptEntryIds : [];
  const promptEntries = core.session.getEntries(promptIds);
  const prompt: AgentMessage[] = promptIds.flatMap((id) => {
    const entry = promptEntries.get(id);
    return entry?.type === "message" ? [entry.message] : [];
  });
  const resources = core.resources();
  const { messages } = await pass.gate.admit((signal) =>
    core.hooks.runBeforeRun(
      { lane: pass.lane.name, runId: pass.operationId, prompt, resources: { skills: resources.skills, promptTemplates: resources.promptTemplates } },
      { signal },
    ),
  );
  const injected = messages.filter((message) => invalidReason(message) === undefined);
  // Injected messages project: placed, they win over a threshold compaction (§3.6 step 3).
  const tipId = pass.lane.state.tipId;
  const candidate = injected.length === 0 && tipId !== null ? probeThreshold(pass, state, tipId) : undefined;
  const now = core.clock();
  let unwritten: StateAt<"assistant.ready"> | undefined;
  const started = await continueOperation(pass, (_m, operation, lane): TransitionPlan => {
    const placed: NewEntry[] = [];
    let parentId = lane.tipId;
    for (const message of injected) {
      const id = core.ids.next(now);
      placed.push({ id, parentId, type: "message", message });
      parentId = id;
    }
    if (parentId === null) throw new Error("Invariant: an accepted run always has a tip");
    const decision = decideOnLine(
      core,
      pass,
      { ...lane, tipId: parentId },
      operation.state,
      { continuation: { kind: "need_assistant", overflowRecoveryUsed: false }, triggerEntryId: parentId },
      candidate,
    );
    const plan = decision.kind === "plan" ? decision.plan : undefined;
    if (plan?.kind !== "commit" || (plan.state.at !== "assistant.ready" && plan.state.at !== "summary.deciding")) {
      throw new Error("Invariant: need_assistant always decides assistant.ready (or a threshold compaction first)");
    }
    if (placed.length === 0 && plan.writes.length === 0 && plan.state.at === "assistant.ready") {
      unwritten = plan.state;
      return { kind: "return" };
    }
    const placedWrites = placed.length > 0 ? [...placed.map(insertEntry), setValue(branchTip(pass.lane.name), parentId)] : [];
    // The boundary's own tip write (after queued input) supersedes the injection's.
    const writes = plan.writes.some((write) => write.kind === "value" && write.namespace === "pi.branch.tip")
      ? [...placedWrites.filter((write) => write.kind !== "value" || write.namespace !== "pi.branch.tip"), ...plan.writes]
      : [...placedWrites, ...plan.writes];
    return {
      ...plan,
      writes,
      patch: { tipId: parentId, ...plan.patch },
      events: (done) => {
        const injectedIds = new Set(placed.map((entry) => entry.id));
        const own = (done?.entries ?? []).filter((entry) => injectedIds.has(entry.id));
        return [...placementEvents(pass.lane.name, pass.operationId, own), ...(plan.events?.(done) ?? [])];
      },
    };
  });
  if (started === "returned" && unwritten) return generate(pass, unwritten);
  return settled(started);
}
