import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { PromptAnswer } from "../../schema/lane-answers.ts";
import { sseReader, type SseItem } from "../helpers/sse-reader.ts";
import { call } from "./helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";
import { eventsOf } from "./sse-helpers.ts";

// Spec "Streaming over HTTP": `POST …/prompt` with `Accept: text/event-stream` (or `stream: true`)
// answers the run's events as SSE from its acceptance to its settlement, ending with a `result`
// event that carries the JSON answer's body.

type Setup = Awaited<ReturnType<typeof laneSetup>>;

async function streamedPrompt(setup: Setup, body: object, headers: Record<string, string> = { accept: "text/event-stream" }) {
  const response = await exports.default.fetch(`http://api.test${setup.lanePath}/prompt`, {
    method: "POST",
    headers: { authorization: `Bearer ${setup.key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  expect(response.status, response.status === 200 ? "" : await response.clone().text()).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  if (!response.body) throw new Error("no body");
  const reader = sseReader(response.body);
  const items = await reader.until((item) => item.event === "result");
  const rest = await reader.ended();
  return { response, items, rest };
}

const resultOf = (items: SseItem[]): PromptAnswer => JSON.parse(items.at(-1)?.data ?? "null");

describe("POST …/prompt as Server-Sent Events", () => {
  it("streams the run's events and ends with the answer the JSON route gives", async () => {
    const setup = await laneSetup("ssep");
    const { items, rest } = await streamedPrompt(setup, { prompt: "stream me" });
    const events = eventsOf(items).map((item) => item.event);
    expect(events[0]).toMatchObject({ type: "run_start" });
    expect(events.map((event) => event.type)).toContain("entry_added");
    expect(events.at(-1)).toMatchObject({ type: "run_end", status: "completed" });
    expect(items.some((item) => item.event === "snapshot")).toBe(false);
    const result = resultOf(items);
    expect(result).toMatchObject({ kind: "run", status: "completed", messages: [expect.objectContaining({ role: "user" }), expect.objectContaining({ role: "assistant" })] });
    // The stream ends after its result; the record is the one GET …/operations answers.
    expect(rest.filter((item) => item.event !== "comment" && item.event !== "error")).toEqual([]);
    const view = await (await call(`${setup.lanePath}/operations/${result.operationId}`, { token: setup.key })).json();
    expect(view).toMatchObject({ state: "settled", result: { operationId: result.operationId, status: "completed", tipId: result.tipId } });
  });

  it("`stream: true` in the body streams too; a repeated Idempotency-Key answers 202 with the run it started", async () => {
    const setup = await laneSetup("ssepb");
    const headers = { accept: "application/json", "idempotency-key": "stream-once" };
    const { items } = await streamedPrompt(setup, { prompt: "by the body", stream: true }, headers);
    const result = resultOf(items);
    expect(result.status).toBe("completed");
    const again = await call(`${setup.lanePath}/prompt`, { body: { prompt: "by the body", stream: true }, token: setup.key, headers: { "idempotency-key": "stream-once" } });
    expect(again.status).toBe(202);
    expect(await again.json()).toEqual({ operationId: result.operationId });
  });

  it("a prompt handed to a running operation (ifBusy steer) streams only its result; a refused prompt is a JSON 409", async () => {
    const setup = await laneSetup("sseps");
    await useScript(setup, [slowStep(), { text: "steered" }]);
    const running = await (await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "first" }, token: setup.key })).json<{ operationId: string }>();
    await untilAt(setup, "assistant.effect_pending");
    const { items } = await streamedPrompt(setup, { prompt: "this way", ifBusy: "steer" });
    expect(items.map((item) => item.event)).toEqual(["result"]);
    expect(JSON.parse(items[0]?.data ?? "null")).toMatchObject({ operationId: running.operationId, queued: "steer" });
    const refused = await exports.default.fetch(`http://api.test${setup.lanePath}/prompt`, {
      method: "POST",
      headers: { authorization: `Bearer ${setup.key}`, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ prompt: "busy" }),
    });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ error: { code: "LaneBusy" } });
  });
});
