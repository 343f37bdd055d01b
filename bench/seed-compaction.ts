import { runInDurableObject } from "cloudflare:test";
import type { SessionObject } from "../durable-objects/session/session-object.ts";
import { SqlSessionStorage } from "../durable-objects/session/storage/sql-session-storage.ts";
import { branchTip } from "../harness/session/builtin-addresses.ts";
import { Session } from "../harness/session/session.ts";
import type { Write } from "../harness/session/storage.ts";
import { insertEntry, setValue } from "../harness/session/writes.ts";
import { openBenchEngine } from "./engine-rig.ts";
import { BRANCH, SEED_BATCH, userMessage, type SessionStub } from "./seed.ts";

// A compaction made by the engine itself, for the rows that read across one (P6): the lane on the
// seeded branch compacts through the real summary leaves with `scripted/echo` (its answer is the
// summarizer's request, cut at the output limit like a real model's), so the entry carries a real
// summary, a real retained tail and file details, exactly as a long conversation would leave it.

/** Compacts the seeded branch's lane, keeping about `keepRecentTokens` tokens verbatim; the entry's id. */
export async function compactWithEngine(stub: SessionStub, keepRecentTokens: number): Promise<string> {
  return runInDurableObject(stub, async (_instance: SessionObject, state) => {
    const engine = await openBenchEngine(state);
    await engine.harness.updateSettings({ compaction: { enabled: true, reserveTokens: 16384, keepRecentTokens } });
    const lane = await engine.harness.lane(BRANCH);
    const outcome = await lane.compact();
    if (!outcome.ok || outcome.value.compaction.status !== "completed") throw new Error(`the seeding compaction failed: ${JSON.stringify(outcome)}`);
    const entryId = outcome.value.compaction.tipId;
    if (entryId === null) throw new Error("a completed compaction has an entry");
    return entryId;
  });
}

/**
 * Appends `count` user messages after the branch's tip, in large commits; the new tip. A fresh
 * Session over the stored tables: the object's own one did not see the engine's commits.
 */
export async function appendMessages(stub: SessionStub, count: number): Promise<string> {
  return runInDurableObject(stub, async (_instance: SessionObject, state) => {
    const session = freshSession(state);
    let parentId = session.getValue(branchTip(BRANCH))?.value ?? null;
    for (let start = 0; start < count; start += SEED_BATCH) {
      const writes: Write[] = [];
      for (let index = start; index < Math.min(start + SEED_BATCH, count); index++) {
        const id = session.idGenerator.next();
        writes.push(insertEntry({ id, parentId, type: "message", message: userMessage(index) }));
        parentId = id;
      }
      writes.push(setValue(branchTip(BRANCH), parentId));
      await session.mutate((m) => {
        m.commit(writes);
      });
    }
    if (parentId === null) throw new Error("appendMessages needs at least one entry");
    return parentId;
  });
}

/** A Session over the object's stored tables, reading its counters now. */
export function freshSession(state: DurableObjectState): Session {
  const stored = SqlSessionStorage.open(state.storage);
  if (!stored) throw new Error("no session stored in this object");
  return new Session(stored);
}
