import { describe, expect, it } from "vitest";
import type { CreatedSession } from "../../schema/session.ts";
import { call, newTenant } from "./helpers.ts";

// "A refused PATCH writes none of its parts" (docs/api-sessions.md, PATCH /sessions/{sid}); "a
// merge that would leave more than 16 keys is 422 LimitExceeded ... with nothing written". The
// settings (or a move) and the metadata are one commit, the bound checked on the session's line.

describe("PATCH of a session with metadata, refused by its bound", () => {
  it("a PATCH of settings and metadata refused 422 (16 keys) by a concurrent PATCH writes none of its settings", async () => {
    const { key } = await newTenant("rv_md_race");
    const fifteen = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`k${i}`, "v"]));
    expect((await call("/v1/sessions", { token: key, body: { id: "s_race", metadata: fifteen } })).status).toBe(201);
    // Two PATCHes each adding the 16th key: one of them must be refused, and the refused one must write nothing.
    const [a, b] = await Promise.all([
      call("/v1/sessions/s_race", { method: "PATCH", token: key, body: { settings: { systemPrompt: "written by A" }, metadata: { a: "1" } } }),
      call("/v1/sessions/s_race", { method: "PATCH", token: key, body: { metadata: { b: "1" } } }),
    ]);
    const session = await (await call("/v1/sessions/s_race", { token: key })).json<CreatedSession>();
    const statuses = { a: a.status, b: b.status };
    if (a.status === 422) {
      expect({ statuses, systemPrompt: session.settings.systemPrompt }, await a.text()).toEqual({ statuses, systemPrompt: null });
    } else {
      expect(b.status).toBe(422);
      expect(session.settings.systemPrompt).toBe("written by A");
    }
  });

  it("a move with metadata past 16 keys is 422 and moves nothing", async () => {
    const { key } = await newTenant("rv_md_move");
    expect((await call("/v1/agents", { token: key, body: { id: "helper", settings: { systemPrompt: "from the agent" } } })).status).toBe(201);
    const sixteen = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, "v"]));
    expect((await call("/v1/sessions", { token: key, body: { id: "s_move", metadata: sixteen } })).status).toBe(201);
    const refused = await call("/v1/sessions/s_move", { method: "PATCH", token: key, body: { agent: "helper", metadata: { extra: "1" } } });
    expect(refused.status).toBe(422);
    expect(await refused.json()).toMatchObject({ error: { code: "LimitExceeded" } });
    const session = await (await call("/v1/sessions/s_move", { token: key })).json<CreatedSession>();
    expect(session.agent).toBeUndefined();
    expect(session.settings.systemPrompt).toBeNull();
    const moved = await call("/v1/sessions/s_move", { method: "PATCH", token: key, body: { agent: "helper", metadata: { k0: null, extra: "1" } } });
    expect(moved.status).toBe(200);
    expect(await moved.json()).toMatchObject({ agent: { id: "helper", version: 1 }, metadata: { extra: "1" } });
    const listed = await (await call("/v1/sessions?metadata.extra=1", { token: key })).json<{ items: { id: string }[] }>();
    expect(listed.items.map((item) => item.id)).toEqual(["s_move"]);
  });
});
