import { describe, expect, it } from "vitest";
import { EVENT_WINDOW_CHARS, EVENT_WINDOW_EVENTS, EVENT_WINDOW_LANES, EVENT_WINDOW_TOTAL_CHARS, EventWindow } from "../../durable-objects/session/watch/event-window.ts";
import type { HarnessEvent } from "../../schema/lane.ts";

// The retention window behind SSE resumption (durable-objects/session/watch/event-window.ts): it
// answers "the lane's events after N" only when it holds all of them.

const custom = (lane: string, value = ""): HarnessEvent => ({ type: "config_update", lane, property: "model", value, previous: null });

describe("EventWindow", () => {
  it("keeps the newest events of a lane; a seq before them is outside the window", () => {
    const window = new EventWindow();
    window.restart(10);
    for (let seq = 11; seq <= 10 + EVENT_WINDOW_EVENTS + 5; seq++) window.retain(seq, custom("main"));
    const last = 10 + EVENT_WINDOW_EVENTS + 5;
    expect(window.after("main", window.epoch, last - 3)?.map((e) => e.seq)).toEqual([last - 2, last - 1, last]);
    expect(window.after("main", window.epoch, 15)?.length).toBe(EVENT_WINDOW_EVENTS);
    expect(window.after("main", window.epoch, 14)).toBeUndefined();
    expect(window.after("main", window.epoch, 10)).toBeUndefined();
  });

  it("never vouches for another epoch, a seq not numbered yet, or events before a lane's first", () => {
    const window = new EventWindow();
    window.restart(0);
    window.retain(1, custom("a"));
    window.retain(2, custom("b"));
    expect(window.after("b", window.epoch, 1)?.map((e) => e.seq)).toEqual([2]);
    expect(window.after("b", window.epoch, 0)).toBeUndefined();
    expect(window.after("a", window.epoch, 3)).toBeUndefined();
    expect(window.after("a", "000000000000", 1)).toBeUndefined();
    // A lane with no events of its own knows only "now".
    expect(window.after("c", window.epoch, 2)).toEqual([]);
    expect(window.after("c", window.epoch, 1)).toBeUndefined();
    const epoch = window.epoch;
    window.restart(2);
    expect(window.epoch).not.toBe(epoch);
    expect(window.after("a", epoch, 1)).toBeUndefined();
  });

  it("bounds memory: a lane's JSON beyond the character budget, lanes beyond the count", () => {
    const window = new EventWindow();
    window.restart(0);
    const big = "x".repeat(EVENT_WINDOW_CHARS / 4);
    for (let seq = 1; seq <= 8; seq++) window.retain(seq, custom("main", big));
    // Four quarters and their JSON exceed the budget: three are kept.
    expect(window.after("main", window.epoch, 5)?.map((e) => e.seq)).toEqual([6, 7, 8]);
    expect(window.after("main", window.epoch, 1)).toBeUndefined();
    for (let i = 0; i <= EVENT_WINDOW_LANES; i++) window.retain(9 + i, custom(`lane${i}`));
    expect(window.after("main", window.epoch, 8)).toBeUndefined();
  });

  it("bounds the session's windows together: past the total, the oldest events go, whichever lane holds them", () => {
    const window = new EventWindow();
    window.restart(0);
    // Each lane stays within its own budget; together they would hold twice the total.
    const share = "x".repeat(EVENT_WINDOW_CHARS / 2);
    const lanes = (2 * EVENT_WINDOW_TOTAL_CHARS) / (EVENT_WINDOW_CHARS / 2);
    expect(lanes).toBeLessThanOrEqual(EVENT_WINDOW_LANES);
    for (let seq = 1; seq <= lanes; seq++) window.retain(seq, custom(`lane${seq}`, share));
    const kept = Array.from({ length: lanes }, (_, index) => window.after(`lane${index + 1}`, window.epoch, index) !== undefined);
    // The newest lanes' events are kept; the oldest ones' windows no longer vouch for them.
    expect(kept.at(-1)).toBe(true);
    expect(kept[0]).toBe(false);
    expect(kept.filter(Boolean).length).toBeLessThan(lanes / 2 + 1);
    expect(kept.indexOf(true)).toBeGreaterThan(0);
    expect(kept.slice(kept.indexOf(true)).every(Boolean)).toBe(true);
  });
});
