import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { branchTip, entryLabel, sessionName } from "../../harness/session/builtin-addresses.ts";
import { Branch } from "../../harness/session/branch.ts";
import {
  BranchExists,
  InvalidBranch,
  InvalidMessage,
  UnknownBranch,
  UnknownTarget,
} from "../../harness/session/errors.ts";
import type { Session } from "../../harness/session/session.ts";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { assistantMessage, userMessage } from "../helpers/messages.ts";
import { createSession } from "../helpers/sessions.ts";

// WP06: Session is not a Branch and has no implicit main; Branch is data only (reference §2.1–2.2).

async function inSession<T>(run: (session: Session) => Promise<T> | T): Promise<T> {
  const { stub } = await createSession("branch");
  return runInDurableObject(stub, (instance: SessionObject) => run(instance.session()));
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("a fresh session", () => {
  it("has no branches: no implicit main, branch() answers undefined", async () => {
    const result = await inSession((session) => ({
      main: session.branch("main"),
      tips: session.scanValues(branchTip("")).length,
      stats: session.getStats(),
    }));
    expect(result.main).toBeUndefined();
    expect(result.tips).toBe(0);
    expect(result.stats.messageCount).toBe(0);
  });

  it("exposes no nested branch or tree property on Session or Branch", async () => {
    const keys = await inSession(async (session) => {
      const branch = await session.createBranch("main", null);
      return { session: Object.keys(session), branch: Object.keys(branch) };
    });
    for (const forbidden of ["main", "tree", "sessionTree", "view"]) {
      expect(keys.session).not.toContain(forbidden);
      expect(keys.branch).not.toContain(forbidden);
    }
  });
});

describe("createBranch", () => {
  it("writes only the tip, atomically, at null or at an existing entry", async () => {
    const result = await inSession(async (session) => {
      const before = session.findEntries().length;
      const empty = await session.createBranch("empty", null);
      const main = await session.createBranch("main", null);
      const first = await main.appendMessage(userMessage("hello"));
      const statsBefore = session.getStats();
      const side = await session.createBranch("side", first);
      return {
        emptyTip: empty.getTipId(),
        emptyEntries: empty.findEntries(),
        sideTip: side.getTipId(),
        entriesAdded: session.findEntries().length - before,
        statsUnchanged: session.getStats().messageCount === statsBefore.messageCount,
        sideIsBranch: side instanceof Branch,
      };
    });
    expect(result.emptyTip).toBeNull();
    expect(result.emptyEntries).toEqual([]);
    expect(result.sideTip).toEqual(expect.any(String));
    expect(result.entriesAdded).toBe(1);
    expect(result.statsUnchanged).toBe(true);
    expect(result.sideIsBranch).toBe(true);
  });

  it("validates the name, the absence of the branch and the target, writing nothing on failure", async () => {
    const result = await inSession(async (session) => {
      await session.createBranch("main", null);
      const statsSeqProbe = () => session.scanValues(branchTip("")).map((tip) => [tip.address.key, tip.seq]);
      const before = statsSeqProbe();
      const errors = [
        await rejection(session.createBranch("", null)),
        await rejection(session.createBranch("a\u0000b", null)),
        await rejection(session.createBranch("main", null)),
        await rejection(session.createBranch("other", "0190a000-0000-7000-8000-000000000000")),
      ];
      return { errors, before, after: statsSeqProbe(), other: session.branch("other") };
    });
    expect(result.errors[0]).toBeInstanceOf(InvalidBranch);
    expect(result.errors[1]).toBeInstanceOf(InvalidBranch);
    expect(result.errors[2]).toBeInstanceOf(BranchExists);
    expect(result.errors[3]).toBeInstanceOf(UnknownTarget);
    expect(result.after).toEqual(result.before);
    expect(result.other).toBeUndefined();
  });

  it("settles concurrent creations of one name: one wins, the other sees BranchExists", async () => {
    const outcomes = await inSession(async (session) => {
      const settled = await Promise.allSettled([session.createBranch("x", null), session.createBranch("x", null)]);
      return settled.map((s) => (s.status === "fulfilled" ? "created" : s.reason instanceof BranchExists ? "exists" : "other"));
    });
    expect(outcomes).toEqual(["created", "exists"]);
  });
});

describe("Branch appends", () => {
  it("insert a child of the tip and move the tip in one commit", async () => {
    const result = await inSession(async (session) => {
      const main = await session.createBranch("main", null);
      const first = await main.appendMessage(userMessage("one"));
      const second = await main.appendCustomEntry("note", { n: 1 });
      const third = await main.appendCustomEntry("marker", undefined);
      const entries = main.findEntries({ order: "oldestFirst" });
      const tip = session.getValue(branchTip("main"));
      return { first, second, third, entries, tipSeq: tip?.seq, tip: main.getTipId() };
    });
    expect(result.tip).toBe(result.third);
    expect(result.entries.map((e) => e.id)).toEqual([result.first, result.second, result.third]);
    expect(result.entries.map((e) => e.parentId)).toEqual([null, result.first, result.second]);
    // The entry and the tip move share one commit: consecutive seqs.
    expect(result.tipSeq).toBe(result.entries[2]!.seq + 1);
    expect(result.entries[1]).toMatchObject({ type: "custom", customType: "note", data: { n: 1 } });
    expect(result.entries[2]).not.toHaveProperty("data");
  });

  it("reserve the entry id before the mutation and return it", async () => {
    const ids = await inSession(async (session) => {
      const main = await session.createBranch("main", null);
      return Promise.all([main.appendMessage(userMessage("a")), main.appendMessage(userMessage("b"))]);
    });
    expect(new Set(ids).size).toBe(2);
    expect(ids[0]! < ids[1]!).toBe(true);
  });

  it("reject a pending assistant, and an append to a vanished branch, writing nothing", async () => {
    const result = await inSession(async (session) => {
      const main = await session.createBranch("main", null);
      const pending = await rejection(main.appendMessage(assistantMessage("partial", "pending")));
      const ghost = new Branch(session, "ghost");
      const vanished = await rejection(ghost.appendMessage(userMessage("x")));
      return { pending, vanished, entries: session.findEntries().length };
    });
    expect(result.pending).toBeInstanceOf(InvalidMessage);
    expect((result.pending as InvalidMessage).reason).toBe("pending_assistant");
    expect(result.vanished).toBeInstanceOf(UnknownBranch);
    expect(result.entries).toBe(0);
  });

  it("default findEntries/findEntry to the current tip", async () => {
    const result = await inSession(async (session) => {
      const main = await session.createBranch("main", null);
      await main.appendMessage(userMessage("old"));
      const newest = await main.appendMessage(userMessage("new"));
      return { newest, found: main.findEntry()?.id, count: main.findEntries().length };
    });
    expect(result.found).toBe(result.newest);
    expect(result.count).toBe(2);
  });
});

describe("name and labels", () => {
  it("are latest-wins values that never move a tip; undefined deletes", async () => {
    const result = await inSession(async (session) => {
      const main = await session.createBranch("main", null);
      const entry = await main.appendMessage(userMessage("labelled"));
      const tipSeq = session.getValue(branchTip("main"))?.seq;
      await session.setName("first");
      await session.setName("second");
      await session.setLabel(entry, "checkpoint");
      const named = { name: session.getName(), label: session.getLabel(entry) };
      await session.setName(undefined);
      await session.setLabel(entry, undefined);
      const unknown = await rejection(session.setLabel("0190a000-0000-7000-8000-000000000000", "x"));
      return {
        named,
        cleared: { name: session.getName(), label: session.getLabel(entry) },
        stored: [session.getValue(sessionName), session.getValue(entryLabel(entry))],
        tipMoved: session.getValue(branchTip("main"))?.seq !== tipSeq,
        unknown,
      };
    });
    expect(result.named).toEqual({ name: "second", label: "checkpoint" });
    expect(result.cleared).toEqual({ name: undefined, label: undefined });
    expect(result.stored).toEqual([undefined, undefined]);
    expect(result.tipMoved).toBe(false);
    expect(result.unknown).toBeInstanceOf(UnknownTarget);
  });
});

describe("session-wide entry queries", () => {
  it("filter by type and page with an exclusive cursor in both orders", async () => {
    const result = await inSession(async (session) => {
      const a = await session.createBranch("a", null);
      const b = await session.createBranch("b", null);
      for (let i = 0; i < 3; i++) {
        await a.appendMessage(userMessage(`a${i}`));
        await b.appendCustomEntry("tick", i);
      }
      const all = session.findEntries();
      const custom = session.findEntries({ type: "custom", customType: "tick" });
      const page1 = session.findEntries({ limit: 2 });
      const page2 = session.findEntries({ limit: 2, cursor: { seq: page1[1]!.seq } });
      const desc = session.findEntries({ order: "desc", limit: 2 });
      const descNext = session.findEntries({ order: "desc", limit: 2, cursor: { seq: desc[1]!.seq } });
      return { all, custom, page1, page2, desc, descNext, first: session.findEntry({ type: "message" }) };
    });
    const seqs = result.all.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(result.custom).toHaveLength(3);
    expect([...result.page1, ...result.page2].map((e) => e.id)).toEqual(result.all.slice(0, 4).map((e) => e.id));
    expect([...result.desc, ...result.descNext].map((e) => e.id)).toEqual(result.all.slice(-4).reverse().map((e) => e.id));
    expect(result.first?.id).toBe(result.all[0]!.id);
  });
});
