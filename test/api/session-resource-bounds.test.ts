import { describe, expect, it } from "vitest";
import { call, errorCode } from "./helpers.ts";
import { exportText, newSessionId, send } from "./data-helpers.ts";
import { tenantWithSession } from "./session-helpers.ts";
import { RESOURCE_LIMITS } from "../../schema/settings.ts";

// A session's skills and prompt templates are stored as one value and exported on one line, which
// an import must take back: together they are bounded (RESOURCE_LIMITS: 100 of each, 4 MiB of
// descriptions and contents). A PUT beyond is 422 LimitExceeded and writes nothing; a body that
// brings more at once (a creation) is 400; a session at the bound exports and imports again.

const SKILL_CONTENT = "€".repeat(200_000); // 600,000 bytes of UTF-8: the largest skill there is

describe("a session's skills and prompt templates", { timeout: 300_000 }, () => {
  it("hold at most 4 MiB together: the PUT beyond is 422, and the session at its bound exports and imports again", async () => {
    const { key, sid, base } = await tenantWithSession("rbres");
    const fitting = Math.floor(RESOURCE_LIMITS.bytes / (3 * 200_000));
    for (let i = 0; i < fitting; i++) expect((await call(`${base}/skills/s${i}`, { method: "PUT", body: { content: SKILL_CONTENT }, token: key })).status, `skill ${i}`).toBe(200);
    const beyond = await call(`${base}/templates/t0`, { method: "PUT", body: { content: SKILL_CONTENT }, token: key });
    expect(beyond.status).toBe(422);
    expect(await errorCode(beyond)).toBe("LimitExceeded");
    // Replacing one within the bound, and removing one, still work at the bound.
    expect((await call(`${base}/skills/s0`, { method: "PUT", body: { content: "short now" }, token: key })).status).toBe(200);
    expect((await call(`${base}/skills/s1`, { method: "DELETE", token: key })).status).toBe(204);

    const text = await exportText(key, sid);
    const header = JSON.parse(text.slice(0, text.indexOf("\n"))) as { resources: { skills: Record<string, unknown>; promptTemplates: Record<string, unknown> } };
    expect(Object.keys(header.resources.promptTemplates)).toEqual([]);
    expect(Object.keys(header.resources.skills)).toHaveLength(fitting - 1);
    const imported = await send(`/v1/sessions/import?id=${newSessionId("rbres_copy")}`, { body: text, token: key });
    expect(imported.status, imported.status === 201 ? "" : await imported.text()).toBe(201);
  });

  it("are at most 100 of each: the 101st skill is 422; a creation bringing 101 is 400, and creates nothing", async () => {
    const { key, base } = await tenantWithSession("rbcount");
    for (let i = 0; i < RESOURCE_LIMITS.perKind; i++) expect((await call(`${base}/skills/k${i}`, { method: "PUT", body: { content: "x" }, token: key })).status).toBe(200);
    const beyond = await call(`${base}/skills/one-more`, { method: "PUT", body: { content: "x" }, token: key });
    expect(beyond.status).toBe(422);
    expect(await errorCode(beyond)).toBe("LimitExceeded");

    const skills = Object.fromEntries(Array.from({ length: RESOURCE_LIMITS.perKind + 1 }, (_, i) => [`k${i}`, { content: "x" }]));
    const created = await call("/v1/sessions", { body: { id: "rbcount_many", resources: { skills, promptTemplates: {} } }, token: key });
    expect(created.status).toBe(400);
    expect(await errorCode(created)).toBe("ValidationFailed");
    expect((await call("/v1/sessions/rbcount_many", { token: key })).status).toBe(404);
  });
});
