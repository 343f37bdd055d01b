import type { ExecutableTool } from "../../harness/execution/tools.ts";

/** `fail`: always fails with the given message; for exercising error paths on purpose. */
export function failTool(description: string | undefined): ExecutableTool {
  return {
    kind: "executable",
    declaration: {
      name: "fail",
      kind: "builtin",
      description: description ?? "Always fails with the given message (for testing error handling).",
      parameters: { type: "object", properties: { message: { type: "string", maxLength: 1000 } }, additionalProperties: false },
      replay: "safe",
    },
    execute: async (args) => {
      throw new Error(typeof args.message === "string" ? args.message : "The fail tool failed, as it always does");
    },
  };
}
