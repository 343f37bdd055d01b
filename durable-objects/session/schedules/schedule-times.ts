import { createHash } from "node:crypto";
import { Cron } from "croner";
import type { ScheduleTiming } from "../../../schema/schedules.ts";

// A schedule's due times (spec/API.md "Schedules"), pure functions of its timing, time zone and
// anchor, so that the DST rules are tested without an object (test/unit/schedule-times.test.ts).

/** What the due times of a schedule depend on; `anchor` is when an interval schedule was set (its first due time is one interval later). */
export interface TimingSpec {
  timing: ScheduleTiming;
  timezone: string;
  anchor: number;
}

/**
 * The first due time strictly after `after`, or undefined when none is left. Cron times follow the
 * zone's rules through croner. An expression whose minutes and hours are fixed times (numbers,
 * lists, ranges: no wildcard, no step; croner's "no-wildcard" rule, close to Vixie cron's) runs each
 * local time once: one skipped by a daylight-saving jump at the first valid instant after the gap,
 * one that occurs twice at its first occurrence. An expression with a wildcard or step in minutes
 * or hours runs at each instant it matches.
 */
export function nextDueAfter(spec: TimingSpec, after: number): number | undefined {
  const { timing } = spec;
  if ("at" in timing) return timing.at > after ? timing.at : undefined;
  if ("everySeconds" in timing) {
    const period = timing.everySeconds * 1000;
    if (after < spec.anchor) return spec.anchor + period;
    return spec.anchor + (Math.floor((after - spec.anchor) / period) + 1) * period;
  }
  const job = new Cron(timing.cron, { mode: "5-part", timezone: spec.timezone, paused: true, fixedTimeRule: "no-wildcard" });
  return job.nextRun(new Date(after))?.getTime();
}

/**
 * The first due time of a schedule set (created, or its timing edited) at `now`: a one-off `at`
 * is due at its time, also one already past (then it runs at once); the others after `now`.
 */
export function firstDue(spec: TimingSpec, now: number): number | undefined {
  if ("at" in spec.timing) return spec.timing.at;
  return nextDueAfter(spec, now);
}

/** A cron's missed due times are walked one by one (its grid is irregular; about 80 µs each), so counting stops here. */
export const MISSED_CRON_COUNT_MAX = 1_000;

/** Due times in (`from`, `through`] a coalesced run stands for besides its own (a cron's counted up to `cap`). */
export function missedBetween(spec: TimingSpec, from: number, through: number, cap = MISSED_CRON_COUNT_MAX): number {
  // An interval's grid is counted, not walked: a long outage of an every-second schedule is exact and cheap.
  if ("everySeconds" in spec.timing) {
    const first = nextDueAfter(spec, from);
    if (first === undefined || first > through) return 0;
    return Math.floor((through - first) / (spec.timing.everySeconds * 1000)) + 1;
  }
  let count = 0;
  for (let at = nextDueAfter(spec, from); at !== undefined && at <= through && count < cap; at = nextDueAfter(spec, at)) count++;
  return count;
}

/**
 * The operation id of the run a schedule's due time starts: a UUIDv7 whose time is the due time
 * and whose other bits are a hash of the schedule (its id and its creation time) and the due time.
 * The same due time always names the same operation, which a lane accepts once (a settled or open
 * operation id is refused), so a due time fired twice (an alarm and the cron's sweep, a crash
 * between the firing and its record) never starts a second run. The creation time tells apart a
 * schedule deleted and created again under its id: its due times are new ones.
 */
export function scheduledOperationId(schedule: { id: string; createdAt: number }, dueAt: number): string {
  const hash = createHash("sha256").update(`schedule\n${schedule.id}\n${schedule.createdAt}\n${dueAt}`).digest("hex");
  const time = Math.max(0, Math.min(dueAt, 2 ** 48 - 1)).toString(16).padStart(12, "0");
  const variant = ((Number.parseInt(hash.charAt(3), 16) & 0x3) | 0x8).toString(16);
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${hash.slice(0, 3)}-${variant}${hash.slice(4, 7)}-${hash.slice(7, 19)}`;
}
