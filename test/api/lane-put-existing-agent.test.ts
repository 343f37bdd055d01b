import { describe, expect, it } from "vitest";
import type { LaneExecutionInfo } from "../../schema/lane.ts";
import type { CreatedSession } from "../../schema/session.ts";
import { call, json, newTenant } from "./helpers.ts";
import { ARGS_SCHEMA } from "./tool-api-helpers.ts";

// docs/api-lanes.md: `PUT /lanes/{lane}` answers "201 created / 200 existing"; it "applies
// `createAt` and the configuration only when it creates the lane (an existing lane keeps its own
// …), but refuses unknown names either way" — the names the request gives. Reference §2.4: an
// existing complete lane is returned with no commit and no event. A bare `PUT` (no body) of an
// existing lane in a session bound to an agent version was refused 422 UnknownTool, because the
// agent version's lane configuration (which applies only to new lanes) was checked against the
// session's current tools even though the lane exists and the request named nothing.

const SCRIPT = { provider: "scripted", modelId: "script" };

describe("PUT of an existing lane in a session bound to an agent", () => {
  it("answers 200 with the lane when the request names nothing, even if the agent's tool is gone from the session", async () => {
    const tenant = await newTenant("rl_put");
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "ag", model: SCRIPT, tools: { lookup: { kind: "client", description: "Looks up", parameters: ARGS_SCHEMA } } } }), 201);
    const created = await json<CreatedSession>(await call("/v1/sessions", { token: tenant.key, body: { agent: "ag" } }), 201);
    const lanePath = `/v1/sessions/${created.id}/lanes/main`;
    // The lane stops using the tool, then the session's copy of it is deleted (allowed: no lane has it active).
    await json(await call(`${lanePath}/config`, { method: "PATCH", body: { activeTools: [] }, token: tenant.key }), 200);
    expect((await call(`/v1/sessions/${created.id}/tools/lookup`, { method: "DELETE", token: tenant.key })).status).toBe(204);

    // A get-or-create of the existing lane, naming nothing: 200, the lane as it is.
    const put = await call(lanePath, { method: "PUT", token: tenant.key });
    const text = await put.text();
    expect(put.status, text).toBe(200);
    expect(JSON.parse(text)).toMatchObject({ name: "main", operation: null });
    const lane = await json<LaneExecutionInfo>(await call(lanePath, { token: tenant.key }), 200);
    expect(lane.configuration.activeToolNames).toEqual([]);
  });
});
