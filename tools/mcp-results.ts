import type { CallToolResult, ContentBlock, EmbeddedResource } from "@modelcontextprotocol/sdk/types.js";
import * as v from "valibot";
import type { ToolContent, ToolOutput } from "../harness/execution/tools.ts";
import { JsonValueSchema } from "../schema/json.ts";

// What a `tools/call` answered, as a tool result the model reads. Text and images pass through;
// an embedded text resource becomes its text, an embedded image its image; what a model cannot
// read (audio, binary resources, links) becomes a line of text saying what it was, so nothing is
// dropped silently. Structured content goes into `details` (and is the text when nothing else is).

/** Content blocks of one result at most (as for http tools). */
const MAX_CONTENT_BLOCKS = 64;

export function toolOutputOf(answer: Pick<CallToolResult, "content" | "structuredContent" | "isError">): ToolOutput {
  const blocks = answer.content;
  const content: ToolContent = blocks.slice(0, MAX_CONTENT_BLOCKS).map(contentOf);
  if (blocks.length > MAX_CONTENT_BLOCKS) content.push({ type: "text", text: `[${blocks.length - MAX_CONTENT_BLOCKS} more content blocks omitted]` });
  const structured = v.safeParse(JsonValueSchema, answer.structuredContent);
  const details = answer.structuredContent !== undefined && structured.success ? { structuredContent: structured.output } : undefined;
  if (content.length === 0) content.push({ type: "text", text: details ? JSON.stringify(details.structuredContent) : "" });
  return { content, ...(answer.isError === true && { isError: true }), ...(details && { details }) };
}

function contentOf(block: ContentBlock): ToolContent[number] {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text };
    case "image":
      return { type: "image", data: block.data, mimeType: block.mimeType };
    case "audio":
      return { type: "text", text: `[audio (${block.mimeType}) omitted]` };
    case "resource_link":
      return { type: "text", text: `Resource link: ${block.uri} (${block.name})` };
    case "resource":
      return resourceOf(block.resource);
  }
}

function resourceOf(resource: EmbeddedResource["resource"]): ToolContent[number] {
  if ("text" in resource) return { type: "text", text: `Resource ${resource.uri}:\n${resource.text}` };
  const mimeType = resource.mimeType ?? "unknown type";
  if (mimeType.startsWith("image/")) return { type: "image", data: resource.blob, mimeType };
  return { type: "text", text: `[binary resource ${resource.uri} (${mimeType}) omitted]` };
}
