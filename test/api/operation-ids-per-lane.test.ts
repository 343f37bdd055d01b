import { describe, expect, it } from "vitest";
import { call, json, newTenant } from "./helpers.ts";

// An operation id taken from another lane of the same session. Operation routes are addressed
// `…/lanes/{lane}/operations/{opId}`, and browser tokens are scoped to lanes (docs/api-tenants.md
// "Browser tokens": a lane the token does not name is 403 TokenScope), so a lane answers its own
// operations only: a settled record keeps the lane it ran on (operation-codec.ts readResultOn).

async function twoLanesWithSettledRunOnA(prefix: string) {
  const { key } = await newTenant(prefix);
  const sid = `${prefix}_s`;
  const base = `/v1/sessions/${sid}`;
  await json(await call("/v1/sessions", { body: { id: sid }, token: key }), 201);
  await json(await call(`${base}/lanes/a`, { method: "PUT", body: {}, token: key }), 201);
  await json(await call(`${base}/lanes/b`, { method: "PUT", body: {}, token: key }), 201);
  const record = await json<{ operationId: string; status: string }>(await call(`${base}/lanes/a/prompt`, { body: { prompt: "secret text of lane a", wait: 10 }, token: key }), 200);
  expect(record.status).toBe("completed");
  return { key, sid, base, opA: record.operationId };
}

describe("operation ids are scoped to their lane", () => {
  it("GET …/lanes/b/operations/{id of a run on lane a} is 404 OperationMismatch, not lane a's record", async () => {
    const { key, base, opA } = await twoLanesWithSettledRunOnA("rvop1");
    // Sanity: lane a answers its own record.
    expect((await call(`${base}/lanes/a/operations/${opA}`, { token: key })).status).toBe(200);
    const viaB = await call(`${base}/lanes/b/operations/${opA}`, { token: key });
    const text = await viaB.text();
    expect({ status: viaB.status, body: text.slice(0, 200) }).toMatchObject({ status: 404 });
    expect(JSON.parse(text).error.code).toBe("OperationMismatch");
  });

  it("POST …/lanes/b/operations/{id of a run on lane a}/resume is 404 OperationMismatch", async () => {
    const { key, base, opA } = await twoLanesWithSettledRunOnA("rvop2");
    const viaB = await call(`${base}/lanes/b/operations/${opA}/resume`, { method: "POST", token: key });
    expect(viaB.status).toBe(404);
  });

  it("a browser token for lane b only cannot read the result of lane a's run through lane b's path", async () => {
    const { key, sid, base, opA } = await twoLanesWithSettledRunOnA("rvop3");
    const minted = await json<{ token: string }>(await call(`${base}/tokens`, { body: { scopes: ["prompt"], lanes: ["b"] }, token: key }), 201);
    // Lane a itself is refused to this token, as documented.
    expect((await call(`${base}/lanes/a/operations/${opA}`, { token: minted.token })).status).toBe(403);
    // Through lane b's path the same record must not be answered either.
    const viaB = await call(`/v1/sessions/${sid}/lanes/b/operations/${opA}`, { token: minted.token });
    const text = await viaB.text();
    expect(viaB.status, text.slice(0, 300)).toBe(404);
    expect(JSON.parse(text).error.code).toBe("OperationMismatch");
    expect(text).not.toMatch(/completed|tipId/);
  });
});
