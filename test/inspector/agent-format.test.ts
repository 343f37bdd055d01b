import { describe, expect, it } from "vitest";
import { agentVersionText, metadataText } from "../../inspector/agent-format.ts";

// How the Inspector names a session's agent version and shows its metadata.

describe("agent and metadata text", () => {
  it("names an agent version as id @ version", () => {
    expect(agentVersionText({ id: "support", version: 2 })).toBe("support @ 2");
  });

  it("shows metadata pairs in key order, or none", () => {
    expect(metadataText({ user: "u_42", plan: "pro" })).toBe("plan = pro, user = u_42");
    expect(metadataText({})).toBe("none");
  });
});
