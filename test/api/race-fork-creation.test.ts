import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { call, errorCode } from "./helpers.ts";
import { order } from "./race-helpers.ts";
import { tenantWithSession, user } from "./session-helpers.ts";

// Race between objects (QUALITY R2, reference §1.11): a fork into the id X (POST …/fork with `id`)
// against a creation of X (POST /v1/sessions with `id`). The fork holds no metadata until its last
// step, so the target object refuses creations while it imports (session-lifecycle.ts). The
// source's and the target's calls are ordered by wrapping them (race-helpers.ts): exactly one of
// the two wins, the other is 409 SessionExists, and X is what the winner made.

let restore: (() => Promise<void>) | undefined;
afterEach(async () => {
  await restore?.();
  restore = undefined;
});

async function source(prefix: string) {
  const setup = await tenantWithSession(prefix);
  expect((await call(`${setup.base}/branches`, { body: { name: "root" }, token: setup.key })).status).toBe(201);
  expect((await call(`${setup.base}/branches/root/entries`, { body: { message: user("copied") }, token: setup.key })).status).toBe(201);
  const target = `${setup.sid}_x`;
  const stubs = { source: env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`), target: env.SESSIONS.getByName(`${setup.tenantId}:${target}`) };
  const fork = () => call(`${setup.base}/fork`, { body: { scope: "tree", id: target }, token: setup.key });
  const create = () => call("/v1/sessions", { body: { id: target }, token: setup.key });
  const read = async () => (await call(`/v1/sessions/${target}`, { token: setup.key })).json<{ id: string; parentSessionId?: string; branches: { name: string }[] }>();
  return { ...setup, target, stubs, fork, create, read };
}

describe("race: fork import vs creation of the same id", () => {
  it("the fork first (importing when the creation arrives): the creation is 409 SessionExists; the fork completes and X is the fork", async () => {
    const setup = await source("rfc_fork");
    ({ restore } = await order([
      {
        stub: setup.stubs.source,
        methods: {
          // The fork is importing into X (its plan taken, entries not yet copied) until the creation was answered.
          forkEntries: async (run, _args, points) => {
            points.signal("importing");
            await points.reached("created");
            return run();
          },
        },
      },
      {
        stub: setup.stubs.target,
        methods: {
          create: async (run, _args, points) => {
            await points.reached("importing");
            const answer = await run();
            points.signal("created");
            return answer;
          },
        },
      },
    ]));
    const [forked, created] = await Promise.all([setup.fork(), setup.create()]);
    expect({ status: created.status, code: await errorCode(created) }).toEqual({ status: 409, code: "SessionExists" });
    expect(forked.status).toBe(201);
    expect(await setup.read()).toMatchObject({ id: setup.target, parentSessionId: setup.sid, branches: [{ name: "root" }] });
  });

  it("the creation first: the fork into X is 409 SessionExists and copies nothing; X is the created, empty session", async () => {
    const setup = await source("rfc_create");
    ({ restore } = await order([
      {
        stub: setup.stubs.target,
        methods: {
          create: async (run, _args, points) => {
            const answer = await run();
            points.signal("created");
            return answer;
          },
          createFork: async (run, _args, points) => {
            await points.reached("created");
            return run();
          },
        },
      },
    ]));
    const [forked, created] = await Promise.all([setup.fork(), setup.create()]);
    expect(created.status).toBe(201);
    expect({ status: forked.status, code: await errorCode(forked) }).toEqual({ status: 409, code: "SessionExists" });
    const view = await setup.read();
    expect(view.parentSessionId).toBeUndefined();
    expect(view.branches).toEqual([]);
  });
});
