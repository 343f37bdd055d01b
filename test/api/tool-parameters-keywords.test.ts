import { describe, expect, it } from "vitest";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { activate, prompt, putTool, resultTexts, settle } from "./tool-api-helpers.ts";

// A tool's `parameters` must be a JSON Schema that compiles (docs/tools.md "Tenant tools",
// docs/agents.md; 400 ValidationFailed otherwise), so that "every call's arguments are checked
// against it before anything runs" (docs/tools.md) can happen. The check
// (harness/execution/tool-arguments.ts schemaProblem) walked only some keywords and resolved only
// local `#/…` references: a bad pattern under `propertyNames`, `contains`, `if`/`then`,
// `dependentSchemas`, or a `$ref` to an anchor or another document, was stored, and then every
// call of the tool failed its argument check ("The tool's parameters could not be checked").
// Every keyword that holds a subschema is now walked, and a reference must resolve in the schema.

const PROPERTY_NAMES_BAD_PATTERN = { type: "object", propertyNames: { pattern: "(" }, properties: { q: { type: "string" } } };
const CONTAINS_BAD_PATTERN = { type: "object", properties: { q: { type: "array", contains: { type: "string", pattern: "(" } } } };
const REMOTE_REF = { type: "object", properties: { q: { $ref: "https://schemas.example.com/q.json" } } };
const ANCHOR_REF = { type: "object", properties: { q: { $ref: "#nowhere" } } };

describe("tool parameters that cannot check any call", () => {
  it("a bad pattern under propertyNames or contains, or a $ref that resolves nowhere (anchor, other document), is refused with 400", async () => {
    const setup = await laneSetup("params_kw");
    const statuses: Record<string, number> = {};
    for (const [name, parameters] of Object.entries({ names: PROPERTY_NAMES_BAD_PATTERN, contains: CONTAINS_BAD_PATTERN, remote: REMOTE_REF, anchor: ANCHOR_REF })) {
      statuses[name] = (await putTool(setup, name, { kind: "client", description: name, parameters })).status;
    }
    expect(statuses).toEqual({ names: 400, contains: 400, remote: 400, anchor: 400 });
  });

  it("(consequence) such a stored tool answers every call with an error instead of running it", async () => {
    const setup = await laneSetup("params_kw_run");
    const created = await putTool(setup, "ask", { kind: "client", description: "asks", parameters: PROPERTY_NAMES_BAD_PATTERN });
    if (created.status === 400) return; // refused at definition: the behaviour the first test asks for
    expect(created.status).toBe(201);
    await useScript(setup, [{ toolCalls: [{ name: "ask", arguments: { q: "hello" } }] }, { text: "done" }]);
    await activate(setup, ["ask"]);
    expect((await settle(setup, await prompt(setup))).status).toBe("completed");
    const [result] = await resultTexts(setup);
    // Arguments that satisfy the schema's intent never reach the client: the call fails the check.
    expect(result?.text).not.toContain("could not be checked");
  });
});
