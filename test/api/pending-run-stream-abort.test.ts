import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sseReader } from "../helpers/sse-reader.ts";
import { call } from "./helpers.ts";
import { eventsOf } from "./sse-helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";

// docs/api-watch.md "A prompt answered as a stream": "A pending run's stream carries none of the
// events of the runs ahead of it."

describe("a pending run's streamed prompt", { timeout: 60_000 }, () => {
  it("does not relay the operation_abort of the run ahead of it", async () => {
    const setup = await laneSetup("rvpabort");
    await useScript(setup, [slowStep(200), { text: "second answer" }]);
    const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "first" }, token: setup.key });
    expect(accepted.status).toBe(202);
    const first = (await accepted.json<{ operationId: string }>()).operationId;
    await untilAt(setup, "assistant.effect_pending");

    const response = await exports.default.fetch(`http://api.test${setup.lanePath}/prompt`, {
      method: "POST",
      headers: { authorization: `Bearer ${setup.key}`, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ prompt: "second", ifBusy: "enqueue" }),
    });
    expect(response.status).toBe(200);
    if (!response.body) throw new Error("no body");
    const reader = sseReader(response.body);
    // The pending run is listed before the run ahead is aborted.
    let pending: string | undefined;
    for (let i = 0; i < 200 && pending === undefined; i++) {
      const listed = await (await call(`${setup.lanePath}/pending`, { token: setup.key })).json<{ items: { operationId: string }[] }>();
      pending = listed.items[0]?.operationId;
      if (pending === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    if (pending === undefined) throw new Error("no pending run");

    expect((await call(`${setup.lanePath}/abort`, { method: "POST", token: setup.key })).status).toBe(200);
    const items = await reader.until((item) => item.event === "result");
    const result = JSON.parse(items.at(-1)?.data ?? "null");
    expect(result).toMatchObject({ operationId: pending, status: "completed" });

    // Every run-scoped event relayed belongs to the pending run itself.
    const foreign = eventsOf(items).filter(({ event }) => (event.type === "operation_abort" ? event.operationId !== pending : "runId" in event && event.runId !== undefined && event.runId !== pending));
    expect(foreign.map(({ event }) => ({ type: event.type, of: event.type === "operation_abort" ? event.operationId : first }))).toEqual([]);
  });
});
