import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import type { CreatedSession } from "../../schema/session.ts";
import { call, newTenant, json } from "./helpers.ts";
import { ARGS_SCHEMA, settle, webhook } from "./tool-api-helpers.ts";

// docs/agents.md: after `PATCH /v1/sessions/{sid} { agent: "<id>@2" }` each lane's next operation
// runs on version 2, and one already running finishes with the model and settings it started with
// (its record names version 1). Tools are the session's: the move replaces their definitions at
// once, so a call that running operation makes after the move uses version 2's definition (its
// URL), while its context names the version the run was accepted under.

const SCRIPT = { provider: "scripted", modelId: "script" };

describe("a run that spans a move to another agent version", () => {
  it("the running operation's later http call uses the new version's definition; its context names the version it was accepted under", async () => {
    const v1Hook = webhook("rvt_move_v1");
    const v2Hook = webhook("rvt_move_v2");
    const tenant = await newTenant("rvt_move");
    await json(
      await call("/v1/agents", {
        token: tenant.key,
        body: {
          id: "support",
          model: SCRIPT,
          tools: {
            lookup: { kind: "http", description: "Looks up an order", parameters: ARGS_SCHEMA, url: v1Hook.hookUrl("echo") },
            ask_user: { kind: "client", description: "Asks the user", parameters: ARGS_SCHEMA },
          },
        },
      }),
      201,
    );
    const session = await json<CreatedSession>(await call("/v1/sessions", { token: tenant.key, body: { agent: "support" } }), 201);
    const secret = session.toolSecrets?.lookup ?? "";
    // Both endpoints verify with the session's secret of `lookup` (a move keeps it).
    await v1Hook.trust("echo", secret);
    await v2Hook.trust("echo", secret);
    await runInDurableObject(env.SESSIONS.getByName(`${tenant.tenantId}:${session.id}`), (instance: SessionObject) =>
      appendScriptSteps(instance.session(), [
        { toolCalls: [{ name: "ask_user", arguments: { question: "which order?" } }] },
        { toolCalls: [{ name: "lookup", arguments: { question: "order 7" } }] },
        { text: "done" },
      ]),
    );
    const lanePath = `/v1/sessions/${session.id}/lanes/main`;
    const running = (await json<{ operationId: string }>(await call(`${lanePath}/operations`, { token: tenant.key, body: { kind: "prompt", prompt: "go" } }), 202)).operationId;
    let waiting: string | undefined;
    for (let i = 0; i < 400 && waiting === undefined; i++) {
      const { snapshot } = await json<{ snapshot: LaneSnapshot }>(await call(`${lanePath}/snapshot`, { token: tenant.key }), 200);
      waiting = snapshot.operation?.runningTools.find((row) => row.toolName === "ask_user")?.toolCallId;
      if (waiting === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    if (waiting === undefined) throw new Error("the client call never showed up");

    // Version 2 moves `lookup` to another endpoint; the session moves while the run waits.
    await json(await call("/v1/agents/support", { method: "PATCH", token: tenant.key, body: { tools: { lookup: { url: v2Hook.hookUrl("echo") } } } }), 200);
    const moved = await json<CreatedSession>(await call(`/v1/sessions/${session.id}`, { method: "PATCH", token: tenant.key, body: { agent: "support@2" } }), 200);
    expect(moved.agent).toEqual({ id: "support", version: 2 });

    expect((await call(`${lanePath}/operations/${running}/tool-results/${waiting}`, { token: tenant.key, body: { content: [{ type: "text", text: "order 7" }] } })).status).toBe(202);
    const record = await settle({ key: tenant.key, lanePath }, running);
    expect(record).toMatchObject({ status: "completed", agent: { id: "support", version: 1 } });

    const v1Calls = await v1Hook.received();
    const v2Calls = await v2Hook.received();
    const contextOf = (body: unknown): unknown => (typeof body === "object" && body !== null && "context" in body ? body.context : undefined);
    expect(v1Calls).toHaveLength(0);
    expect(v2Calls.map((received) => contextOf(received.body))).toEqual([expect.objectContaining({ agent: { id: "support", version: 1 } })]);
  });
});
