import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { checkInvariants } from "../runtime/invariants.ts";
import { call } from "./helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";
import { createSchedule, runsOf, until } from "./schedule-helpers.ts";
import { objectOf } from "./session-helpers.ts";

// An interrupt hands the aborted run's queued steers and follow-ups back to its caller (docs/
// api-lanes.md "What an abort does to the queue"). A schedule firing with `ifBusy: "interrupt"` has
// no caller to hand them to: they were deleted, and a user's queued input was lost. They now stay
// queued, as next-run input, in the interrupt's own commit: the scheduled run takes them.

type Entry = { type: string; message?: { role: string; content: unknown } };

describe("a schedule firing with ifBusy interrupt while a user's run is in flight", () => {
  it("keeps the follow-up the user queued for that run: the scheduled run answers it, once", async () => {
    const setup = await laneSetup("rvsch");
    await useScript(setup, [slowStep(), { text: "scheduled answer" }, { text: "answer to the follow-up" }, { text: "spare" }]);
    const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "a long question" }, token: setup.key });
    expect(accepted.status).toBe(202);
    const { operationId: first } = await accepted.json<{ operationId: string }>();
    await untilAt(setup, "assistant.effect_pending");
    expect((await call(`${setup.lanePath}/queue`, { body: { kind: "followUp", message: "my queued follow-up" }, token: setup.key })).status).toBe(201);

    // A one-off time already past fires at once, interrupting the user's run.
    const schedule = await createSchedule(setup, { at: Date.now() - 1_000, prompt: "scheduled check-in", ifBusy: "interrupt" });
    const [run] = await until("the scheduled run", () => runsOf(setup, schedule.id), (runs) => runs.length > 0);
    expect(run).toMatchObject({ operationId: expect.any(String) });
    const scheduled = await (await call(`${setup.lanePath}/operations/${run?.operationId}?wait=20`, { token: setup.key })).json();
    expect(scheduled).toMatchObject({ state: "settled", result: { status: "completed" } });
    const firstView = await (await call(`${setup.lanePath}/operations/${first}`, { token: setup.key })).json();
    expect(firstView).toMatchObject({ state: "settled", result: { status: "aborted" } });

    // The user's follow-up still exists somewhere a client can find it: still queued, or placed on the branch.
    const lane = await (await call(setup.lanePath, { token: setup.key })).json<{ queues: { message?: { content: unknown } }[] }>();
    const stillQueued = lane.queues.some((item) => JSON.stringify(item.message?.content).includes("my queued follow-up"));
    const branch = await (await call(`${setup.sessionPath}/branches/main/entries?limit=1000`, { token: setup.key })).json<{ items: Entry[] }>();
    const placed = branch.items.some((entry) => entry.message?.role === "user" && JSON.stringify(entry.message.content).includes("my queued follow-up"));
    expect({ stillQueued, placed }).toEqual({ stillQueued: false, placed: true });
    const prompts = branch.items.flatMap((entry) => (entry.message?.role === "user" ? [JSON.stringify(entry.message.content)] : []));
    expect(prompts.filter((prompt) => prompt.includes("my queued follow-up"))).toHaveLength(1);
    expect(prompts.filter((prompt) => prompt.includes("scheduled check-in"))).toHaveLength(1);
    const violations = await runInDurableObject(objectOf(setup.tenantId, setup.sid), (instance: SessionObject) => checkInvariants(instance.session()));
    expect(violations).toEqual([]);
  });
});
