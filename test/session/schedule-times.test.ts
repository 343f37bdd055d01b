import { describe, expect, it } from "vitest";
import { firstDue, missedBetween, nextDueAfter, scheduledOperationId } from "../../durable-objects/session/schedules/schedule-times.ts";
import { isUuidV7, uuidv7Timestamp } from "../../harness/session/ids.ts";
import { cronProblem, isTimeZone } from "../../schema/schedules.ts";

// A schedule's due times as pure functions (durable-objects/session/schedules/schedule-times.ts):
// cron in a time zone across daylight-saving changes, intervals, one-off times, coalescing, and the
// operation id a due time derives.

const at = (iso: string): number => Date.parse(iso);
const cron = (expression: string, timezone: string) => ({ timing: { cron: expression }, timezone, anchor: 0 });

describe("schedule times", () => {
  it("a daily cron in Europe/Berlin keeps its local time across the spring-forward day (UTC offset +1 → +2)", () => {
    const spec = cron("30 9 * * *", "Europe/Berlin");
    expect(new Date(nextDueAfter(spec, at("2026-03-28T12:00:00Z")) ?? 0).toISOString()).toBe("2026-03-29T07:30:00.000Z");
    expect(new Date(nextDueAfter(spec, at("2026-03-27T12:00:00Z")) ?? 0).toISOString()).toBe("2026-03-28T08:30:00.000Z");
  });

  it("a local time skipped by the jump (02:30 on 29 March 2026 in Berlin) runs at the first valid instant after the gap", () => {
    const spec = cron("30 2 * * *", "Europe/Berlin");
    // 02:00 → 03:00 local at 01:00 UTC: 02:30 does not exist; the run is at 03:00 local = 01:00 UTC.
    expect(new Date(nextDueAfter(spec, at("2026-03-28T12:00:00Z")) ?? 0).toISOString()).toBe("2026-03-29T01:00:00.000Z");
  });

  it("a local time that occurs twice (01:30 on 1 November 2026 in New York) runs once", () => {
    const spec = cron("30 1 * * *", "America/New_York");
    const first = nextDueAfter(spec, at("2026-10-31T12:00:00Z")) ?? 0;
    // The first 01:30 is EDT (05:30 UTC); the repeated one (06:30 UTC) is not a second run.
    expect(new Date(first).toISOString()).toBe("2026-11-01T05:30:00.000Z");
    expect(new Date(nextDueAfter(spec, first) ?? 0).toISOString()).toBe("2026-11-02T06:30:00.000Z");
  });

  it("UTC by default semantics: every minute, strictly after the given instant", () => {
    const spec = cron("* * * * *", "UTC");
    expect(nextDueAfter(spec, at("2026-01-01T00:00:00Z"))).toBe(at("2026-01-01T00:01:00Z"));
    expect(nextDueAfter(spec, at("2026-01-01T00:00:30Z"))).toBe(at("2026-01-01T00:01:00Z"));
  });

  it("intervals count from their anchor; a one-off has no time after it and is due even when past", () => {
    const every = { timing: { everySeconds: 60 }, timezone: "UTC", anchor: 1_000_000 };
    expect(firstDue(every, 1_000_000)).toBe(1_060_000);
    expect(nextDueAfter(every, 1_060_000)).toBe(1_120_000);
    expect(nextDueAfter(every, 1_119_999)).toBe(1_120_000);
    const once = { timing: { at: 5_000 }, timezone: "UTC", anchor: 9_000 };
    expect(firstDue(once, 9_000)).toBe(5_000);
    expect(nextDueAfter(once, 9_000)).toBeUndefined();
  });

  it("counts the due times a coalesced run stands for", () => {
    const spec = cron("* * * * *", "UTC");
    expect(missedBetween(spec, at("2026-01-01T00:00:00Z"), at("2026-01-01T00:05:30Z"))).toBe(5);
    expect(missedBetween(spec, at("2026-01-01T00:00:00Z"), at("2026-01-01T00:00:59Z"))).toBe(0);
  });

  it("derives one UUIDv7 per schedule and due time, timed at the due time", () => {
    const a = { id: "sch_a", createdAt: 1_767_000_000_000 };
    const id = scheduledOperationId(a, 1_767_225_600_000);
    expect(isUuidV7(id)).toBe(true);
    expect(uuidv7Timestamp(id)).toBe(1_767_225_600_000);
    expect(scheduledOperationId({ ...a }, 1_767_225_600_000)).toBe(id);
    expect(scheduledOperationId({ ...a, id: "sch_b" }, 1_767_225_600_000)).not.toBe(id);
    expect(scheduledOperationId(a, 1_767_225_660_000)).not.toBe(id);
    // The same id created again (after a deletion) is another schedule: its due times name other runs.
    expect(scheduledOperationId({ ...a, createdAt: a.createdAt + 1 }, 1_767_225_600_000)).not.toBe(id);
  });

  it("accepts 5-field cron expressions only, and IANA zones", () => {
    expect(cronProblem("0 9 * * 1-5")).toBeUndefined();
    expect(cronProblem("0 0 9 * * *")).toMatch(/5 fields/);
    expect(cronProblem("61 * * * *")).toMatch(/not valid/);
    expect(isTimeZone("Europe/Berlin")).toBe(true);
    expect(isTimeZone("Mars/Olympus")).toBe(false);
  });
});
