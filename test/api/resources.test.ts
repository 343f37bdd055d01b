import { describe, expect, it } from "vitest";
import { call, errorCode, newTenant } from "./helpers.ts";

// Skills and prompt templates as session resources (ARCHITECTURE D6), used by skill and
// prompt_template runs.

describe("skills and templates", () => {
  it("a skill run and a template run use what was PUT, and a deleted one is unknown", async () => {
    const { key } = await newTenant("res");
    expect((await call("/v1/sessions", { body: { id: "r" }, token: key })).status).toBe(201);
    expect((await call("/v1/sessions/r/lanes/main", { method: "PUT", body: {}, token: key })).status).toBe(201);
    const skill = await call("/v1/sessions/r/skills/review", { method: "PUT", body: { content: "Check the diff." }, token: key });
    expect(skill.status).toBe(200);
    expect(await skill.json()).toEqual({ name: "review" });
    const template = await call("/v1/sessions/r/templates/sum", { method: "PUT", body: { content: "Summarize $1" }, token: key });
    expect(template.status).toBe(200);
    const run = await call("/v1/sessions/r/lanes/main/operations", { body: { kind: "prompt_template", name: "sum", args: ["the plan"] }, token: key });
    expect(run.status).toBe(202);
    const { operationId } = await run.json<{ operationId: string }>();
    const settled = await (await call(`/v1/sessions/r/lanes/main/operations/${operationId}?wait=10`, { token: key })).json<{ state: string }>();
    expect(settled.state).toBe("settled");
    const snapshot = await (await call("/v1/sessions/r/lanes/main/snapshot", { token: key })).json<{ snapshot: { transcript: { type: string; message?: { content: unknown } }[] } }>();
    expect(snapshot.snapshot.transcript[0]?.message?.content).toBe("Summarize the plan");
    expect((await call("/v1/sessions/r/skills/review", { method: "DELETE", token: key })).status).toBe(204);
    const unknown = await call("/v1/sessions/r/lanes/main/operations", { body: { kind: "skill", name: "review" }, token: key });
    expect(unknown.status).toBe(404);
    expect(await errorCode(unknown)).toBe("UnknownSkill");
  });

  it("validates names and bodies, and hides other tenants' sessions", async () => {
    const alice = await newTenant("res2");
    const bob = await newTenant("res3");
    expect((await call("/v1/sessions", { body: { id: "s" }, token: alice.key })).status).toBe(201);
    const bad = [
      await call("/v1/sessions/s/skills/has space", { method: "PUT", body: { content: "x" }, token: alice.key }),
      await call("/v1/sessions/s/skills/ok", { method: "PUT", body: { nope: 1 }, token: alice.key }),
      await call("/v1/sessions/s/templates/ok", { method: "PUT", body: [], token: alice.key }),
    ];
    expect(bad.map((r) => r.status)).toEqual([400, 400, 400]);
    expect((await call("/v1/sessions/s/skills/ok", { method: "PUT", body: { content: "x" }, token: bob.key })).status).toBe(404);
    expect((await call("/v1/sessions/s/skills/ok", { method: "PUT", body: { content: "x" } })).status).toBe(401);
  });
});
