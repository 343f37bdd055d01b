import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { expectError } from "./session-helpers.ts";

// Manual compaction over REST (spec/API.md "Operations"): the primitive through POST …/operations,
// the compact convenience with its continuation run, and the refusals.

type Record = { operationId: string; kind: string; status: string; fromTipId: string | null; tipId: string | null };
type Entry = { id: string; type: string; summary?: string; retainedTail?: { role: string }[] };

/** A lane with two turns whose settings keep only the last turn when compacting. */
async function twoTurns(prefix: string) {
  const setup = await laneSetup(prefix);
  const settings = { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } };
  expect((await call(`/v1/sessions/${setup.sid}`, { method: "PATCH", body: { settings }, token: setup.key })).status).toBe(200);
  for (const prompt of ["one", "two"]) expect((await call(`${setup.lanePath}/prompt`, { body: { prompt }, token: setup.key })).status).toBe(200);
  const lane = await (await call(setup.lanePath, { token: setup.key })).json<{ tipId: string }>();
  return { ...setup, tipId: lane.tipId };
}

async function entries(setup: { sid: string; key: string }): Promise<Entry[]> {
  return (await (await call(`/v1/sessions/${setup.sid}/branches/main/entries?order=asc`, { token: setup.key })).json<{ items: Entry[] }>()).items;
}

describe("compaction over REST", () => {
  it("the primitive: 202 with the id, then the record; a compaction entry is the lane's new tip", async () => {
    const setup = await twoTurns("cmp_p");
    const accepted = await call(`${setup.lanePath}/operations`, { body: { kind: "compaction", customInstructions: "short" }, token: setup.key });
    expect(accepted.status).toBe(202);
    const { operationId, kind } = await accepted.json<{ operationId: string; kind: string }>();
    expect(kind).toBe("compaction");
    const settled = await (await call(`${setup.lanePath}/operations/${operationId}?wait=10`, { token: setup.key })).json<{ state: string; result: Record }>();
    expect(settled).toMatchObject({ state: "settled", result: { kind: "compaction", status: "completed", fromTipId: setup.tipId } });
    const all = await entries(setup);
    const last = all.at(-1);
    expect(last).toMatchObject({ type: "compaction", id: settled.result.tipId });
    expect(last?.summary).toContain("Additional focus: short");
    expect(last?.retainedTail?.map((message) => message.role)).toEqual(["user", "assistant"]);
  });

  it("the convenience answers the compaction, and runs queued input after it from the compacted context", async () => {
    const setup = await twoTurns("cmp_c");
    const plain = await call(`${setup.lanePath}/compact`, { body: {}, token: setup.key });
    expect(plain.status).toBe(200);
    const alone = await plain.json<{ compaction: Record; run?: unknown }>();
    expect(alone.compaction).toMatchObject({ kind: "compaction", status: "completed", fromTipId: setup.tipId });
    expect(alone.run).toBeUndefined();

    expect((await call(`${setup.lanePath}/prompt`, { body: { prompt: "three" }, token: setup.key })).status).toBe(200);
    expect((await call(`${setup.lanePath}/queue`, { body: { kind: "followUp", message: "and then?" }, token: setup.key })).status).toBe(201);
    const continued = await call(`${setup.lanePath}/compact`, { body: { customInstructions: "again", wait: 30 }, token: setup.key });
    expect(continued.status).toBe(200);
    const both = await continued.json<{ compaction: Record; run?: Record & { messages: { role: string; content: unknown }[] } }>();
    expect(both.compaction).toMatchObject({ status: "completed" });
    expect(both.run).toMatchObject({ kind: "run", status: "completed", fromTipId: both.compaction.tipId });
    expect(both.run?.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(both.run?.messages[1]?.content).toEqual([{ type: "text", text: "and then?" }]);
  });

  it("refuses with documented codes and writes nothing", async () => {
    const setup = await laneSetup("cmp_r");
    await expectError(await call(`${setup.lanePath}/compact`, { body: {}, token: setup.key }), 422, "NothingToCompact");
    await expectError(await call(`${setup.lanePath}/operations`, { body: { kind: "compaction" }, token: setup.key }), 422, "NothingToCompact");
    const refused = await call(`${setup.lanePath}/compact`, { body: {}, token: setup.key });
    expect(await refused.json()).toMatchObject({
      error: {
        code: "NothingToCompact",
        message: expect.stringMatching(/its context is about 0 tokens, and a compaction keeps the newest 20000 tokens \(settings\.compaction\.keepRecentTokens.*lower keepRecentTokens with PATCH/),
        details: { lane: "main", estimatedTokens: 0, keepRecentTokens: 20000 },
      },
    });
    await expectError(await call(`${setup.lanePath}/compact`, { body: { instructions: "x" }, token: setup.key }), 400, "ValidationFailed");
    await expectError(await call(`${setup.lanePath}/compact`, { body: { wait: 999 }, token: setup.key }), 400, "ValidationFailed");
    expect(await entries(setup)).toEqual([]);
    const lane = await (await call(setup.lanePath, { token: setup.key })).json<{ lastOperationId?: string | null }>();
    expect(lane.lastOperationId ?? null).toBeNull();
  });
});
