import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { call } from "./helpers.ts";
import { objectOf } from "./session-helpers.ts";
import { parkedOnClientTool } from "./tool-api-helpers.ts";

// docs/reliability.md: "an accepted abort is durable: the operation ends `aborted` even if the
// process dies right after the abort was answered." A killed object comes back by itself only
// through its alarm, so the marker's commit arms the safety net (as an acceptance and a posted
// client-tool result do): an operation resting in a durable wait with no alarm of its own (a
// client tool call, a suspended deferred run) is reconciled after a kill all the same.

describe("an answered abort leaves a wake-up behind", () => {
  it("after the abort of a run parked on a client tool is answered, an alarm covers its reconciliation", async () => {
    const { setup, operationId } = await parkedOnClientTool("rvw_client", "never");
    const stub = objectOf(setup.tenantId, setup.sid);
    // The reconciliation pass is held after its first commit (the cancelled call staged), as a
    // process that dies there would leave it.
    await runInDurableObject(stub, async (instance: SessionObject) => {
      (await instance.harness()).events.on("tool_end", () => new Promise<void>(() => {}));
    });
    const aborted = await call(`${setup.lanePath}/operations/${operationId}/abort`, { method: "POST", token: setup.key });
    expect(aborted.status).toBe(200);
    expect(await aborted.json()).toMatchObject({ operationId, newlyRequested: true });
    const before = await runInDurableObject(stub, async (instance: SessionObject, state) => {
      const lane = (await instance.harness()).getLane("main");
      return { control: lane?.state.operation?.state.control.status, alarm: await state.storage.getAlarm() };
    });
    await abortAllDurableObjects();
    // The operation is still open, aborting: only an alarm brings a killed object back by itself.
    expect(before.control).toBe("cancel_requested");
    expect(before.alarm).not.toBeNull();
  });
});
