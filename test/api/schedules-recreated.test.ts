import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { alarm, createSchedule, runsOf } from "./schedule-helpers.ts";
import { deliveries, eventually, register, receiver } from "./webhooks-helpers.ts";

// A schedule's run id derives from the schedule (its id and creation time) and the due time
// (schedule-times.ts): a schedule deleted and created again under its id is a new schedule, whose
// due times start new runs even where the old one already ran.

interface Transcript {
  snapshot: { transcript: { type: string; message?: { role: string; content: unknown } }[] };
}

describe("a schedule created again under the id of a deleted one", { timeout: 60_000 }, () => {
  it("starts a new run at a due time the old one already ran, and holds no slot after it", async () => {
    const setup = await laneSetup("schrecreate");
    const at = Date.now() - 5_000;
    await createSchedule(setup, { id: "remind", at, prompt: "first reminder" });
    await alarm(setup);
    const first = await eventually(async () => (await runsOf(setup, "remind"))[0]?.operationId, "the first run");
    const tenant = env.TENANTS.getByName(setup.tenantId);
    await eventually(async () => ((await tenant.openOperationCount()) === 0 ? true : undefined), "the first run to settle");

    expect((await call(`${setup.lanePath}/schedules/remind`, { method: "DELETE", token: setup.key })).status).toBe(204);
    await createSchedule(setup, { id: "remind", at, prompt: "second reminder" });
    await alarm(setup);
    const run = await eventually(async () => (await runsOf(setup, "remind"))[0], "the second schedule's run");
    expect(run.skipped).toBeUndefined();
    expect(run.operationId).not.toBe(first);
    await eventually(async () => ((await tenant.openOperationCount()) === 0 ? true : undefined), "the second run to settle");
    const view = await (await call(`${setup.lanePath}/operations/${run.operationId}`, { token: setup.key })).json<{ state: string }>();
    expect(view.state).toBe("settled");
    const { snapshot } = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<Transcript>();
    const prompts = snapshot.transcript.flatMap((entry) => (entry.message?.role === "user" ? [JSON.stringify(entry.message.content)] : []));
    expect(prompts.filter((prompt) => prompt.includes("reminder"))).toEqual([expect.stringContaining("first reminder"), expect.stringContaining("second reminder")]);
  });

  it("tells its firing with a schedule.fired event of its own, though the old one fired at the same due time", async () => {
    const setup = await laneSetup("schrecreate_evt");
    const hook = receiver("schrecreate_evt");
    const endpoint = await register(setup.key, hook.url("ok"), ["schedule.fired"]);
    const at = Date.now() - 5_000;
    const fired = async () => (await deliveries(setup.key, endpoint.id)).filter((delivery) => delivery.type === "schedule.fired");
    await createSchedule(setup, { id: "remind", at, prompt: "first reminder" });
    await alarm(setup);
    await eventually(async () => ((await fired()).length === 1 ? true : undefined), "the first schedule.fired");
    const tenant = env.TENANTS.getByName(setup.tenantId);
    await eventually(async () => ((await tenant.openOperationCount()) === 0 ? true : undefined), "the first run to settle");

    expect((await call(`${setup.lanePath}/schedules/remind`, { method: "DELETE", token: setup.key })).status).toBe(204);
    await createSchedule(setup, { id: "remind", at, prompt: "second reminder" });
    await alarm(setup);
    await eventually(async () => ((await runsOf(setup, "remind"))[0] ? true : undefined), "the second schedule's run");
    // Derived from the schedule's id and due time alone, its event id was the old one's: dropped as a repeat.
    const both = await eventually(async () => {
      const events = await fired();
      return events.length === 2 ? events : undefined;
    }, "the second schedule.fired", 10_000);
    expect(new Set(both.map((delivery) => delivery.eventId)).size).toBe(2);
  });
});
