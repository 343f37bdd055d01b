import { describe, expect, it } from "vitest";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import { unwrap } from "./drive-helpers.ts";
import { COMPACT_EAGERLY, withCompactionRig } from "./compaction-helpers.ts";

// The structural conveniences' continuation run B (reference §3.1, §3.9): after the compaction A
// completed, an empty-prompt acceptance runs when eligible queued input exists. For each kind of
// queued input, and for both orders of the race: queued while A is in flight (inside its
// before_compaction) and queued after A's terminal commit, before B's acceptance (inside the
// delivery of its compaction_end).

const ten = "x".repeat(40);
type Kind = "steer" | "followUp" | "nextRun";

function queue(lane: AgentLane, kind: Kind, text: string) {
  return kind === "steer" ? lane.steer(text) : kind === "followUp" ? lane.followUp(text) : lane.nextRun(text);
}

describe("continuation run B after compact", () => {
  for (const order of ["during A", "after A's commit"] as const) {
    it.each(["steer", "followUp", "nextRun"] as const)(`a %s queued ${order} is taken by the continuation run`, async (kind) => {
      const result = await withCompactionRig(
        async ({ lane, harness }) => {
          unwrap(await lane.prompt(`one ${ten}`));
          unwrap(await lane.prompt(`two ${ten}`));
          let queued = false;
          const enqueue = async () => {
            if (queued) return;
            queued = true;
            unwrap(await queue(lane, kind, "queued input"));
          };
          if (order === "during A") {
            harness.hooks.on("before_compaction", async () => {
              await enqueue();
              return {};
            });
          } else {
            // Not awaited: delivery runs while A's commit holds the line; the queue command waits
            // for the line and lands before B's acceptance, which is issued after A's record.
            harness.events.on("compaction_end", () => {
              void enqueue();
            });
          }
          const outcome = unwrap(await lane.compact());
          const last = lane.findEntries({ order: "newestFirst", limit: 2 }).reverse();
          return { outcome, last, inbox: lane.state.inbox.length };
        },
        { settings: COMPACT_EAGERLY },
      );
      expect(result.outcome.compaction.status).toBe("completed");
      expect(result.outcome.run).toMatchObject({ kind: "run", status: "completed", fromTipId: result.outcome.compaction.tipId });
      const [queuedEntry, answer] = result.last;
      expect(queuedEntry?.type === "message" && queuedEntry.message.role === "user" && queuedEntry.message.content).toBe("queued input");
      expect(answer?.type === "message" && answer.message.role).toBe("assistant");
      expect(result.inbox).toBe(0);
    });
  }

  it("nothing queued: no continuation run", async () => {
    const outcome = await withCompactionRig(
      async ({ lane }) => {
        unwrap(await lane.prompt(`one ${ten}`));
        unwrap(await lane.prompt(`two ${ten}`));
        return unwrap(await lane.compact());
      },
      { settings: COMPACT_EAGERLY },
    );
    expect(outcome.compaction.status).toBe("completed");
    expect(outcome.run).toBeUndefined();
  });
});
