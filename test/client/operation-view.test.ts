import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient } from "../../client/index.ts";
import { newTenant } from "../api/helpers.ts";

// The SDK types an operation's view as the server answers it (schema/lane-answers.ts): a suspended
// run's `deferred` is `{ handle, poll }`, not the bare handle.

describe("client SDK: operation views", { timeout: 30_000 }, () => {
  it("reads a suspended run's deferred handle and poll count from the operation's view", async () => {
    const tenant = await newTenant("sdk_view");
    const client = createClient({ baseUrl: "http://api.test/", key: tenant.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const session = await client.sessions.create({ name: "deferred view" });
    await client.lanes.put(session.id, "main", { model: { provider: "scripted", modelId: "script" } });
    await client.lists.append(session.id, "scripted", "steps", { deferred: { ready: { text: "later" } } });
    const outcome = await client.prompt(session.id, "main", "take your time", { wait: 30 });
    if (outcome.state !== "suspended") throw new Error(`expected a suspended run, got ${outcome.state}`);
    const view = await client.operations.get(session.id, "main", outcome.operationId);
    if (view.state !== "active") throw new Error("expected the run to be active");
    expect({ id: view.deferred?.handle.id, poll: view.deferred?.poll }).toEqual({ id: outcome.deferred.id, poll: 0 });
  });
});
