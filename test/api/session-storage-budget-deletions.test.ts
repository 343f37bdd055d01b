import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { STORAGE_BUDGET_BYTES } from "../../durable-objects/sql/storage-budget.ts";
import { call } from "./helpers.ts";
import { objectOf, tenantWithSession } from "./session-helpers.ts";

// Past the storage budget, only writes that grow the session are refused (docs/api-sessions.md
// "Limits": "reads, deletions and the export go on"): deleting a label, a skill or a template
// answers 204, so a full session can shed what it holds.

async function full(tenantId: string, sid: string, on: boolean): Promise<void> {
  await runInDurableObject(objectOf(tenantId, sid), (_instance: object, state) => {
    if (on) Reflect.defineProperty(state.storage.sql, "databaseSize", { configurable: true, get: () => STORAGE_BUDGET_BYTES + 1 });
    else Reflect.deleteProperty(state.storage.sql, "databaseSize");
  });
}

describe("deletions on a session past its storage budget", () => {
  it("DELETE of an entry's label answers 204 and removes it", async () => {
    const { tenantId, sid, key, base } = await tenantWithSession("sbd_label");
    expect((await call(`${base}/branches`, { body: { name: "notes", at: null }, token: key })).status).toBe(201);
    const appended = await call(`${base}/branches/notes/entries`, { body: { customType: "note", data: 1 }, token: key });
    const { entryId } = await appended.json<{ entryId: string }>();
    expect((await call(`${base}/entries/${entryId}/label`, { method: "PUT", body: { label: "keep?" }, token: key })).status).toBe(200);
    await full(tenantId, sid, true);
    let status: number;
    let label: unknown;
    try {
      const deleted = await call(`${base}/entries/${entryId}/label`, { method: "DELETE", token: key });
      status = deleted.status;
      label = (await (await call(`${base}/entries/${entryId}/label`, { token: key })).json<{ label: unknown }>()).label;
    } finally {
      await full(tenantId, sid, false);
    }
    expect({ status, label }).toEqual({ status: 204, label: null });
  });

  it("DELETE of a skill and of a prompt template answer 204", async () => {
    const { tenantId, sid, key, base } = await tenantWithSession("sbd_res");
    expect((await call(`${base}/skills/big`, { method: "PUT", body: { content: "x".repeat(1000) }, token: key })).status).toBe(200);
    expect((await call(`${base}/templates/big`, { method: "PUT", body: { content: "y".repeat(1000) }, token: key })).status).toBe(200);
    await full(tenantId, sid, true);
    const answers: { skill: number; template: number; body: string } = { skill: 0, template: 0, body: "" };
    try {
      const skill = await call(`${base}/skills/big`, { method: "DELETE", token: key });
      answers.skill = skill.status;
      answers.body = await skill.text();
      answers.template = (await call(`${base}/templates/big`, { method: "DELETE", token: key })).status;
    } finally {
      await full(tenantId, sid, false);
    }
    expect(answers, answers.body).toMatchObject({ skill: 204, template: 204 });
  });
});
