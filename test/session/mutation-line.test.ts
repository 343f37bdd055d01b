import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { value } from "../../harness/session/addresses.ts";
import { MutationMisuse, SessionClosed, StorageCorruption } from "../../harness/session/errors.ts";
import { MutationLine } from "../../harness/session/mutation-line.ts";
import type { Session } from "../../harness/session/session.ts";
import { insertEntry, setValue } from "../../harness/session/writes.ts";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { createSession } from "../helpers/sessions.ts";
import { userMessage } from "../helpers/messages.ts";

// The WP06 mutation-line conformance list (reference §2.1), against the real SessionObject.

const counter = value<number>("test.counter", "n");

async function inSession<T>(run: (session: Session) => Promise<T>): Promise<T> {
  const { stub } = await createSession("line");
  return runInDurableObject(stub, (instance: SessionObject) => run(instance.session()));
}

const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

describe("the session mutation line", () => {
  it("serializes callbacks globally, across branches, in arrival order", async () => {
    const order = await inSession(async (session) => {
      const a = await session.createBranch("a", null);
      const b = await session.createBranch("b", null);
      const held = await session.beginMutation();
      const log: string[] = [];
      const fromA = a.appendMessage(userMessage("1")).then(() => log.push("a"));
      const fromB = b.appendMessage(userMessage("2")).then(() => log.push("b"));
      const plain = session.mutate(() => log.push("mutate"));
      await tick();
      log.push("released");
      held.end();
      await Promise.all([fromA, fromB, plain]);
      return log;
    });
    expect(order).toEqual(["released", "a", "b", "mutate"]);
  });

  it("beginMutation excludes every other mutation until end, and commit does not release", async () => {
    const result = await inSession(async (session) => {
      const scope = await session.beginMutation();
      const commit = scope.commit([setValue(counter, 1)]);
      let otherRan = false;
      const other = session.setValue(counter, 2).then(() => (otherRan = true));
      await tick();
      await tick();
      const beforeEnd = { otherRan, value: session.getValue(counter)?.value };
      scope.end();
      await other;
      return { commitSeqs: commit.seqs.length, beforeEnd, after: session.getValue(counter)?.value };
    });
    expect(result.commitSeqs).toBe(1);
    expect(result.beforeEnd).toEqual({ otherRan: false, value: 1 });
    expect(result.after).toBe(2);
  });

  it("allows end without commit, makes end idempotent, and invalidates the capability", async () => {
    const result = await inSession(async (session) => {
      const scope = await session.beginMutation();
      scope.end();
      scope.end();
      const afterEnd = (() => {
        try {
          scope.getValue(counter);
          return "read";
        } catch (error) {
          return error instanceof MutationMisuse ? "misuse" : "other";
        }
      })();
      await session.setValue(counter, 7);
      return { afterEnd, value: session.getValue(counter)?.value };
    });
    expect(result).toEqual({ afterEnd: "misuse", value: 7 });
  });

  it("admits at most one commit attempt per capability, even after a failed one", async () => {
    const outcome = await inSession(async (session) => {
      const scope = await session.beginMutation();
      const first = scope.commit([setValue(counter, 1)]);
      let second = "none";
      try {
        scope.commit([setValue(counter, 2)]);
      } catch (error) {
        second = error instanceof MutationMisuse ? "misuse" : String(error);
      }
      scope.end();
      return { first: first.seqs.length, second, value: session.getValue(counter)?.value };
    });
    expect(outcome).toEqual({ first: 1, second: "misuse", value: 1 });
  });

  it("close waits for an acquired scope to end, then rejects later mutations", async () => {
    const result = await inSession(async (session) => {
      const scope = await session.beginMutation();
      let closed = false;
      const closing = session.close().then(() => (closed = true));
      await tick();
      await tick();
      const closedBeforeEnd = closed;
      scope.commit([setValue(counter, 5)]);
      scope.end();
      await closing;
      const later = await session.setValue(counter, 6).then(
        () => "admitted",
        (error: unknown) => (error instanceof SessionClosed ? "closed" : String(error)),
      );
      return { closedBeforeEnd, closed, later };
    });
    expect(result).toEqual({ closedBeforeEnd: false, closed: true, later: "closed" });
  });

  it("finishes mutations admitted before the seal (D14.4)", async () => {
    const result = await inSession(async (session) => {
      const scope = await session.beginMutation();
      const queued = session.setValue(counter, 9);
      const closing = session.close();
      scope.end();
      await queued;
      await closing;
      return "queued write committed";
    });
    expect(result).toBe("queued write committed");
  });

  it("keeps getValue followed by setValue outside mutate non-atomic, while mutate is atomic", async () => {
    const result = await inSession(async (session) => {
      await session.setValue(counter, 0);
      const racy = async () => {
        const current = session.getValue(counter)?.value ?? 0;
        await tick();
        await session.setValue(counter, current + 1);
      };
      await Promise.all(Array.from({ length: 10 }, racy));
      const lost = session.getValue(counter)?.value;
      await session.setValue(counter, 0);
      const atomic = () =>
        session.mutate((m) => m.commit([setValue(counter, (m.getValue(counter)?.value ?? 0) + 1)]));
      await Promise.all(Array.from({ length: 10 }, atomic));
      return { lost, atomic: session.getValue(counter)?.value };
    });
    expect(result.lost).toBeLessThan(10);
    expect(result.atomic).toBe(10);
  });

  it("refuses an asynchronous mutation callback (ARCHITECTURE D4)", async () => {
    const outcome = await inSession(async (session) => {
      const asyncCallback = async () => 1;
      return session.mutate(() => asyncCallback() as never).then(
        () => "accepted",
        (error: unknown) => (error instanceof MutationMisuse ? "refused" : String(error)),
      );
    });
    expect(outcome).toBe("refused");
  });

  it("faults the session when an admitted commit fails: nothing more is admitted", async () => {
    const result = await inSession(async (session) => {
      const id = session.idGenerator.next();
      await session.mutate((m) => m.commit([insertEntry({ id, parentId: null, type: "message", message: userMessage("x") })]));
      const failure = await session
        .mutate((m) => m.commit([insertEntry({ id, parentId: null, type: "message", message: userMessage("y") })]))
        .then(
          () => "committed",
          (error: unknown) => (error instanceof StorageCorruption ? "corruption" : String(error)),
        );
      const later = await session.setValue(counter, 1).then(
        () => "admitted",
        (error: unknown) => (error instanceof SessionClosed ? "faulted" : String(error)),
      );
      return { failure, later, closed: session.closed };
    });
    expect(result).toEqual({ failure: "corruption", later: "faulted", closed: true });
  });
});

describe("MutationLine", () => {
  it("runs holders one at a time in FIFO order and releases after a throw", async () => {
    const line = new MutationLine();
    const log: number[] = [];
    const jobs = [1, 2, 3].map((n) =>
      line.run(async () => {
        log.push(n);
        await tick();
        log.push(-n);
        if (n === 2) throw new Error("boom");
      }),
    );
    const settled = await Promise.allSettled(jobs);
    expect(log).toEqual([1, -1, 2, -2, 3, -3]);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
  });
});
