import type { ExecutableTool } from "../../harness/execution/tools.ts";

/** `current_time`: the service's clock, for models that otherwise guess the date. */
export function currentTimeTool(description: string | undefined, clock: () => number): ExecutableTool {
  return {
    kind: "executable",
    declaration: {
      name: "current_time",
      kind: "builtin",
      description: description ?? "The current date and time (UTC, ISO 8601) and the Unix time in milliseconds.",
      parameters: { type: "object", properties: {}, additionalProperties: false },
      replay: "safe",
    },
    execute: async () => {
      const now = clock();
      const iso = new Date(now).toISOString();
      // Both in the text: the model reads the content, never `details`.
      return { content: [{ type: "text", text: `${iso} (${now} ms since the Unix epoch)` }], details: { iso, epochMs: now } };
    },
  };
}
