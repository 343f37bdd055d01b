import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { call, errorCode } from "./helpers.ts";
import { order } from "./race-helpers.ts";
import { tenantWithSession, user } from "./session-helpers.ts";

// A fork whose copy fails part-way (its source is deleted while the copy runs, after the
// entries were written into the target object). docs/api-sessions.md "Forks": "until then (or if
// the copy fails) its id answers 404"; "No storage for unknown sessions ... only POST /sessions
// gives a session's object any storage"; "Creation. POST /sessions writes the session with its
// name, its settings ... in one atomic step". A later POST /sessions with that id must therefore
// make an empty session, not one holding the failed fork's half-copied entries.

let restore: (() => Promise<void>) | undefined;
afterEach(async () => {
  await restore?.();
  restore = undefined;
});

/** A fork into `${sid}_x` whose source is deleted after its entries were copied; answers the fork's and the deletion's responses. */
async function interruptedFork(prefix: string) {
  const setup = await tenantWithSession(prefix);
  expect((await call(`${setup.base}/branches`, { body: { name: "root" }, token: setup.key })).status).toBe(201);
  for (const text of ["one", "two", "three"]) {
    expect((await call(`${setup.base}/branches/root/entries`, { body: { message: user(text) }, token: setup.key })).status).toBe(201);
  }
  const target = `${setup.sid}_x`;
  const source = env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`);
  ({ restore } = await order([
    {
      stub: source,
      methods: {
        // Tree scope: the entries are copied (one page), then the source is deleted before the data pages are read.
        forkData: async (run, _args, points) => {
          points.signal("copying");
          await points.reached("deleted");
          return run();
        },
        deleteSession: async (run, _args, points) => {
          await points.reached("copying");
          const answer = await run();
          points.signal("deleted");
          return answer;
        },
      },
    },
  ]));
  const [forked, removed] = await Promise.all([
    call(`${setup.base}/fork`, { body: { scope: "tree", id: target }, token: setup.key }),
    call(setup.base, { method: "DELETE", token: setup.key }),
  ]);
  expect(removed.status).toBe(204);
  return { ...setup, target, forked };
}

describe("an interrupted fork leaves nothing behind", () => {
  it("a creation of the id after a fork failed part-way holds none of the fork's entries", async () => {
    const setup = await interruptedFork("fork_int_a");
    const forkedAnswer = { status: setup.forked.status, code: await errorCode(setup.forked) };
    // The fork failed: its id holds no session.
    expect((await call(`/v1/sessions/${setup.target}`, { token: setup.key })).status).toBe(404);

    // A creation of that id is a new, empty session.
    const created = await call("/v1/sessions", { body: { id: setup.target }, token: setup.key });
    expect(created.status).toBe(201);
    const entries = await (await call(`/v1/sessions/${setup.target}/entries`, { token: setup.key })).json<{ items: { id: string }[] }>();
    const view = await (await call(`/v1/sessions/${setup.target}`, { token: setup.key })).json<{ stats: { messageCount: number }; branches: unknown[] }>();
    expect({ forkedAnswer, entries: entries.items.length, messageCount: view.stats.messageCount, branches: view.branches }).toEqual({
      forkedAnswer: { status: 404, code: "SessionNotFound" },
      entries: 0,
      messageCount: 0,
      branches: [],
    });
  });

  it("the session created under that id then takes writes (its seqs do not collide with the leftovers)", async () => {
    const setup = await interruptedFork("fork_int_b");
    const created = await call("/v1/sessions", { body: { id: setup.target }, token: setup.key });
    expect(created.status).toBe(201);
    const base = `/v1/sessions/${setup.target}`;
    const statuses: number[] = [(await call(`${base}/branches`, { body: { name: "b", at: null }, token: setup.key })).status];
    for (const text of ["a", "b", "c", "d"]) {
      statuses.push((await call(`${base}/branches/b/entries`, { body: { message: user(text) }, token: setup.key })).status);
    }
    expect(statuses).toEqual([201, 201, 201, 201, 201]);
  });
});
