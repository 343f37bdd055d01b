import { describe, expect, it } from "vitest";
import type { LaneExecutionInfo } from "../../schema/lane.ts";
import { call, errorCode, json } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// docs/api-lanes.md: `POST /lanes/{lane}/queue` → "422 InvalidMessage for an empty message", and
// for `POST /lanes/{lane}/entries`: "An entry is stored as given: an empty message is appended,
// unlike a prompt or a queued message". A queued *message object* with no content (a user message
// whose content is "" or []) was admitted 201 and later placed into the run's context as an empty
// user turn; only the string form `message: ""` was refused.

describe("POST …/queue with an empty message object", () => {
  for (const [label, message] of [
    ["empty string content", { role: "user", content: "", timestamp: 1 }],
    ["empty content array", { role: "user", content: [], timestamp: 1 }],
  ] as const) {
    it(`refuses a user message with ${label}: 422 InvalidMessage, nothing queued`, async () => {
      const setup = await laneSetup("rl_qempty");
      const queued = await call(`${setup.lanePath}/queue`, { body: { kind: "steer", message }, token: setup.key });
      expect(queued.status).toBe(422);
      expect(await errorCode(queued)).toBe("InvalidMessage");
      const lane = await json<LaneExecutionInfo>(await call(setup.lanePath, { token: setup.key }), 200);
      expect(lane.queues).toEqual([]);
    });
  }
});

describe("POST …/prompt with an empty message object", () => {
  it("is refused 422 InvalidMessage like the empty string, and nothing runs", async () => {
    const setup = await laneSetup("rl_pempty");
    const refused = await call(`${setup.lanePath}/prompt`, { body: { prompt: { role: "user", content: [] } }, token: setup.key });
    expect(refused.status).toBe(422);
    expect(await errorCode(refused)).toBe("InvalidMessage");
    const lane = await json<LaneExecutionInfo>(await call(setup.lanePath, { token: setup.key }), 200);
    expect(lane.current).toBeNull();
    expect(lane.lastOperationId).toBeNull();
  });
});
