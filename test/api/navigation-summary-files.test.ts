import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";

// docs/api-lanes.md "Navigation with a summary": the summary reads the left branch's entries newest
// first "as many as fit in the lane model's window less settings.compaction.reserveTokens", and the
// branch_summary entry's `details` carry `readFiles`/`modifiedFiles`: "the files the branch's tool
// calls read and changed, together with those listed by the branch summaries and compactions on
// the branch it left". The text budget bounds what the model reads, not which files the branch
// touched: a file written early on a long branch stays in `modifiedFiles`.

type Entry = { id: string; type: string; details?: { readFiles: string[]; modifiedFiles: string[] } };

describe("a branch summary's file lists", { timeout: 30_000 }, () => {
  it("name a file the left branch wrote even when the text budget cut that older turn", async () => {
    const setup = await laneSetup("navfl");
    // Window 128,000 (scripted/script) less a reserve of 127,800: about 200 tokens of text to read.
    const settings = { compaction: { enabled: false, reserveTokens: 127_800, keepRecentTokens: 10 } };
    expect((await call(setup.sessionPath, { method: "PATCH", body: { settings }, token: setup.key })).status).toBe(200);
    await useScript(setup, [
      { text: "kept" },
      { toolCalls: [{ name: "write", arguments: { path: "/work/notes.txt", content: "hello" } }] },
      { text: "written" },
      { text: "ok" },
      { text: "SUMMARY" },
    ]);
    expect((await call(`${setup.lanePath}/prompt`, { body: { prompt: "one" }, token: setup.key })).status).toBe(200);
    const kept = await (await call(`${setup.sessionPath}/branches/main/entries?order=asc`, { token: setup.key })).json<{ items: Entry[] }>();
    const target = kept.items.at(-1)?.id;
    expect((await call(`${setup.lanePath}/prompt`, { body: { prompt: "write the notes" }, token: setup.key })).status).toBe(200);
    // A newer turn larger than the whole budget: the summary reads it and nothing older.
    expect((await call(`${setup.lanePath}/prompt`, { body: { prompt: "x".repeat(4_000) }, token: setup.key })).status).toBe(200);

    const navigated = await call(`${setup.lanePath}/navigate`, { body: { targetId: target, summarize: true }, token: setup.key });
    expect(navigated.status).toBe(200);
    const path = await (await call(`${setup.sessionPath}/branches/main/entries?order=asc`, { token: setup.key })).json<{ items: Entry[] }>();
    const summary = path.items.at(-1);
    expect(summary?.type).toBe("branch_summary");
    expect(summary?.details?.modifiedFiles).toEqual(["/work/notes.txt"]);
  });
});
