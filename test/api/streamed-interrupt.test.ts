import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sseReader } from "../helpers/sse-reader.ts";
import { call } from "./helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";
import { eventsOf } from "./sse-helpers.ts";

// Spec "Prompt while busy": `interrupt` answers this run's answer plus `interrupted: { operationId,
// steer, followUp }`, the drained input of the aborted run; "Streaming over HTTP": a streamed
// prompt ends with a `result` event carrying the same body as the JSON answer. The drained messages
// exist nowhere else once the abort took them off the queue, and the streamed result lacked them.

describe("a streamed prompt with ifBusy interrupt", () => {
  it("ends with a result event that carries `interrupted` (the aborted run and the steer it drained), like the JSON answer", async () => {
    const setup = await laneSetup("rvsi");
    await useScript(setup, [slowStep(), { text: "interrupting answer" }]);
    const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "first" }, token: setup.key });
    expect(accepted.status).toBe(202);
    const { operationId: first } = await accepted.json<{ operationId: string }>();
    await untilAt(setup, "assistant.effect_pending");
    expect((await call(`${setup.lanePath}/queue`, { body: { kind: "steer", message: "an unused steer" }, token: setup.key })).status).toBe(201);

    const response = await exports.default.fetch(`http://api.test${setup.lanePath}/prompt`, {
      method: "POST",
      headers: { authorization: `Bearer ${setup.key}`, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ prompt: "stop and do this", ifBusy: "interrupt" }),
    });
    expect(response.status).toBe(200);
    if (!response.body) throw new Error("no body");
    const items = await sseReader(response.body).until((item) => item.event === "result");
    const result = JSON.parse(items.at(-1)?.data ?? "null");
    expect(result).toMatchObject({ kind: "run", status: "completed" });

    // The drained steer was really taken off the queue: the first run ended aborted and the queue is empty.
    const firstView = await (await call(`${setup.lanePath}/operations/${first}`, { token: setup.key })).json();
    expect(firstView).toMatchObject({ state: "settled", result: { status: "aborted" } });
    const lane = await (await call(setup.lanePath, { token: setup.key })).json<{ queues: unknown[] }>();
    expect(lane.queues).toEqual([]);

    // The stream relays only its own run's events (not the other run's operation_abort): its result hands the steer back.
    expect(eventsOf(items).filter(({ event }) => event.type === "operation_abort")).toEqual([]);
    expect(result.interrupted).toMatchObject({ operationId: first, steer: [{ role: "user", content: "an unused steer" }], followUp: [] });
  });
});
