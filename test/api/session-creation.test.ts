import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { call, newTenant } from "./helpers.ts";
import { expectError, objectOf } from "./session-helpers.ts";

// POST /v1/sessions creates the session with its name, settings and resources in one atomic step.

describe("POST /v1/sessions", () => {
  it("stores the resources given at creation: a template run uses them", async () => {
    const { key } = await newTenant("createres");
    const resources = { skills: { review: { content: "Check the diff." } }, promptTemplates: { sum: { content: "Summarize $1" } } };
    const created = await call("/v1/sessions", { body: { id: "r", name: "with resources", resources }, token: key });
    expect(created.status).toBe(201);
    expect((await call("/v1/sessions/r/lanes/main", { method: "PUT", body: {}, token: key })).status).toBe(201);
    const run = await call("/v1/sessions/r/lanes/main/operations", { body: { kind: "prompt_template", name: "sum", args: ["the plan"] }, token: key });
    expect(run.status).toBe(202);
    const { operationId } = await run.json<{ operationId: string }>();
    const settled = await (await call(`/v1/sessions/r/lanes/main/operations/${operationId}?wait=10`, { token: key })).json<{ state: string }>();
    expect(settled.state).toBe("settled");
    const snapshot = await (await call("/v1/sessions/r/lanes/main/snapshot", { token: key })).json<{ snapshot: { transcript: { message?: { content: unknown } }[] } }>();
    expect(snapshot.snapshot.transcript[0]?.message?.content).toBe("Summarize the plan");
    const skill = await call("/v1/sessions/r/lanes/main/operations", { body: { kind: "skill", name: "review" }, token: key });
    expect(skill.status).toBe(202);
  });

  it("writes the session's name, settings and resources as its first commit, before answering", async () => {
    const { tenantId, key } = await newTenant("createone");
    const body = { id: "one", name: "atomic", settings: { systemPrompt: "Be brief." }, resources: { skills: {}, promptTemplates: { t: { content: "x" } } } };
    const created = await call("/v1/sessions", { body, token: key });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ id: "one", name: "atomic", settings: { systemPrompt: "Be brief." } });
    // One commit, the session's first: the three values hold its first three seqs.
    const seqs = await runInDurableObject(objectOf(tenantId, "one"), (_instance: SessionObject, state) =>
      state.storage.sql.exec<{ namespace: string; seq: number }>("SELECT namespace, seq FROM vals ORDER BY namespace").toArray(),
    );
    expect(seqs.map((row) => row.namespace)).toEqual(["pi.resources", "pi.session.name", "pi.settings"]);
    expect(seqs.map((row) => row.seq).sort()).toEqual([1, 2, 3]);
  });

  it("a refused creation (invalid resources) creates nothing", async () => {
    const { tenantId, key } = await newTenant("createbad");
    const resources = { skills: { "bad name": { content: "x" } }, promptTemplates: {} };
    await expectError(await call("/v1/sessions", { body: { id: "nope", resources }, token: key }), 400, "ValidationFailed");
    const tables = await runInDurableObject(objectOf(tenantId, "nope"), (_instance: SessionObject, state) =>
      state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'meta'").toArray(),
    );
    expect(tables).toEqual([]);
    expect((await (await call("/v1/sessions", { token: key })).json<{ items: unknown[] }>()).items).toEqual([]);
  });

  it("refuses the id `import`, whose path is the import route, for a creation, a fork and an import (400, nothing created)", async () => {
    const { key } = await newTenant("createimport");
    await expectError(await call("/v1/sessions", { body: { id: "import" }, token: key }), 400, "ValidationFailed");
    expect((await call("/v1/sessions", { body: { id: "source" }, token: key })).status).toBe(201);
    await expectError(await call("/v1/sessions/source/fork", { body: { scope: "tree", id: "import" }, token: key }), 400, "ValidationFailed");
    await expectError(await call("/v1/imports", { body: { id: "import" }, token: key }), 400, "ValidationFailed");
    expect((await (await call("/v1/sessions", { token: key })).json<{ items: { id: string }[] }>()).items.map((item) => item.id)).toEqual(["source"]);
  });
});
