import { describe, expect, it } from "vitest";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { activate, prompt, putTool, resultTexts, settle } from "./tool-api-helpers.ts";

// `{key}` is one URL path segment, and an empty segment names no route (`…/values/app/` is not
// `/:namespace/:key`): a value stored under the key "" could never be read, replaced or deleted
// over HTTP. So the key is 1–256 characters wherever one is written (docs/api-sessions.md): the
// values tools refuse "" as the routes and an import's lines do.

describe("the empty key", () => {
  it("values_set refuses it: the model reads an error result", async () => {
    const setup = await laneSetup("emptykey");
    expect((await putTool(setup, "values_set", { kind: "builtin" })).status).toBe(201);
    await useScript(setup, [{ toolCalls: [{ name: "values_set", arguments: { namespace: "app", key: "", value: "blue" } }] }, { text: "stored" }]);
    await activate(setup, ["values_set"]);
    expect((await settle(setup, await prompt(setup))).status).toBe("completed");
    const [result] = await resultTexts(setup);
    expect(result?.isError).toBe(true);
  });
});
