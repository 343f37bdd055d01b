import type { Entry } from "../schema/entries.ts";
import type { AgentMessage } from "../schema/messages.ts";

/** How the tree tells entries apart: a CSS class (its shape and colour) and a short name. */
export interface EntryKind {
  className: string;
  name: string;
}

export function entryKind(entry: Entry): EntryKind {
  switch (entry.type) {
    case "message": {
      const role = entry.message.role;
      if (role === "toolResult") return { className: "kind-tool", name: `tool result ${entry.message.toolName}` };
      if (role === "assistant") {
        const { content, stopReason } = entry.message;
        if (content.some((block) => block.type === "toolCall")) return { className: "kind-assistant", name: "assistant (tool calls)" };
        // An answer that did not simply finish says how it ended (aborted, error, deferred, length).
        return { className: "kind-assistant", name: stopReason === "stop" ? "assistant" : `assistant (${stopReason})` };
      }
      if (role === "user") return { className: "kind-user", name: "user" };
      return { className: "kind-other", name: role };
    }
    case "compaction":
      return { className: "kind-compaction", name: "compaction" };
    case "branch_summary":
      return { className: "kind-summary", name: "branch summary" };
    case "custom":
      return { className: "kind-custom", name: `custom ${entry.customType}` };
  }
}

/** The first words of an entry, for the tree's row. */
export function entryPreview(entry: Entry, length = 80): string {
  const text = entry.type === "message" ? messageText(entry.message) : entry.type === "custom" ? JSON.stringify(entry.data ?? null) : entry.summary;
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > length ? `${flat.slice(0, length - 1)}…` : flat;
}

export function messageText(message: AgentMessage): string {
  if (!("content" in message)) return "";
  const content: unknown = message.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block: unknown) => {
      if (typeof block !== "object" || block === null) return "";
      if ("text" in block && typeof block.text === "string") return block.text;
      if ("thinking" in block && typeof block.thinking === "string") return `(thinking) ${block.thinking}`;
      if ("name" in block && typeof block.name === "string") return `→ ${block.name}(…)`;
      return "";
    })
    .filter((part) => part !== "")
    .join(" ");
}
