import { describe, expect, it } from "vitest";
import type { Entry } from "../../schema/entries.ts";
import { call } from "./helpers.ts";
import { exportText, newSessionId, send } from "./data-helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { activate, prompt, putTool, resultTexts, settle } from "./tool-api-helpers.ts";

// The builtin `values_list` answers up to 100 values of a namespace (tools/builtin/values.ts), each
// as large as `PUT …/values/{namespace}/{key}` takes (1 MiB of body): 20 values of 900 KB would be a
// result of 18 MB, past the 16 MiB any one entry may be, and the run would never settle. The listing
// stops at 1 MiB and says what it left out.

describe("builtin values_list over large values", () => {
  it("lists as much as one answer may hold, says what it left out, and the run settles", async () => {
    const setup = await laneSetup("rvt_vlist");
    const big = "x".repeat(900_000);
    for (let i = 0; i < 20; i++) {
      const put = await call(`${setup.sessionPath}/values/big/k${String(i).padStart(2, "0")}`, { method: "PUT", body: big, token: setup.key });
      expect(put.status).toBe(200);
    }
    expect((await putTool(setup, "values_list", { kind: "builtin" })).status).toBe(201);
    await useScript(setup, [{ toolCalls: [{ name: "values_list", arguments: { namespace: "big" } }] }, { text: "listed" }]);
    await activate(setup, ["values_list"]);
    const operationId = await prompt(setup);
    // Settled: the scripted model's small window then overflows with the 1 MiB listing, which is
    // that model's limit, not the tool's (its overflow compaction keeps the call and its result, too
    // large for any window, so the transcript may start at a compaction: the branch holds the result).
    expect(["completed", "failed"]).toContain((await settle(setup, operationId)).status);
    const branch = await (await call(`/v1/sessions/${setup.sid}/branches/main/entries?order=asc`, { token: setup.key })).json<{ items: Entry[] }>();
    const [listed] = branch.items.flatMap((entry) =>
      entry.type === "message" && entry.message.role === "toolResult" ? [{ isError: entry.message.isError, text: entry.message.content.map((block) => (block.type === "text" ? block.text : "")).join("") }] : [],
    );
    expect(listed?.isError).toBe(false);
    expect(listed?.text).toContain('19 more value(s) from key "k01" on were left out');
    expect(listed?.text.length).toBeLessThan(1024 * 1024 + 1024);
  });
});

describe("builtin values_set and the REST value addresses", () => {
  it("takes the keys GET …/values/{namespace}/{key} reads and an export carries into an import, and refuses longer ones", async () => {
    const setup = await laneSetup("rvt_values");
    expect((await putTool(setup, "values_set", { kind: "builtin" })).status).toBe(201);
    const key = "k".repeat(256);
    await useScript(setup, [
      {
        toolCalls: [
          { name: "values_set", arguments: { namespace: "app", key, value: "blue" } },
          { name: "values_set", arguments: { namespace: "app", key: `${key}k`, value: "red" } },
          // A key no path can name (URLs drop `.` and `..` segments) is refused too.
          { name: "values_set", arguments: { namespace: "app", key: "..", value: "green" } },
        ],
      },
      { text: "stored" },
    ]);
    await activate(setup, ["values_set"]);
    expect((await settle(setup, await prompt(setup))).status).toBe("completed");
    const [stored, refused, dots] = await resultTexts(setup);
    expect(stored).toEqual({ text: `Set app/${key}`, isError: false });
    expect(refused?.isError).toBe(true);
    expect(dots?.isError).toBe(true);

    const read = await call(`${setup.sessionPath}/values/app/${key}`, { token: setup.key });
    expect(read.status).toBe(200);
    const text = await exportText(setup.key, setup.sid);
    const imported = await send(`/v1/sessions/import?id=${newSessionId("rvt_imp")}`, { body: text, token: setup.key });
    expect(imported.status).toBe(201);
  });
});
