import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { SessionMutation } from "../../harness/session/mutation.ts";
import { branchTip } from "../../harness/session/builtin-addresses.ts";
import { setValue } from "../../harness/session/writes.ts";
import { SESSION_LIMITS } from "../../schema/api-sessions.ts";
import { call } from "./helpers.ts";
import { objectOf, tenantWithSession } from "./session-helpers.ts";

// A session holds at most SESSION_LIMITS.branches branches (a lane's branch included) and
// SESSION_LIMITS.lanes lanes. A creation beyond either is 422 LimitExceeded and writes nothing;
// concurrent creations never pass a cap between them.

type ErrorBody = { error: { code: string; details?: Record<string, unknown> } };

/** `count` empty branches written straight into the session's storage (a large session, quickly). */
async function seedBranches(tenantId: string, sid: string, count: number): Promise<void> {
  await runInDurableObject(objectOf(tenantId, sid), async (instance: SessionObject) => {
    for (let start = 0; start < count; start += 1000) {
      const names = Array.from({ length: Math.min(1000, count - start) }, (_, i) => `seed${String(start + i).padStart(5, "0")}`);
      await instance.session().mutate((m) => m.commit(names.map((name) => setValue(branchTip(name), null))));
    }
  });
}

/** How many branches the listing shows, page by page. */
async function listedBranches(base: string, key: string): Promise<number> {
  let count = 0;
  let cursor: string | null = null;
  for (let pages = 0; pages < 20; pages++) {
    const response = await call(`${base}/branches?limit=1000${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`, { token: key });
    const page = await response.json<{ items: unknown[]; nextCursor: string | null }>();
    count += page.items.length;
    cursor = page.nextCursor;
    if (cursor === null) return count;
  }
  throw new Error("the listing did not end");
}

async function limitExceeded(response: Response): Promise<{ status: number; code: string; resource: unknown; limit: unknown }> {
  const body = await response.json<ErrorBody>();
  return { status: response.status, code: body.error.code, resource: body.error.details?.resource, limit: body.error.details?.limit };
}

/**
 * Sends `requests` while the session's mutation line is held, so every creation that gets past the
 * object's checks waits on the line together, then releases the line. `refusals` answers settle
 * while the line is still held when the object refuses them before the engine (a bounded poll
 * waits for them; without that, the line is released after the poll runs out).
 */
async function racing(tenantId: string, sid: string, refusals: number, requests: () => Promise<Response>[]): Promise<number[]> {
  const stub = objectOf(tenantId, sid);
  let held: SessionMutation | undefined;
  await runInDurableObject(stub, async (instance: SessionObject) => {
    held = await instance.session().beginMutation();
  });
  let settled = 0;
  const answers = Promise.all(requests().map((request) => request.finally(() => void settled++)));
  for (let poll = 0; poll < 300 && settled < refusals; poll++) await new Promise((resolve) => setTimeout(resolve, 10));
  await runInDurableObject(stub, () => held?.end());
  return (await answers).map((response) => response.status);
}

const createBranch = (base: string, key: string, name: string) => call(`${base}/branches`, { body: { name, at: null }, token: key });
const putLane = (base: string, key: string, name: string) => call(`${base}/lanes/${name}`, { method: "PUT", token: key });

describe("the branch cap", () => {
  it("refuses the branch beyond the cap with 422 LimitExceeded and writes nothing", async () => {
    const { tenantId, sid, base, key } = await tenantWithSession("brcap");
    await seedBranches(tenantId, sid, SESSION_LIMITS.branches - 1);
    expect((await createBranch(base, key, "last")).status).toBe(201);
    expect(await limitExceeded(await createBranch(base, key, "over"))).toEqual({ status: 422, code: "LimitExceeded", resource: "branches", limit: SESSION_LIMITS.branches });
    expect((await call(`${base}/branches/over/entries`, { token: key })).status).toBe(404);
    expect(await listedBranches(base, key)).toBe(SESSION_LIMITS.branches);
  });

  it("counts a new lane's branch: a lane needing a new branch is refused, a lane on an existing branch is created", async () => {
    const { tenantId, sid, base, key } = await tenantWithSession("lanebrcap");
    await seedBranches(tenantId, sid, SESSION_LIMITS.branches - 1);
    expect((await createBranch(base, key, "existing")).status).toBe(201);
    expect(await limitExceeded(await putLane(base, key, "fresh"))).toEqual({ status: 422, code: "LimitExceeded", resource: "branches", limit: SESSION_LIMITS.branches });
    expect((await call(`${base}/lanes/fresh`, { token: key })).status).toBe(404);
    expect((await putLane(base, key, "existing")).status).toBe(201);
    expect(await listedBranches(base, key)).toBe(SESSION_LIMITS.branches);
  });

  it("never passes the cap when creations race: exactly the free slots succeed", async () => {
    const { tenantId, sid, base, key } = await tenantWithSession("brrace");
    const free = 3;
    await seedBranches(tenantId, sid, SESSION_LIMITS.branches - free);
    const statuses = await racing(tenantId, sid, 14 - free, () => [
      ...Array.from({ length: 10 }, (_, i) => createBranch(base, key, `race${i}`)),
      ...Array.from({ length: 4 }, (_, i) => putLane(base, key, `lane${i}`)),
    ]);
    expect(statuses.filter((status) => status === 201)).toHaveLength(free);
    expect(statuses.filter((status) => status === 422)).toHaveLength(statuses.length - free);
    expect(await listedBranches(base, key)).toBe(SESSION_LIMITS.branches);
  });
});

describe("the lane cap", () => {
  it("refuses the lane beyond the cap with 422 LimitExceeded, also when creations race; existing lanes still answer", async () => {
    const { tenantId, sid, base, key } = await tenantWithSession("lncap");
    const free = 2;
    for (let i = 0; i < SESSION_LIMITS.lanes - free; i++) expect((await putLane(base, key, `l${i}`)).status).toBe(201);
    const statuses = await racing(tenantId, sid, 6 - free, () => Array.from({ length: 6 }, (_, i) => putLane(base, key, `race${i}`)));
    expect(statuses.filter((status) => status === 201)).toHaveLength(free);
    expect(statuses.filter((status) => status === 422)).toHaveLength(statuses.length - free);
    expect(await limitExceeded(await putLane(base, key, "over"))).toEqual({ status: 422, code: "LimitExceeded", resource: "lanes", limit: SESSION_LIMITS.lanes });
    expect((await putLane(base, key, "l0")).status).toBe(200);
    const lanes = await (await call(`${base}/lanes?limit=1000`, { token: key })).json<{ items: unknown[] }>();
    expect(lanes.items).toHaveLength(SESSION_LIMITS.lanes);
  });
});
