import { describe, expect, it } from "vitest";
import { call, newTenant } from "./helpers.ts";
import { exportText, newSessionId, send } from "./data-helpers.ts";

// An export carries every branch of the session by name, and an import brings them all back
// (docs/data.md). A branch (or lane) may be named anything a branch name allows, including names a
// JavaScript object treats specially (`constructor`, `prototype`).

describe("import of branches with any valid name", () => {
  it("a lane and branch named constructor or prototype survive export and import", async () => {
    const { key } = await newTenant("imp_names");
    const sid = newSessionId("imp_names");
    expect((await call("/v1/sessions", { body: { id: sid }, token: key })).status).toBe(201);
    for (const lane of ["constructor", "prototype"]) {
      expect((await call(`/v1/sessions/${sid}/lanes/${lane}`, { method: "PUT", token: key })).status).toBe(201);
      expect((await call(`/v1/sessions/${sid}/lanes/${lane}/entries`, { token: key, body: { customType: "note", data: { on: lane } } })).status).toBe(201);
    }
    const text = await exportText(key, sid);
    const copy = newSessionId("imp_names_copy");
    const imported = await send(`/v1/sessions/import?id=${copy}`, { body: text, token: key });
    expect(imported.status, await imported.clone().text()).toBe(201);
    const lanes = await (await call(`/v1/sessions/${copy}/lanes`, { token: key })).json<{ items: { name: string }[] }>();
    expect(lanes.items.map((lane) => lane.name).sort()).toEqual(["constructor", "prototype"]);
    const branches = await (await call(`/v1/sessions/${copy}/branches`, { token: key })).json<{ items: { name: string; tipId: string | null }[] }>();
    const tips = Object.fromEntries(branches.items.map((branch) => [branch.name, branch.tipId]));
    expect(tips.constructor).toEqual(expect.any(String));
    expect(tips.prototype).toEqual(expect.any(String));
  });
});
