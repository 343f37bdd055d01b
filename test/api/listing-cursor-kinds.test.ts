import { describe, expect, it } from "vitest";
import { call, json, newTenant } from "./helpers.ts";

// docs/api-sessions.md "Paging": "A cursor is exclusive; one that is not from the same listing is
// 400 `ValidationFailed` (`cursor: Invalid cursor`)." The listings paged by time and id (sessions,
// agents, an agent's versions, tenant tools…) each name themselves in their cursors, so a cursor of
// one is refused by another instead of paging after a position of some other order.

type Page = { items: { id: string }[]; nextCursor: string | null };

async function refused(path: string, key: string): Promise<void> {
  const response = await call(path, { token: key });
  const body = await response.text();
  expect(response.status, body).toBe(400);
  expect(body).toContain("cursor: Invalid cursor");
}

describe("a cursor from another listing", () => {
  it("GET /v1/sessions refuses a cursor of GET /v1/agents, and GET /v1/agents one of GET /v1/sessions; each takes its own", async () => {
    const { key } = await newTenant("cur_kinds");
    for (const id of ["a1", "a2"]) await json(await call("/v1/agents", { body: { id }, token: key }), 201);
    for (const id of ["s1", "s2"]) await json(await call("/v1/sessions", { body: { id }, token: key }), 201);
    const agents = await json<Page>(await call("/v1/agents?limit=1", { token: key }), 200);
    const sessions = await json<Page>(await call("/v1/sessions?limit=1", { token: key }), 200);
    expect(agents.nextCursor).not.toBeNull();
    expect(sessions.nextCursor).not.toBeNull();
    await refused(`/v1/sessions?cursor=${agents.nextCursor}`, key);
    await refused(`/v1/sessions?order=desc&cursor=${agents.nextCursor}`, key);
    await refused(`/v1/agents?cursor=${sessions.nextCursor}`, key);
    await refused(`/v1/agents/a1/versions?cursor=${agents.nextCursor}`, key);
    expect((await json<Page>(await call(`/v1/agents?cursor=${agents.nextCursor}`, { token: key }), 200)).items.map((agent) => agent.id)).toEqual(["a2"]);
    expect((await json<Page>(await call(`/v1/sessions?cursor=${sessions.nextCursor}`, { token: key }), 200)).items.map((session) => session.id)).toEqual(["s2"]);
  });
});
