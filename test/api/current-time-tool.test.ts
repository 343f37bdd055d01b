import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { activate, prompt, putTool, settle } from "./tool-api-helpers.ts";

// docs/tools.md "Builtin tools": `current_time` gives "the current time (ISO 8601, UTC) and the
// Unix time in milliseconds", and the tool's own description tells the model so
// (tools/builtin/clock.ts). A model reads a tool result's `content` only (pi-ai never sends
// `details` to a provider), and the content holds the ISO string alone: the Unix time is only in
// `details`, which the model never sees.

describe("builtin current_time", () => {
  it("the result the model reads holds the Unix time in milliseconds too", async () => {
    const setup = await laneSetup("clock_tool");
    expect((await putTool(setup, "current_time", { kind: "builtin" })).status).toBe(201);
    await useScript(setup, [{ toolCalls: [{ name: "current_time", arguments: {} }] }, { text: "that is the time" }]);
    await activate(setup, ["current_time"]);
    expect((await settle(setup, await prompt(setup))).status).toBe("completed");
    const snapshot = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: LaneSnapshot }>();
    const result = snapshot.snapshot.transcript.flatMap((entry) => (entry.type === "message" && entry.message.role === "toolResult" ? [entry.message] : []))[0];
    expect(result?.isError).toBe(false);
    const details = result?.details as { iso: string; epochMs: number } | undefined;
    expect(typeof details?.epochMs).toBe("number");
    const text = result?.content.map((block) => (block.type === "text" ? block.text : "")).join("\n") ?? "";
    expect(text).toContain(details?.iso ?? "<no iso>");
    expect(text).toContain(String(details?.epochMs));
  });
});
