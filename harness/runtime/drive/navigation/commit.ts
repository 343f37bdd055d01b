import { branchTip, entryLabel } from "../../../session/builtin-addresses.ts";
import { setValue } from "../../../session/writes.ts";
import type { StateAt } from "../../types.ts";
import type { Pass, Step } from "../pass.ts";
import { continueOperation, settled } from "../transition.ts";

/**
 * `navigation.ready_to_commit` → terminal completed (reference §3.4): one commit moves the tip to
 * the target (which may be null, the root), sets the optional label on the target and writes the
 * record with `tipId = target`; `navigation_end` tells watchers to resnapshot. Entries are
 * write-once, so a target validated at acceptance still exists. Under cancellation the loop
 * reconciles instead (nothing moves).
 */
export async function commitNavigation(pass: Pass, state: StateAt<"navigation.ready_to_commit">): Promise<Step> {
  const lane = pass.lane.name;
  return settled(
    await continueOperation(pass, () => ({
      kind: "finish",
      writes: [setValue(branchTip(lane), state.targetId), ...(state.targetId !== null && state.label !== undefined ? [setValue(entryLabel(state.targetId), state.label)] : [])],
      status: "completed",
      patch: { tipId: state.targetId },
      events: () =>
        state.targetId !== null && state.label !== undefined ? [{ type: "value_update", value: "entry_label", targetId: state.targetId, label: state.label }] : [],
    })),
  );
}
