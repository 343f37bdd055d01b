import { describe, expect, it } from "vitest";
import type { LaneExecutionInfo } from "../../schema/lane.ts";
import { call, errorCode, newTenant } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// A lane's active tools are a set: every request declares one tool per active name, and providers
// refuse a name declared twice. A repeated name is refused (400), wherever active tools are given.

describe("active tools name each tool once", () => {
  it("PATCH …/config and PUT …/lanes/{lane} with a repeated tool name are 400, and nothing changes", async () => {
    const setup = await laneSetup("rdat");
    expect((await call(`${setup.sessionPath}/tools/current_time`, { method: "PUT", body: { kind: "builtin" }, token: setup.key })).status).toBe(201);
    const patched = await call(`${setup.lanePath}/config`, { method: "PATCH", body: { activeTools: ["current_time", "current_time"] }, token: setup.key });
    expect(patched.status).toBe(400);
    expect(await errorCode(patched)).toBe("ValidationFailed");
    const lane = await (await call(setup.lanePath, { token: setup.key })).json<LaneExecutionInfo>();
    expect(lane.configuration.activeToolNames).toEqual([]);
    const created = await call(`${setup.sessionPath}/lanes/other`, { method: "PUT", body: { activeTools: ["current_time", "current_time"] }, token: setup.key });
    expect(created.status).toBe(400);
    expect((await call(`${setup.sessionPath}/lanes/other`, { token: setup.key })).status).toBe(404);
    expect((await call(`${setup.lanePath}/config`, { method: "PATCH", body: { activeTools: ["current_time"] }, token: setup.key })).status).toBe(200);
  });

  it("an agent's activeTools with a repeated name is 400, created or patched", async () => {
    const { key } = await newTenant("rdat_agent");
    const tools = { current_time: { kind: "builtin" } };
    expect(await errorCode(await call("/v1/agents", { token: key, body: { id: "twice", tools, activeTools: ["current_time", "current_time"] } }))).toBe("ValidationFailed");
    expect((await call("/v1/agents", { token: key, body: { id: "once", tools, activeTools: ["current_time"] } })).status).toBe(201);
    const patched = await call("/v1/agents/once", { method: "PATCH", token: key, body: { activeTools: ["current_time", "current_time"] } });
    expect(patched.status).toBe(400);
  });
});
