import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { expectError } from "./session-helpers.ts";

// Navigation over REST (spec/API.md "Operations"): the primitive through POST …/operations, the
// navigate convenience with its continuation run, and the refusals.

type Entry = { id: string; parentId: string | null };
type Record = { operationId: string; kind: string; status: string; fromTipId: string | null; tipId: string | null };

async function twoTurns(prefix: string) {
  const setup = await laneSetup(prefix);
  for (const prompt of ["one", "two"]) expect((await call(`${setup.lanePath}/prompt`, { body: { prompt }, token: setup.key })).status).toBe(200);
  const entries = await (await call(`/v1/sessions/${setup.sid}/branches/main/entries?order=asc`, { token: setup.key })).json<{ items: Entry[] }>();
  const [q1, a1, , a2] = entries.items;
  if (!q1 || !a1 || !a2) throw new Error("expected four entries");
  return { ...setup, ids: { q1: q1.id, a1: a1.id, a2: a2.id } };
}

describe("navigation over REST", () => {
  it("the primitive: 202 with the id, then the record; the lane's tip moved", async () => {
    const setup = await twoTurns("nvp");
    const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "navigation", targetId: setup.ids.a1, label: "back here" }, token: setup.key });
    expect(accepted.status).toBe(202);
    const { operationId, kind } = await accepted.json<{ operationId: string; kind: string }>();
    expect(kind).toBe("navigation");
    const settled = await (await call(`${setup.lanePath}/operations/${operationId}?wait=10`, { token: setup.key })).json<{ state: string; result: Record }>();
    expect(settled).toMatchObject({ state: "settled", result: { kind: "navigation", status: "completed", fromTipId: setup.ids.a2, tipId: setup.ids.a1 } });
    const lane = await (await call(setup.lanePath, { token: setup.key })).json<{ tipId: string | null }>();
    expect(lane.tipId).toBe(setup.ids.a1);
  });

  it("the convenience answers the navigation, and runs the queued follow-up from the new tip", async () => {
    const setup = await twoTurns("nvc");
    const plain = await call(`${setup.lanePath}/navigate`, { body: { targetId: setup.ids.q1 }, token: setup.key });
    expect(plain.status).toBe(200);
    const alone = await plain.json<{ navigation: Record; run?: unknown }>();
    expect(alone.navigation).toMatchObject({ kind: "navigation", status: "completed", tipId: setup.ids.q1 });
    expect(alone.run).toBeUndefined();

    expect((await call(`${setup.lanePath}/queue`, { body: { kind: "followUp", message: "and then?" }, token: setup.key })).status).toBe(201);
    const continued = await call(`${setup.lanePath}/navigate`, { body: { targetId: setup.ids.a1 }, token: setup.key });
    expect(continued.status).toBe(200);
    const both = await continued.json<{ navigation: Record; run?: Record & { messages: { role: string }[] } }>();
    expect(both.navigation).toMatchObject({ status: "completed", tipId: setup.ids.a1 });
    expect(both.run).toMatchObject({ kind: "run", status: "completed", fromTipId: setup.ids.a1 });
    expect(both.run?.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    const queue = await (await call(setup.lanePath, { token: setup.key })).json<{ queue?: unknown[] }>();
    expect(queue.queue ?? []).toEqual([]);
  });

  it("summarize: true leaves a branch summary of the abandoned turn under the target, labelled, and the tip on it", async () => {
    const setup = await twoTurns("nvs");
    const response = await call(`${setup.lanePath}/navigate`, { body: { targetId: setup.ids.a1, summarize: true, label: "retry from here", customInstructions: "be brief" }, token: setup.key });
    expect(response.status).toBe(200);
    const { navigation } = await response.json<{ navigation: Record }>();
    const path = await (await call(`/v1/sessions/${setup.sid}/branches/main/entries?order=asc`, { token: setup.key })).json<{ items: (Entry & { type: string; fromId?: string; summary?: string; label?: string })[] }>();
    const summary = path.items.at(-1);
    expect(navigation).toMatchObject({ kind: "navigation", status: "completed", fromTipId: setup.ids.a2, tipId: summary?.id });
    expect(path.items.map((entry) => entry.type)).toEqual(["message", "message", "branch_summary"]);
    expect(summary).toMatchObject({ parentId: setup.ids.a1, fromId: setup.ids.a2 });
    // The echo model answers with the summarizer's request: the abandoned turn, the instructions.
    expect(summary?.summary).toContain("[User]: two");
    expect(summary?.summary).toContain("Additional focus: be brief");
    const label = await (await call(`/v1/sessions/${setup.sid}/entries/${setup.ids.a1}/label`, { token: setup.key })).json<{ label: string | null }>();
    expect(label).toEqual({ entryId: setup.ids.a1, label: "retry from here" });
  });

  it("refuses with documented codes and writes nothing", async () => {
    const setup = await twoTurns("nvr");
    await expectError(await call(`${setup.lanePath}/navigate`, { body: { targetId: setup.ids.a2 }, token: setup.key }), 422, "InvalidNavigation");
    await expectError(await call(`${setup.lanePath}/navigate`, { body: { targetId: "no_such_entry" }, token: setup.key }), 404, "UnknownTarget");
    const root = await call(`${setup.lanePath}/navigate`, { body: { targetId: null, summarize: true }, token: setup.key });
    expect(root.status).toBe(422);
    expect(await root.json()).toMatchObject({ error: { code: "InvalidNavigation", message: expect.stringContaining("cannot be summarized"), details: { reason: "summarize_root" } } });
    const labelled = await call(`${setup.lanePath}/navigate`, { body: { targetId: null, label: "root" }, token: setup.key });
    expect(labelled.status).toBe(422);
    expect(await labelled.json()).toMatchObject({ error: { code: "InvalidNavigation", message: expect.stringContaining("cannot carry a label"), details: { reason: "root_label" } } });
    await expectError(await call(`${setup.lanePath}/navigate`, { body: { target: setup.ids.a1 }, token: setup.key }), 400, "ValidationFailed");
    const lane = await (await call(setup.lanePath, { token: setup.key })).json<{ tipId: string | null }>();
    expect(lane.tipId).toBe(setup.ids.a2);
  });
});
