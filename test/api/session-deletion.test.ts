import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { indexed, suspendedRun } from "./deferred-helpers.ts";
import { eventually } from "./webhooks-helpers.ts";

// Issue 35 item 3 (API.md "Data lifecycle"): a session's deletion removes its rows elsewhere too.

describe("issue 35: DELETE /v1/sessions/{sid} removes the session's DeferredIndex rows", () => {
  it("a deleted session's suspended run leaves its shard before the DELETE answers", async () => {
    const run = await suspendedRun("deldix");
    await eventually(async () => ((await indexed(run.shard, run.operationId)) ? true : undefined), "the registration");
    const deleted = await call(`/v1/sessions/${run.sid}`, { method: "DELETE", token: run.key });
    expect(deleted.status).toBe(204);
    expect(await indexed(run.shard, run.operationId)).toBe(false);
    // A retry (after a partial failure, say) is still safe: 404, nothing left.
    expect((await call(`/v1/sessions/${run.sid}`, { method: "DELETE", token: run.key })).status).toBe(404);
  });
});
