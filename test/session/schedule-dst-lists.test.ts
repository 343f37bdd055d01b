import { describe, expect, it } from "vitest";
import { nextDueAfter } from "../../durable-objects/session/schedules/schedule-times.ts";

// docs/schedules.md "When a schedule runs": "a time that occurs twice when the clocks go back runs
// once, at its first occurrence. An expression with a wildcard or step in its minutes or hours
// (`*/30 * * * *`) runs at each instant it matches, so in the repeated hour it runs in both."
// (spec/API.md: "a repeated hour runs once"). A list of fixed hours or minutes has no wildcard
// and no step: each of its local times is a fixed time and runs once.

const at = (iso: string): number => Date.parse(iso);
const cron = (expression: string, timezone: string) => ({ timing: { cron: expression }, timezone, anchor: 0 });

function dueTimes(expression: string, timezone: string, from: string, through: string): string[] {
  const spec = cron(expression, timezone);
  const out: string[] = [];
  for (let next = nextDueAfter(spec, at(from)); next !== undefined && next <= at(through); next = nextDueAfter(spec, next)) out.push(new Date(next).toISOString());
  return out;
}

describe("fixed local times in the repeated hour (Berlin, 25 October 2026: 03:00 CEST → 02:00 CET)", () => {
  it("`0 2 * * *` runs once, at the first 02:00 (CEST, 00:00 UTC)", () => {
    expect(dueTimes("0 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", "2026-10-25T12:00:00Z")).toEqual(["2026-10-25T00:00:00.000Z"]);
  });

  it("`0 2,14 * * *` (02:00 and 14:00, a list of fixed hours) runs 02:00 once, not in both 02:00s", () => {
    expect(dueTimes("0 2,14 * * *", "Europe/Berlin", "2026-10-24T20:00:00Z", "2026-10-25T12:00:00Z")).toEqual(["2026-10-25T00:00:00.000Z"]);
  });

  it("`0,30 2 * * *` (02:00 and 02:30, fixed times) runs each once", () => {
    expect(dueTimes("0,30 2 * * *", "Europe/Berlin", "2026-10-24T20:00:00Z", "2026-10-25T12:00:00Z")).toEqual(["2026-10-25T00:00:00.000Z", "2026-10-25T00:30:00.000Z"]);
  });
});
