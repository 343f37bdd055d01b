import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { env } from "cloudflare:workers";
import { value } from "../../harness/session/addresses.ts";
import { openSecret, secretBoxKey } from "../../secrets/secret-box.ts";
import { toolDefinition, toolSecretContext } from "../../tools/definitions.ts";
import type { Write } from "../../harness/session/storage.ts";
import { insertEntry, setValue } from "../../harness/session/writes.ts";
import { branchTip } from "../../harness/session/builtin-addresses.ts";
import { checkInvariants } from "../runtime/invariants.ts";
import { call } from "./helpers.ts";
import { allEntries as allEntriesOf } from "./data-helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";
import { expectError, objectOf, user } from "./session-helpers.ts";

// Forks (reference §1.11) through the REST API: branch and tree scopes, what is copied and what is
// left out, refusals that write nothing, and a 10,000-entry source copied page by page.

type EntryBody = { id: string; seq: number; type: string; parentId: string | null; message?: { role: string; content: unknown } };
type SessionBody = { id: string; parentSessionId?: string; stats: { messageCount: number; usage: { totalTokens: number } }; branches: { name: string; tipId: string | null; lane: boolean }[] };

let counter = 0;
const newId = (prefix: string): string => `${prefix}_${(counter++).toString(36)}_${crypto.randomUUID().slice(0, 6)}`;

async function fork(setup: { key: string; sid: string }, body: Record<string, unknown>): Promise<Response> {
  return call(`/v1/sessions/${setup.sid}/fork`, { body, token: setup.key });
}

const allEntries = (key: string, sid: string): Promise<EntryBody[]> => allEntriesOf<EntryBody>(key, sid);

/** Labels are not part of the entry answers: read them from the session itself. */
async function labelsOf(tenantId: string, sid: string, ids: string[]): Promise<(string | undefined)[]> {
  return runInDurableObject(objectOf(tenantId, sid), async (instance: SessionObject) => ids.map((entryId) => instance.session().getLabel(entryId)));
}

/** A session with a lane `main` that ran two prompts, a data-only branch `side`, labels, values and a list. */
async function richSource(prefix: string) {
  const setup = await laneSetup(prefix);
  const { key, sessionPath, lanePath } = setup;
  for (const text of ["first question", "second question"]) {
    const answered = await call(`${lanePath}/prompt`, { body: { prompt: text }, token: key });
    expect(answered.status).toBe(200);
  }
  const main = await allEntries(key, setup.sid);
  const [q1, a1, q2] = main;
  if (!q1 || !a1 || !q2) throw new Error("expected four entries");
  expect((await call(`${sessionPath}/branches`, { body: { name: "side", at: a1.id }, token: key })).status).toBe(201);
  const side = await call(`${sessionPath}/branches/side/entries`, { body: { message: user("a side note") }, token: key });
  const sideId = (await side.json<{ entryId: string }>()).entryId;
  expect((await call(`${sessionPath}/entries/${q1.id}/label`, { method: "PUT", body: { label: "start" }, token: key })).status).toBe(200);
  expect((await call(`${sessionPath}/entries/${sideId}/label`, { method: "PUT", body: { label: "aside" }, token: key })).status).toBe(200);
  expect((await call(`${sessionPath}/values/app/colour`, { method: "PUT", body: "blue", token: key })).status).toBe(200);
  expect((await call(`${sessionPath}/lists/app/log`, { body: { n: 1 }, token: key })).status).toBe(201);
  return { ...setup, ids: { q1: q1.id, a1: a1.id, q2: q2.id, a2: main[3]?.id ?? "", side: sideId } };
}

describe("fork: branch scope", () => {
  it("copies the lane's path, its labels and its configuration; no ledger, no records; the fork runs on", async () => {
    const source = await richSource("fkb");
    const id = newId("fork");
    const response = await fork(source, { scope: "branch", branch: "main", id });
    expect(response.status).toBe(201);
    const view = await response.json<SessionBody>();
    expect(view).toMatchObject({ id, parentSessionId: source.sid, stats: { messageCount: 4, usage: { totalTokens: 0 } } });
    expect(view.branches).toEqual([{ name: "main", tipId: source.ids.a2, lane: true }]);

    const entries = await allEntries(source.key, id);
    expect(entries.map((entry) => entry.id)).toEqual([source.ids.q1, source.ids.a1, source.ids.q2, source.ids.a2]);
    const labels = await labelsOf(source.tenantId, id, [source.ids.q1, source.ids.side]);
    expect(labels).toEqual(["start", undefined]);
    expect((await call(`/v1/sessions/${id}/entries/${source.ids.side}`, { token: source.key })).status).toBe(404);
    expect((await call(`/v1/sessions/${id}/values/app/colour`, { token: source.key })).status).toBe(404);
    const usage = await (await call(`/v1/sessions/${id}/usage`, { token: source.key })).json<{ rows: unknown[] }>();
    expect(usage.rows).toEqual([]);
    const lane = await (await call(`/v1/sessions/${id}/lanes/main`, { token: source.key })).json<{ current?: unknown; last?: unknown }>();
    // A fresh idle lane: no operation, and no record of the source's runs.
    expect(lane.current ?? null).toBeNull();
    expect(lane.last ?? null).toBeNull();

    // The fork is a session of its own: it runs, and its seqs continue past the source's.
    const answered = await call(`/v1/sessions/${id}/lanes/main/prompt`, { body: { prompt: "in the fork" }, token: source.key });
    expect(answered.status).toBe(200);
    const after = await allEntries(source.key, id);
    expect(after).toHaveLength(6);
    expect(Math.min(...after.slice(4).map((entry) => entry.seq))).toBeGreaterThan(Math.max(...entries.map((entry) => entry.seq)));
    expect(after[4]?.parentId).toBe(source.ids.a2);
    // The source is untouched, and the tenant's listing shows the fork.
    expect(await allEntries(source.key, source.sid)).toHaveLength(5);
    const listed = await (await call("/v1/sessions", { token: source.key })).json<{ items: { id: string }[] }>();
    expect(listed.items.map((item) => item.id)).toContain(id);
    const violations = await runInDurableObject(objectOf(source.tenantId, id), async (instance: SessionObject) => checkInvariants(instance.session()));
    expect(violations).toEqual([]);
  });

  it("ends at an entry (`at`) or at its parent (`before`, possibly no entry at all)", async () => {
    const source = await richSource("fkp");
    const at = await (await fork(source, { scope: "branch", branch: "main", entryId: source.ids.a1, position: "at" })).json<SessionBody>();
    expect((await allEntries(source.key, at.id)).map((entry) => entry.id)).toEqual([source.ids.q1, source.ids.a1]);
    const before = await (await fork(source, { scope: "branch", branch: "main", entryId: source.ids.a1, position: "before" })).json<SessionBody>();
    expect((await allEntries(source.key, before.id)).map((entry) => entry.id)).toEqual([source.ids.q1]);
    expect(before.branches).toEqual([{ name: "main", tipId: source.ids.q1, lane: true }]);
    const root = await (await fork(source, { scope: "branch", branch: "main", entryId: source.ids.q1, position: "before" })).json<SessionBody>();
    expect(await allEntries(source.key, root.id)).toEqual([]);
    expect(root.branches).toEqual([{ name: "main", tipId: null, lane: true }]);
  });

  it("refuses what it cannot fork, and writes nothing for it", async () => {
    const source = await richSource("fkr");
    const refusals: [Record<string, unknown>, number, string][] = [
      [{ scope: "branch", branch: "side" }, 422, "InvalidFork"],
      [{ scope: "branch", branch: "main", entryId: source.ids.side }, 422, "InvalidFork"],
      [{ scope: "branch", branch: "nope" }, 404, "UnknownBranch"],
      [{ scope: "branch", branch: "main", entryId: "missing_entry" }, 404, "UnknownEntry"],
      [{ scope: "forest" }, 400, "ValidationFailed"],
      [{ scope: "branch" }, 400, "ValidationFailed"],
      [{ scope: "tree", extra: 1 }, 400, "ValidationFailed"],
    ];
    for (const [body, status, code] of refusals) {
      const id = newId("nofork");
      await expectError(await fork(source, { ...body, ...(status !== 400 && { id }) }), status, code);
      if (status !== 400) expect((await call(`/v1/sessions/${id}`, { token: source.key })).status).toBe(404);
    }
    await expectError(await fork(source, { scope: "tree", id: source.sid }), 409, "SessionExists");
    await expectError(await call(`/v1/sessions/missing_source/fork`, { body: { scope: "tree" }, token: source.key }), 404, "SessionNotFound");
  });
});

describe("fork: tree scope", () => {
  it("copies every entry, tip, label, application value and list; lanes stay lanes, data-only branches stay data-only", async () => {
    const source = await richSource("fkt");
    const response = await fork(source, { scope: "tree" });
    expect(response.status).toBe(201);
    const view = await response.json<SessionBody>();
    expect(view.parentSessionId).toBe(source.sid);
    expect(view.stats.messageCount).toBe(5);
    expect(view.branches).toEqual([
      { name: "main", tipId: source.ids.a2, lane: true },
      { name: "side", tipId: source.ids.side, lane: false },
    ]);
    expect((await allEntries(source.key, view.id)).map((entry) => entry.id).sort()).toEqual(Object.values(source.ids).sort());
    expect(await labelsOf(source.tenantId, view.id, [source.ids.q1, source.ids.side])).toEqual(["start", "aside"]);
    expect(await (await call(`/v1/sessions/${view.id}/values/app/colour`, { token: source.key })).json()).toMatchObject({ value: "blue" });
    const list = await (await call(`/v1/sessions/${view.id}/lists/app/log`, { token: source.key })).json<{ items: { value: unknown }[] }>();
    expect(list.items.map((item) => item.value)).toEqual([{ n: 1 }]);
    const violations = await runInDurableObject(objectOf(source.tenantId, view.id), async (instance: SessionObject) => checkInvariants(instance.session()));
    expect(violations).toEqual([]);
  });

  it("leaves a run in flight behind: the fork's lane is idle and holds no operation state or queued input", async () => {
    const setup = await laneSetup("fkf");
    await useScript(setup, [slowStep(200)]);
    const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "busy" }, token: setup.key });
    expect(accepted.status).toBe(202);
    await untilAt(setup, "assistant.effect_pending");
    expect((await call(`${setup.lanePath}/queue`, { body: { kind: "followUp", message: "later" }, token: setup.key })).status).toBe(201);
    const response = await fork(setup, { scope: "tree" });
    expect(response.status).toBe(201);
    const view = await response.json<SessionBody>();
    const copied = await runInDurableObject(objectOf(setup.tenantId, view.id), async (instance: SessionObject) => {
      const session = instance.session();
      const operational = ["pi.op.meta", "pi.op.state", "pi.pending.entry", "pi.pending.assistant_frame", "pi.result", "pi.capture"].flatMap((namespace) =>
        session.scanValues(value<unknown>(namespace, "")).map((stored) => `${namespace}/${stored.address.key}`),
      );
      return { operational, entries: session.findEntries({ order: "asc" }).length, violations: checkInvariants(session) };
    });
    expect(copied).toEqual({ operational: [], entries: 1, violations: [] });
    const lane = await (await call(`/v1/sessions/${view.id}/lanes/main`, { token: setup.key })).json<{ current?: unknown; queue?: unknown[] }>();
    expect(lane.current ?? null).toBeNull();
    await call(`${setup.lanePath}/operations/${(await accepted.json<{ operationId: string }>()).operationId}/abort`, { method: "POST", token: setup.key });
  });

  it("copies tool definitions; an http tool's secret is sealed again for the fork and still signs with the same secret", async () => {
    const setup = await laneSetup("fkt_tools");
    const created = await call(`${setup.sessionPath}/tools/lookup`, {
      method: "PUT",
      body: { kind: "http", description: "Looks up", parameters: { type: "object" }, url: "https://tools.example.com/lookup" },
      token: setup.key,
    });
    expect(created.status).toBe(201);
    const { secret } = await created.json<{ secret: string }>();
    expect((await call(`${setup.sessionPath}/tools/current_time`, { method: "PUT", body: { kind: "builtin" }, token: setup.key })).status).toBe(201);
    for (const body of [{ scope: "tree" }, { scope: "branch", branch: "main" }]) {
      const response = await fork(setup, body);
      expect(response.status).toBe(201);
      const view = await response.json<SessionBody>();
      const tools = await (await call(`/v1/sessions/${view.id}/tools`, { token: setup.key })).json<{ items: { name: string; secretHint?: string }[] }>();
      expect(tools.items.map((tool) => tool.name).sort()).toEqual(["current_time", "lookup"]);
      const opened = await runInDurableObject(objectOf(setup.tenantId, view.id), async (instance: SessionObject) => {
        const stored = instance.session().getValue(toolDefinition("lookup"))?.value;
        if (!stored?.sealedSecret) return undefined;
        return openSecret(await secretBoxKey(env.SECRETS_KEY, "tool-secret"), stored.sealedSecret, toolSecretContext(view.id, "lookup"));
      });
      expect(opened).toBe(secret);
    }
  });

  it("copies a 10,000-entry session, with a chunked entry, page by page (both scopes)", async () => {
    const setup = await laneSetup("fkl");
    const big = "x".repeat(1_500_000);
    const last = await runInDurableObject(objectOf(setup.tenantId, setup.sid), async (instance: SessionObject) => {
      const session = instance.session();
      let parentId: string | null = null;
      for (let batch = 0; batch < 20; batch++) {
        const writes: Write[] = [];
        for (let index = 0; index < 500; index++) {
          const id = session.idGenerator.next();
          const n = batch * 500 + index;
          writes.push(insertEntry({ id, parentId, type: "message", message: { role: "user", content: n === 1234 ? big : `entry ${n}`, timestamp: n } }));
          parentId = id;
        }
        writes.push(setValue(branchTip("main"), parentId));
        await session.mutate((m) => void m.commit(writes));
      }
      return parentId;
    });
    for (const scope of ["branch", "tree"] as const) {
      const response = await fork(setup, scope === "branch" ? { scope, branch: "main" } : { scope });
      expect(response.status).toBe(201);
      const view = await response.json<SessionBody>();
      expect(view.stats.messageCount).toBe(10_000);
      expect(view.branches).toEqual([{ name: "main", tipId: last, lane: true }]);
      const copied = await runInDurableObject(objectOf(setup.tenantId, view.id), async (instance: SessionObject) => {
        const session = instance.session();
        const entries = session.findEntries({ order: "asc" });
        const chunked = entries.flatMap((entry) => (entry.type === "message" && entry.message.role === "user" && entry.message.timestamp === 1234 ? [entry.message.content] : []));
        return { count: entries.length, bigIntact: chunked[0] === big, violations: checkInvariants(session) };
      });
      expect(copied).toEqual({ count: 10_000, bigIntact: true, violations: [] });
    }
  });
});
