import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { activate, prompt, putTool, resultTexts, settle } from "./tool-api-helpers.ts";

// docs/tools.md "Builtin tools": values_get / values_set / values_list use "the same ones as
// `…/values/{namespace}/{key}`, with the same addresses: a namespace of 1–256 characters, a key of
// at most 256". The REST routes count characters as JavaScript does (valibot maxLength: UTF-16
// code units, schema/api-sessions.ts KeySchema), the tools' JSON Schema (tools/builtin/values.ts,
// checked by @cfworker/json-schema) counts code points. A key of 200 emoji is 200 code points but
// 400 UTF-16 units: the tool stores it, and no REST path can then read it.

describe("builtin values_set and the REST value addresses, beyond ASCII", () => {
  it("a key the tool stores is one GET …/values/{namespace}/{key} can read (or the tool refuses it)", async () => {
    const setup = await laneSetup("values_emoji");
    expect((await putTool(setup, "values_set", { kind: "builtin" })).status).toBe(201);
    const key = "😀".repeat(200);
    await useScript(setup, [{ toolCalls: [{ name: "values_set", arguments: { namespace: "app", key, value: "blue" } }] }, { text: "stored" }]);
    await activate(setup, ["values_set"]);
    expect((await settle(setup, await prompt(setup))).status).toBe("completed");
    const [result] = await resultTexts(setup);
    if (result?.isError) return; // refused by the tool: consistent with the REST routes
    // Stored by the tool: the REST address of the same key must work.
    const read = await call(`${setup.sessionPath}/values/app/${encodeURIComponent(key)}`, { token: setup.key });
    expect(read.status, await read.clone().text()).toBe(200);
  });
});
