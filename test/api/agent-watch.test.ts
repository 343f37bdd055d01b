import { describe, expect, it } from "vitest";
import type { LaneSnapshot } from "../../schema/lane.ts";
import type { CreatedSession } from "../../schema/session.ts";
import { call, newTenant, json } from "./helpers.ts";
import { connect, events, expectSnapshot, fold, isRunEnd } from "./watch-helpers.ts";

// A watcher of a session bound to an agent version folds the same record as the server keeps: the
// terminal event names the agent version the operation ran under (docs/api-watch.md), so the
// fold's lastResult equals GET …/snapshot's (the Inspector shows it from its fold).

describe("watching a session bound to an agent version", () => {
  it("run_end names the agent version, and the fold equals the snapshot", async () => {
    const tenant = await newTenant("agent_watch");
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "support", model: { provider: "scripted", modelId: "echo" } } }), 201);
    const session = await json<CreatedSession>(await call("/v1/sessions", { token: tenant.key, body: { agent: "support" } }), 201);
    const lanePath = `/v1/sessions/${session.id}/lanes/main`;
    const client = await connect(`${lanePath}/watch`, tenant.key);
    const start = await expectSnapshot<LaneSnapshot>(client);
    const { operationId } = await json<{ operationId: string }>(await call(`${lanePath}/operations`, { token: tenant.key, body: { kind: "prompt", prompt: "hello" } }), 202);
    const received = events(await client.until(isRunEnd(operationId)));
    const runEnd = received.at(-1)?.event;
    expect(runEnd).toMatchObject({ type: "run_end", runId: operationId, agent: { id: "support", version: 1 } });
    const served = await json<{ seq: number; snapshot: LaneSnapshot }>(await call(`${lanePath}/snapshot`, { token: tenant.key }), 200);
    expect(served.snapshot.lastResult?.agent).toEqual({ id: "support", version: 1 });
    expect(fold(start.snapshot, received.map((row) => row.event))).toEqual(served.snapshot);
    client.ws.close();
  });
});
