import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { SessionObject } from "../durable-objects/session/session-object.ts";
import { branchTip } from "../harness/session/builtin-addresses.ts";
import type { Write } from "../harness/session/storage.ts";
import { insertEntry, setValue } from "../harness/session/writes.ts";
import type { NewEntry } from "../schema/entries.ts";
import type { RpcResult } from "../schema/errors.ts";
import type { UserMessage } from "../schema/messages.ts";
import { fromWire, type Wire } from "../schema/wire.ts";

// Seeding for the benches: sessions are created through the object's own `create` RPC, then history
// is committed in large batches from inside the object (runInDurableObject), each batch one ordinary
// mutation that appends a chain of entries and moves the `main` tip in the same commit.

export const BRANCH = "main";
/** Writes per commit while seeding (entries; the tip move is one more write). */
export const SEED_BATCH = 2000;

export type SessionStub = DurableObjectStub<SessionObject>;

let counter = 0;

/** A fresh, empty session object with its own name. */
export async function createBenchSession(label: string): Promise<SessionStub> {
  const tenantId = "tenant_bench";
  const sessionId = `bench_${label}_${(counter++).toString(36)}_${crypto.randomUUID().slice(0, 8)}`;
  const stub = env.SESSIONS.getByName(`${tenantId}:${sessionId}`);
  unwrap(await stub.create({ tenantId, sessionId }));
  return stub;
}

/** The value of a successful RPC reply (typed JSON text); an expected-error reply is a bench failure. */
export function unwrap<T>(reply: Wire<RpcResult<T>>): T {
  const result = fromWire(reply);
  if (!result.ok) throw new Error(`RPC failed: ${result.error.code}: ${result.error.message}`);
  return result.value;
}

export interface SeedPlan {
  /** Entries on the branch, root to tip. */
  entries: number;
  /** When set, the entry this many entries before the tip is a compaction (0 would be the tip itself). */
  compactionBack?: number;
}

export interface Seeded {
  tipId: string;
  compactionId: string | undefined;
}

/** A user message of realistic size (~200 characters of text). */
export function userMessage(index: number): UserMessage {
  return {
    role: "user",
    content: `Message ${index}: please look at the next part of the repository and tell me what changed since the previous step, with a short summary and a list of the files involved.`,
    timestamp: 1_700_000_000_000 + index,
  };
}

/** Creates branch `main` at the root and appends `plan.entries` chained entries to it. */
export async function seedBranch(stub: SessionStub, plan: SeedPlan): Promise<Seeded> {
  return runInDurableObject(stub, async (instance: SessionObject) => {
    const session = instance.session();
    await session.createBranch(BRANCH, null);
    const compactionIndex = plan.compactionBack === undefined ? -1 : plan.entries - 1 - plan.compactionBack;
    let parentId: string | null = null;
    let compactionId: string | undefined;
    for (let start = 0; start < plan.entries; start += SEED_BATCH) {
      const writes: Write[] = [];
      for (let index = start; index < Math.min(start + SEED_BATCH, plan.entries); index++) {
        const id = session.idGenerator.next();
        const entry: NewEntry =
          index === compactionIndex
            ? {
                id,
                parentId,
                type: "compaction",
                summary: `Summary of the ${index} entries before this point: the user and the assistant explored the repository.`,
                retainedTail: [],
                tokensBefore: 1000,
                fromHook: false,
              }
            : { id, parentId, type: "message", message: userMessage(index) };
        if (index === compactionIndex) compactionId = id;
        writes.push(insertEntry(entry));
        parentId = id;
      }
      writes.push(setValue(branchTip(BRANCH), parentId));
      await session.mutate((m) => {
        m.commit(writes);
      });
    }
    if (parentId === null) throw new Error("seedBranch needs at least one entry");
    return { tipId: parentId, compactionId };
  });
}
