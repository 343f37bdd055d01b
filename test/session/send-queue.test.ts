import { describe, expect, it } from "vitest";
import { SendQueue } from "../../durable-objects/session/watch/send-queue.ts";

// The queue behind a large audience's flushes (durable-objects/session/watch/send-queue.ts): a
// slice of targets a turn, the rest in later turns, every target's sends in the order queued.

const nextTurn = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("SendQueue", () => {
  it("sends one slice now and the rest a slice a turn, deliveries in the order they were queued", async () => {
    const queue = new SendQueue<number>(3);
    const sent: string[] = [];
    queue.push([1, 2, 3, 4], (target) => sent.push(`a${target}`));
    queue.push([1, 2], (target) => sent.push(`b${target}`));
    queue.run();
    expect(sent).toEqual(["a1", "a2", "a3"]);
    await nextTurn();
    expect(sent).toEqual(["a1", "a2", "a3", "a4", "b1", "b2"]);
  });

  it("finish sends everything queued at once, and a send that finishes the queue from within drops nothing", () => {
    const queue = new SendQueue<number>(2);
    const sent: string[] = [];
    queue.push([1, 2, 3], (target) => {
      sent.push(`a${target}`);
      // A send that needs everything before it out first (a snapshot sent mid-delivery), then queues more.
      if (target !== 1) return;
      queue.finish();
      queue.push([1], (next) => sent.push(`d${next}`));
    });
    queue.push([1, 2], (target) => sent.push(`b${target}`));
    queue.push([1], (target) => sent.push(`c${target}`));
    queue.run();
    expect(sent).toEqual(["a1", "a2", "a3", "b1", "b2", "c1", "d1"]);
  });

  it("an audience within one slice goes out in the same turn; a finish cancels the pending turn", async () => {
    const queue = new SendQueue<number>(5);
    const sent: number[] = [];
    queue.push([1, 2, 3], (target) => sent.push(target));
    queue.run();
    expect(sent).toEqual([1, 2, 3]);
    queue.push([4, 5, 6, 7, 8, 9], (target) => sent.push(target));
    queue.run();
    expect(sent).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    queue.finish();
    expect(sent).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    await nextTurn();
    expect(sent).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
