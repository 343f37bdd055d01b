import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// Reference §6.3/§6.5: after a compaction the context is summary + retainedTail + every later entry;
// a branch summary reads the abandoned branch "from just after the common ancestor up to the old
// tip". A compaction on the abandoned branch must therefore bring its retained tail too: those
// messages are in neither the compaction's summary nor the target's path.

type Entry = { id: string; type: string; summary?: string; retainedTail?: { role: string; content: unknown }[] };

async function path(setup: { sid: string; key: string }): Promise<Entry[]> {
  return (await (await call(`/v1/sessions/${setup.sid}/branches/main/entries?order=asc`, { token: setup.key })).json<{ items: Entry[] }>()).items;
}

describe("a branch summary over an abandoned branch that holds a compaction", () => {
  it("summarizes the compaction's retained tail too (it is part of the branch's context, not of the summary)", async () => {
    const setup = await laneSetup("navsum");
    const settings = { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 6 } };
    expect((await call(`/v1/sessions/${setup.sid}`, { method: "PATCH", body: { settings }, token: setup.key })).status).toBe(200);
    for (const prompt of ["alpha-first", "bravo-second"]) expect((await call(`${setup.lanePath}/prompt`, { body: { prompt }, token: setup.key })).status).toBe(200);
    const compacted = await call(`${setup.lanePath}/compact`, { body: {}, token: setup.key });
    expect(compacted.status).toBe(200);
    const afterCompaction = await path(setup);
    const compaction = afterCompaction.at(-1);
    expect(compaction?.type).toBe("compaction");
    // The compaction kept the second turn verbatim and summarized only the first.
    expect(JSON.stringify(compaction?.retainedTail)).toContain("bravo-second");
    expect(compaction?.summary).not.toContain("bravo-second");
    expect((await call(`${setup.lanePath}/prompt`, { body: { prompt: "charlie-third" }, token: setup.key })).status).toBe(200);

    // Leave everything after the first user message, summarizing it.
    const first = afterCompaction[0];
    if (!first) throw new Error("no first entry");
    const navigated = await call(`${setup.lanePath}/navigate`, { body: { targetId: first.id, summarize: true }, token: setup.key });
    expect(navigated.status).toBe(200);
    const summary = (await path(setup)).at(-1);
    expect(summary?.type).toBe("branch_summary");
    // The echo model answers with the summarizer's request: what the branch summary was given to read.
    expect(summary?.summary).toContain("charlie-third");
    // The retained turn was context on the abandoned branch: the summary reads it (it was left out before).
    expect(summary?.summary).toContain("bravo-second");
  });
});
