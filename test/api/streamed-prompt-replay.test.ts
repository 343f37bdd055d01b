import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";

// QUALITY R5 on the streamed variant of POST …/prompt: docs/api-watch.md "Streaming over
// HTTP" says "A repeat with the same Idempotency-Key answers `202 { operationId }`". The generic
// suite (route-idempotency.test.ts) sends the JSON variant only. A streamed prompt handed to the
// running operation (`ifBusy: "steer"`) streams just its `result` (200 text/event-stream); its
// replay must still be a readable answer: the documented 202 JSON, or the same stream.

async function streamed(lanePath: string, key: string, body: object, idempotencyKey: string): Promise<Response> {
  return exports.default.fetch(`http://api.test${lanePath}/prompt`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "text/event-stream", "idempotency-key": idempotencyKey },
    body: JSON.stringify(body),
  });
}

describe("POST …/prompt streamed, handed to the running run, repeated with its Idempotency-Key", () => {
  it("the replay is the documented 202 { operationId } JSON (not the first answer's SSE text labelled application/json)", async () => {
    const setup = await laneSetup("sp_replay");
    await useScript(setup, [slowStep(400), { text: "steered" }]);
    const running = await (await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "first" }, token: setup.key })).json<{ operationId: string }>();
    await untilAt(setup, "assistant.effect_pending");
    const body = { prompt: "this way", ifBusy: "steer" };
    const first = await streamed(setup.lanePath, setup.key, body, "steer-once");
    expect(first.status).toBe(200);
    expect(first.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const firstText = await first.text();
    expect(firstText).toMatch(/^event: result\n/);

    const again = await streamed(setup.lanePath, setup.key, body, "steer-once");
    const againText = await again.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(againText);
    } catch {
      parsed = `not JSON: ${againText.slice(0, 120)}`;
    }
    // Documented: 202 with a JSON body naming the operation, marked as a replay.
    expect({ status: again.status, contentType: again.headers.get("content-type"), replayed: again.headers.get("idempotency-replayed"), body: parsed }).toMatchObject({
      status: 202,
      contentType: expect.stringMatching(/^application\/json/),
      replayed: "true",
      body: { operationId: running.operationId },
    });
    await call(`${setup.lanePath}/abort`, { method: "POST", token: setup.key });
  });
});
