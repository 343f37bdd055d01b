import { describe, expect, it } from "vitest";
import type { Entry } from "../../schema/entries.ts";
import type { AgentMessage, AssistantMessage } from "../../schema/messages.ts";
import type { CompactionSettings } from "../../schema/settings.ts";
import { contextTokens, fileDetails, findCut, pathContext, pathTokens, prepareCompaction, reconstructPreparation, storedPreparation } from "../../harness/compaction/preparation.ts";
import { estimateContextTokens, estimateMessageTokens } from "../../harness/compaction/tokens.ts";
import { combineSummaries, summaryRequests, SUMMARIZATION_SYSTEM_PROMPT, TURN_PREFIX_HEADING } from "../../harness/compaction/summarizer.ts";
import { zeroUsage } from "../../harness/session/usage.ts";

// Compaction preparation and the summarizer's requests (reference §6.1–6.3): pure functions over a
// bounded path, tested on hand-built entries.

const settings = (keepRecentTokens: number): CompactionSettings => ({ enabled: true, reserveTokens: 1000, keepRecentTokens });

let seq = 0;
function entry(message: AgentMessage, parentId: string | null = null): Entry {
  seq++;
  return { id: `e${seq}`, parentId, seq, timestamp: seq, type: "message", message };
}
const user = (text: string): AgentMessage => ({ role: "user", content: text, timestamp: 1 });
function assistant(text: string, extra: Partial<AssistantMessage> = {}): AssistantMessage {
  return { role: "assistant", content: [{ type: "text", text }], api: "x", provider: "p", model: "m", usage: zeroUsage(), stopReason: "stop", timestamp: 1, ...extra };
}
const call = (name: string, path: string): AssistantMessage =>
  assistant("", { content: [{ type: "toolCall", id: `c-${name}-${path}`, name, arguments: { path } }], stopReason: "toolUse" });
const result = (name: string): AgentMessage => ({ role: "toolResult", toolCallId: "c", toolName: name, content: [{ type: "text", text: "ok" }], isError: false, timestamp: 1 });

/** 40 characters: 10 estimated tokens. */
const ten = "x".repeat(40);

describe("token estimate", () => {
  it("counts chars/4 per message, images as 4,800 chars, tool calls as name plus JSON arguments", () => {
    expect(estimateMessageTokens(user(ten))).toBe(10);
    expect(estimateMessageTokens({ role: "user", content: [{ type: "image", data: "", mimeType: "image/png" }], timestamp: 1 })).toBe(1200);
    expect(estimateMessageTokens(call("read", "a.ts"))).toBe(Math.ceil(("read".length + JSON.stringify({ path: "a.ts" }).length) / 4));
  });

  it("takes the newest valid assistant usage and estimates only what follows; failed responses do not count", () => {
    const counted = assistant(ten, { usage: { ...zeroUsage(), totalTokens: 500 } });
    const failed = assistant(ten, { usage: { ...zeroUsage(), totalTokens: 9000 }, stopReason: "error" });
    expect(estimateContextTokens([user(ten), counted, user(ten), failed])).toBe(500 + 10 + 10);
    expect(estimateContextTokens([user(ten), user(ten)])).toBe(20);
  });
});

describe("path token estimate (the threshold probe's)", () => {
  it("equals the projected context's estimate; responses kept from before a compaction never anchor it", () => {
    const counted = (text: string, totalTokens: number) => entry(assistant(text, { usage: { ...zeroUsage(), totalTokens } }));
    const plain = [entry(user(ten)), counted(ten, 500), entry(user(ten)), entry(assistant(ten, { stopReason: "error", usage: { ...zeroUsage(), totalTokens: 9000 } }))];
    const compaction: Entry = {
      id: "c1",
      parentId: null,
      seq: 100,
      timestamp: 1,
      type: "compaction",
      summary: ten,
      retainedTail: [assistant(ten, { usage: { ...zeroUsage(), totalTokens: 7000 } })],
      tokensBefore: 7000,
      fromHook: false,
    };
    const compacted = [compaction, entry(user(ten)), counted(ten, 40), entry(user(ten))];
    const unanchored = [compaction, entry(user(ten))];
    for (const path of [plain, compacted, unanchored]) expect(pathTokens(path)).toBe(contextTokens(pathContext(path)));
    expect(pathTokens(plain)).toBe(510);
    expect(pathTokens(compacted)).toBe(50);
    // Summary, the kept response (estimated, not its old count of 7,000) and the new prompt.
    expect(pathTokens(unanchored)).toBe(30);
  });
});

describe("prepareCompaction", () => {
  it("returns nothing to summarize when everything fits in the kept tail", () => {
    const path = [entry(user(ten)), entry(assistant(ten))];
    expect(prepareCompaction(path, settings(1000))).toBeUndefined();
    expect(prepareCompaction([], settings(0))).toBeUndefined();
  });

  it("cuts at a user message: the earlier turns are summarized, the rest kept verbatim", () => {
    const messages = [user(ten), assistant(ten), user(ten), assistant(ten)];
    const prepared = prepareCompaction(messages.map((m) => entry(m)), settings(20));
    expect(prepared).toMatchObject({ isSplitTurn: false, turnPrefixMessages: [], tokensBefore: 40 });
    expect(prepared?.messagesToSummarize).toEqual(messages.slice(0, 2));
    expect(prepared?.retainedTail).toEqual(messages.slice(2));
  });

  it("never cuts at a tool result; a cut inside a turn splits it and keeps the turn's prefix apart", () => {
    const messages = [user(ten), assistant(ten), user(ten), call("read", "a.ts"), result("read"), assistant(ten)];
    // 10 tokens reach the final assistant: a valid cut point inside the second turn.
    const cut = findCut(messages, 10);
    expect(cut).toEqual({ cutIndex: 5, turnStartIndex: 2 });
    // 11 tokens are reached at the tool result (1 token): the cut moves forward to the next valid
    // point, the same assistant; more reach the call itself, a valid point.
    expect(findCut(messages, 11)).toEqual(cut);
    expect(findCut(messages, 12)).toEqual({ cutIndex: 3, turnStartIndex: 2 });
    const prepared = prepareCompaction(messages.map((m) => entry(m)), settings(10));
    expect(prepared?.isSplitTurn).toBe(true);
    expect(prepared?.messagesToSummarize).toEqual(messages.slice(0, 2));
    expect(prepared?.turnPrefixMessages).toEqual(messages.slice(2, 5));
    expect(prepared?.retainedTail).toEqual(messages.slice(5));
  });

  it("works from the newest compaction: its summary is the previous summary, its retained tail part of the context, its files carried", () => {
    const compaction: Entry = {
      id: "c1", parentId: null, seq: 100, timestamp: 100, type: "compaction", summary: "the story so far", retainedTail: [user(ten), assistant(ten)],
      tokensBefore: 999, details: { readFiles: ["old.ts"], modifiedFiles: ["changed.ts"] }, fromHook: false,
    };
    const later = [user(ten), call("edit", "b.ts"), result("edit"), call("read", "old2.ts"), result("read"), user(ten), assistant(ten)];
    const path = [compaction, ...later.map((m) => entry(m))];
    const prepared = prepareCompaction(path, settings(20));
    expect(prepared?.previousSummary).toBe("the story so far");
    expect(prepared?.messagesToSummarize[0]).toEqual(user(ten));
    expect(prepared?.retainedTail).toEqual(later.slice(5));
    expect(prepared?.fileOps).toEqual({ read: ["old.ts", "old2.ts"], written: [], edited: ["b.ts", "changed.ts"] });
    expect(fileDetails(prepared?.fileOps ?? { read: [], written: [], edited: [] })).toEqual({ readFiles: ["old.ts", "old2.ts"], modifiedFiles: ["b.ts", "changed.ts"] });
    // The previous summary counts toward the estimate.
    expect(prepared?.tokensBefore).toBe(Math.ceil("the story so far".length / 4) + 2 * 10 + later.reduce((sum, m) => sum + estimateMessageTokens(m), 0));
  });

  it("a stored cut reconstructs the same preparation from the same path", () => {
    const path = [user(ten), assistant(ten), user(ten), assistant(ten)].map((m) => entry(m));
    const context = pathContext(path);
    const cut = findCut(context.messages, 20);
    const stored = storedPreparation("tip", context, cut);
    expect(reconstructPreparation(stored, path, settings(20))).toEqual(prepareCompaction(path, settings(20)));
  });
});

describe("summarizer requests", () => {
  const messages = [user("build a parser"), assistant("done with the lexer"), user(ten), assistant(ten)];

  it("asks for a fresh structured summary of the conversation as text, with custom instructions", () => {
    const prepared = prepareCompaction(messages.map((m) => entry(m)), settings(20));
    if (!prepared) throw new Error("nothing prepared");
    const requests = summaryRequests(prepared, "focus on the parser");
    expect(requests.map((request) => request.kind)).toEqual(["history"]);
    const context = requests[0]?.context;
    expect(context?.systemPrompt).toBe(SUMMARIZATION_SYSTEM_PROMPT);
    const text = JSON.stringify(context?.messages);
    expect(text).toContain("[User]: build a parser");
    expect(text).toContain("[Assistant]: done with the lexer");
    expect(text).toContain("## Goal");
    expect(text).toContain("Additional focus: focus on the parser");
    expect(text).not.toContain("previous-summary");
  });

  it("updates a previous summary, and summarizes a split turn's prefix in a second request", () => {
    const prepared = {
      ...(prepareCompaction(messages.map((m) => entry(m)), settings(20)) ?? failNothing()),
      previousSummary: "earlier work",
      isSplitTurn: true,
      turnPrefixMessages: [user("the big turn")],
    };
    const requests = summaryRequests(prepared);
    expect(requests.map((request) => request.kind)).toEqual(["history", "turn_prefix"]);
    expect(JSON.stringify(requests[0]?.context.messages)).toContain("<previous-summary>\\nearlier work\\n</previous-summary>");
    expect(JSON.stringify(requests[1]?.context.messages)).toContain("PREFIX of a turn");
    expect(combineSummaries(prepared, [{ kind: "history", text: "H" }, { kind: "turn_prefix", text: "P" }])).toBe(`H${TURN_PREFIX_HEADING}P`);
    // Only a prefix to summarize: the previous summary carries the history.
    expect(combineSummaries({ ...prepared, messagesToSummarize: [] }, [{ kind: "turn_prefix", text: "P" }])).toBe(`earlier work${TURN_PREFIX_HEADING}P`);
  });
});

function failNothing(): never {
  throw new Error("nothing prepared");
}
