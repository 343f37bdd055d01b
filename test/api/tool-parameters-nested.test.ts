import { describe, expect, it } from "vitest";
import { laneSetup } from "./lane-helpers.ts";
import { putTool } from "./tool-api-helpers.ts";

// A tool's `parameters` must be a usable JSON Schema (docs/tools.md: `parameters` must compile;
// docs/api-sessions.md: 400 ValidationFailed for the `parameters` schema), also in its nested
// parts, which running the schema against `{}` never reaches: otherwise the definition would be
// stored and every later call of the tool would fail its argument check instead.

const BAD_NESTED_PATTERN = { type: "object", properties: { q: { type: "string", pattern: "(" } }, required: ["q"] };
const DANGLING_NESTED_REF = { type: "object", properties: { q: { $ref: "#/$defs/missing" } }, required: ["q"] };

describe("tool parameters that do not compile", () => {
  it("a pattern that is not a regular expression, under a property, is refused with 400 like one at the top", async () => {
    const setup = await laneSetup("rvt_pattern");
    const top = await putTool(setup, "top", { kind: "client", description: "top-level bad pattern", parameters: { type: "object", patternProperties: { "(": {} } } });
    const nested = await putTool(setup, "nested", { kind: "client", description: "nested bad pattern", parameters: BAD_NESTED_PATTERN });
    expect({ top: top.status, nested: nested.status }, await nested.clone().text()).toEqual({ top: 400, nested: 400 });
  });

  it("a $ref that resolves nowhere, under a property, is refused with 400", async () => {
    const setup = await laneSetup("rvt_ref");
    const nested = await putTool(setup, "nested", { kind: "client", description: "nested dangling ref", parameters: DANGLING_NESTED_REF });
    expect(nested.status, await nested.clone().text()).toBe(400);
  });
});
