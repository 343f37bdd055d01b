import { describe, expect, it } from "vitest";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import { compactionsOf, withCompactionRig } from "../runtime/compaction-helpers.ts";
import { runRecord, unwrap } from "../runtime/drive-helpers.ts";
import { SCRIPT } from "../runtime/helpers.ts";
import { testTools } from "../runtime/tool-helpers.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// The compaction cut point. docs/api-lanes.md "Compaction": the lane keeps "about
// keepRecentTokens tokens" of its newest messages verbatim (never separating a tool call from its
// result) and summarizes everything older; 422 `NothingToCompact` means "the lane's context already
// fits in the part a compaction keeps". Reference §6.2: valid cut points are user, assistant,
// bash-execution, custom and *summary* messages; the preparation is undefined only when there is
// nothing to summarize.
//
// harness/compaction/preparation.ts findCut started from `cutIndex = cutPoints[0]` and only moved
// it to a cut point *at or after* the message where keepRecentTokens is reached. When that message
// is the newest one and a tool result (no cut point after it), the cut fell back to the first cut
// point: everything was "kept", nothing summarized, however large the older history. Now the nearest
// cut point before it is taken; a summary message is a cut point, and a never-reached budget keeps all.

const zero = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
type Entry = { id: string; type: string; summary?: string; retainedTail?: { role: string }[] };

async function entries(setup: { sid: string; key: string }): Promise<Entry[]> {
  return (await (await call(`/v1/sessions/${setup.sid}/branches/main/entries?order=asc`, { token: setup.key })).json<{ items: Entry[] }>()).items;
}

describe("compaction cut when the newest message is a tool result larger than keepRecentTokens", () => {
  it("POST …/compact summarizes the older turns instead of answering NothingToCompact for a context far larger than the kept part", async () => {
    const setup = await laneSetup("rvc_cut");
    const settings = { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 50 } };
    expect((await call(`/v1/sessions/${setup.sid}`, { method: "PATCH", body: { settings }, token: setup.key })).status).toBe(200);
    for (const prompt of [`old-turn-one ${"a".repeat(200)}`, `old-turn-two ${"b".repeat(200)}`]) {
      expect((await call(`${setup.lanePath}/prompt`, { body: { prompt }, token: setup.key })).status).toBe(200);
    }
    // A turn whose tool call returned a large result (100 estimated tokens, over keepRecentTokens).
    const append = async (message: unknown) => expect((await call(`${setup.lanePath}/entries`, { body: { message }, token: setup.key })).status).toBe(201);
    await append({ role: "user", content: "read a.ts" });
    await append({ role: "assistant", content: [{ type: "toolCall", id: "c1", name: "read", arguments: { path: "a.ts" } }], api: "x", provider: "p", model: "m", usage: zero, stopReason: "toolUse" });
    await append({ role: "toolResult", toolCallId: "c1", toolName: "read", content: [{ type: "text", text: "y".repeat(400) }], isError: false });

    const response = await call(`${setup.lanePath}/compact`, { body: {}, token: setup.key });
    // Actual: 422 NothingToCompact "its context is about 311 tokens, and a compaction keeps the
    // newest 50 tokens … which is all of it" (details.estimatedTokens 311 > keepRecentTokens 50).
    const body = await response.json<{ compaction?: { status: string }; error?: { details?: { estimatedTokens: number; keepRecentTokens: number } } }>();
    expect(body.error).toBeUndefined();
    expect(response.status).toBe(200);
    expect(body.compaction?.status).toBe("completed");
    const compaction = (await entries(setup)).at(-1);
    expect(compaction?.type).toBe("compaction");
    // The old turns are summarized (the echo model answers with the summarizer's request) ...
    expect(compaction?.summary).toContain("old-turn-one");
    const tail = compaction?.retainedTail ?? [];
    expect(JSON.stringify(tail)).not.toContain("old-turn-one");
    // ... and the tool exchange is kept whole: the tail never starts with a tool result.
    expect(tail[0]?.role).not.toBe("toolResult");
    expect(tail.at(-1)?.role).toBe("toolResult");
  });

  it("an overflow right after a large tool result compacts and asks again instead of failing the run context_overflow", async () => {
    const steps: ScriptStep[] = [
      { text: "first answer", usage: { input: 10, output: 1 } },
      { toolCalls: [{ name: "probe", arguments: {} }], usage: { input: 100, output: 1 } },
      { overflow: true },
      // Summary request(s), then the re-asked turn (spare steps whatever the fix's request count).
      { text: "SUMMARY-1" },
      { text: "SUMMARY-2" },
      { text: "final answer" },
      { text: "spare" },
    ];
    const result = await withCompactionRig(
      async ({ lane }) => {
        unwrap(await lane.prompt(`old-turn-one ${"a".repeat(400)}`));
        unwrap(await lane.setActiveTools(["probe"]));
        const record = runRecord(await lane.prompt("probe it"));
        return { record, compactions: compactionsOf(lane) };
      },
      {
        model: SCRIPT,
        steps,
        settings: { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 50 }, retry: { enabled: false, maxRetries: 0, baseDelayMs: 0 } },
        tools: testTools({ probe: { run: async () => ({ content: [{ type: "text", text: "z".repeat(400) }], isError: false }) } }),
      },
    );
    // Actual: { status: "failed", error: { code: "context_overflow" } } and no compaction: the
    // overflow preparation (settle-response.ts overflowCompaction) finds "nothing to summarize"
    // although the whole first turn (over 100 tokens) lies before the kept tool exchange.
    expect(result.record.error?.code).not.toBe("context_overflow");
    expect(result.record.status).toBe("completed");
    expect(result.compactions).toHaveLength(1);
  });
});

describe("compaction when the whole conversation fits in the kept part", () => {
  it("a lane that starts with a summary message (a valid cut point, §6.2) and fits in keepRecentTokens is refused NothingToCompact, nothing written", async () => {
    const setup = await laneSetup("rvc_sum");
    // A conversation carried over from elsewhere: its own earlier summary, then one short turn.
    expect((await call(`${setup.lanePath}/entries`, { body: { message: { role: "compactionSummary", summary: "what happened before", tokensBefore: 1000 } }, token: setup.key })).status).toBe(201);
    expect((await call(`${setup.lanePath}/prompt`, { body: { prompt: "hello" }, token: setup.key })).status).toBe(200);
    const before = await entries(setup);

    // Default keepRecentTokens (20,000): the ~15-token context fits many times over.
    const response = await call(`${setup.lanePath}/compact`, { body: {}, token: setup.key });
    // Actual: 200, a compaction that "summarizes" only the summary message (the fallback cut is
    // cutPoints[0] = 1, and compactionSummary is not a cut point), one model request and usage row.
    expect(response.status).toBe(422);
    expect((await response.json<{ error?: { code: string } }>()).error?.code).toBe("NothingToCompact");
    expect(await entries(setup)).toEqual(before);
  });
});
