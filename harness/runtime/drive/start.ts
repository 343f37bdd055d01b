import type { NewEntry } from "../../../schema/entries.ts";
import type { AgentMessage } from "../../../schema/messages.ts";
import { branchTip } from "../../session/builtin-addresses.ts";
import { insertEntry, setValue } from "../../session/writes.ts";
import { placementEvents } from "../acceptance.ts";
import { invalidReason } from "../messages.ts";
import type { StateAt } from "../types.ts";
import { settled } from "./generation.ts";
import { currentOperation, type Pass, type Step } from "./pass.ts";
import { scopeOf } from "./scope.ts";
import { continueOperation } from "./transition.ts";

/**
 * `starting` → `checkpoint` (reference §3.4): the gated `before_run` pipeline may inject messages;
 * one commit places them after the tip and enters the boundary with `need_assistant`. A crash
 * before that commit reruns `before_run`; after it, it cannot (transition-consumed).
 */
export async function startRun(pass: Pass, _state: StateAt<"starting">): Promise<Step> {
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
  const now = core.clock();
  return settled(
    await continueOperation(pass, (_m, operation, lane) => {
      const placed: NewEntry[] = [];
      let parentId = lane.tipId;
      for (const message of injected) {
        const id = core.ids.next(now);
        placed.push({ id, parentId, type: "message", message });
        parentId = id;
      }
      if (parentId === null) throw new Error("Invariant: an accepted run always has a tip");
      return {
        kind: "commit",
        writes: placed.length > 0 ? [...placed.map(insertEntry), setValue(branchTip(pass.lane.name), parentId)] : [],
        state: { ...scopeOf(operation.state), at: "checkpoint", continuation: { kind: "need_assistant", overflowRecoveryUsed: false }, triggerEntryId: parentId },
        patch: { tipId: parentId },
        events: (done) => placementEvents(pass.lane.name, pass.operationId, done?.entries ?? []),
      };
    }),
  );
}
