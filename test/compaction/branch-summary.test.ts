import { describe, expect, it } from "vitest";
import type { Entry } from "../../schema/entries.ts";
import type { AgentMessage, AssistantMessage } from "../../schema/messages.ts";
import { branchSummaryRequest, prepareBranch } from "../../harness/compaction/branch-summary.ts";
import { estimateMessageTokens } from "../../harness/compaction/tokens.ts";
import { zeroUsage } from "../../harness/session/usage.ts";

// The branch summary's preparation (reference §6.5): the abandoned branch read newest first within
// a token budget, with the files its work touched. Pure functions over hand-built entries.

let seq = 0;
const ids = () => `e${++seq}`;
function message(content: AgentMessage): Entry {
  const id = ids();
  return { id, parentId: null, seq, timestamp: seq, type: "message", message: content };
}
const user = (text: string): AgentMessage => ({ role: "user", content: text, timestamp: 1 });
function assistant(extra: Partial<AssistantMessage>): AssistantMessage {
  return { role: "assistant", content: [], api: "x", provider: "p", model: "m", usage: zeroUsage(), stopReason: "stop", timestamp: 1, ...extra };
}
const call = (name: string, path: string): AgentMessage => assistant({ content: [{ type: "toolCall", id: `c-${path}`, name, arguments: { path } }], stopReason: "toolUse" });
function branchSummary(details: { readFiles: string[]; modifiedFiles: string[] }, fromHook = false): Entry {
  const id = ids();
  return { id, parentId: null, seq, timestamp: seq, type: "branch_summary", fromId: null, summary: "an earlier branch", details, fromHook };
}

describe("branch summary preparation", () => {
  it("carries the file lists of earlier branch summaries on the abandoned branch, also from beyond the budget", () => {
    // Oldest first: a branch summary from an earlier navigation, a long message, then a tool call.
    const oldestFirst: Entry[] = [
      branchSummary({ readFiles: ["docs/old.md"], modifiedFiles: ["src/old.ts"] }),
      branchSummary({ readFiles: ["docs/hooked.md"], modifiedFiles: [] }, true),
      message(user("x".repeat(4000))),
      message(call("read", "src/new.ts")),
    ];
    const preparation = prepareBranch([...oldestFirst].reverse(), 100);
    expect(preparation.truncated).toBe(true);
    expect(preparation.fileOps.read).toEqual(["docs/hooked.md", "docs/old.md", "src/new.ts"]);
    expect(preparation.fileOps.edited).toEqual(["src/old.ts"]);
  });

  it("a newest message larger than the whole budget is summarized from its beginning, not left out", () => {
    const huge = `The plan: rename the billing module. ${"y".repeat(20_000)}`;
    const preparation = prepareBranch([message(user(huge)), message(user("older"))], 1000);
    expect(preparation.truncated).toBe(true);
    expect(preparation.messages).toHaveLength(1);
    const [first] = preparation.messages;
    expect(first?.role).toBe("user");
    expect(preparation.tokensBefore).toBeLessThanOrEqual(1000);
    expect(first && estimateMessageTokens(first)).toBe(preparation.tokensBefore);
    const text = branchSummaryRequest(preparation).context.messages.map((part) => JSON.stringify(part)).join("");
    expect(text).toContain("The plan: rename the billing module.");
    expect(text).toContain("characters left out");
  });

  it("a newest tool call larger than the budget keeps its name and its files", () => {
    const big = assistant({ content: [{ type: "toolCall", id: "c-big", name: "write", arguments: { path: "src/big.ts", content: "z".repeat(20_000) } }], stopReason: "toolUse" });
    const preparation = prepareBranch([message(big)], 500);
    expect(preparation.messages).toHaveLength(1);
    expect(preparation.tokensBefore).toBeLessThanOrEqual(500);
    expect(preparation.fileOps.written).toEqual(["src/big.ts"]);
    expect(conversationOf(preparation)).toContain("write(");
  });
});

function conversationOf(preparation: ReturnType<typeof prepareBranch>): string {
  return branchSummaryRequest(preparation).context.messages.map((part) => JSON.stringify(part)).join("");
}
