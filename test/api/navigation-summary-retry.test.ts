import { describe, expect, it } from "vitest";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { call } from "./helpers.ts";
import { laneSetup, untilAt, useScript } from "./lane-helpers.ts";

// A snapshot's operation carries `retry: { attempt, maxAttempts, nextAttemptAt }` in every retry
// wait, the summary's as the assistant's: the fold sets it from `retry_scheduled` for both, and a
// fresh snapshot must equal the fold. `GET …/operations/{opId}` answers `retry` too.

type Entry = { id: string };
type Setup = Awaited<ReturnType<typeof laneSetup>>;

/** A summarized navigation parked in `summary.retry_wait` (its retry an hour away). */
async function navigationWaitingToRetry(prefix: string): Promise<Setup & { operationId: string }> {
  const setup = await laneSetup(prefix);
  await useScript(setup, [{ text: "a" }, { text: "b" }, { error: "flaky", retryable: true }, { text: "SUMMARY" }]);
  for (const prompt of ["one", "two"]) expect((await call(`${setup.lanePath}/prompt`, { body: { prompt }, token: setup.key })).status).toBe(200);
  const patched = await call(setup.sessionPath, { method: "PATCH", body: { settings: { retry: { enabled: true, maxRetries: 3, baseDelayMs: 3_600_000 } } }, token: setup.key });
  expect(patched.status).toBe(200);
  const entries = await (await call(`${setup.sessionPath}/branches/main/entries?order=asc`, { token: setup.key })).json<{ items: Entry[] }>();
  const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "navigation", targetId: entries.items[1]?.id, summarize: true }, token: setup.key });
  expect(accepted.status).toBe(202);
  const { operationId } = await accepted.json<{ operationId: string }>();
  await untilAt(setup, "summary.retry_wait");
  return { ...setup, operationId };
}

describe("a summarized navigation waiting to retry its summary request", { timeout: 30_000 }, () => {
  it("the lane snapshot's operation carries the retry (attempt, maxAttempts, nextAttemptAt)", async () => {
    const setup = await navigationWaitingToRetry("navrt1");
    const { snapshot } = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: LaneSnapshot }>();
    await call(`${setup.lanePath}/abort`, { method: "POST", token: setup.key });
    expect(snapshot.operation).toMatchObject({ id: setup.operationId, kind: "navigation" });
    expect(snapshot.operation?.retry).toMatchObject({ attempt: 2, maxAttempts: 4, nextAttemptAt: expect.any(Number) });
  });

  it("GET …/operations/{id} answers the retry of the active operation", async () => {
    const setup = await navigationWaitingToRetry("navrt2");
    const view = await (await call(`${setup.lanePath}/operations/${setup.operationId}`, { token: setup.key })).json<{ state: string; at: string; retry?: unknown }>();
    await call(`${setup.lanePath}/abort`, { method: "POST", token: setup.key });
    expect(view).toMatchObject({ state: "active", at: "summary.retry_wait" });
    expect(view.retry).toMatchObject({ attempt: 2, notBefore: expect.any(Number) });
  });
});
