import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// A navigation's `label` is bounded as `PUT …/entries/{id}/label` bounds it (1–1000 characters):
// an empty label is refused, never stored as a label the label API could not have written.

type Entry = { id: string };

describe("a navigation's label", () => {
  it("an empty label is refused (400) and nothing is stored on the target", async () => {
    const setup = await laneSetup("navlb");
    for (const prompt of ["one", "two"]) expect((await call(`${setup.lanePath}/prompt`, { body: { prompt }, token: setup.key })).status).toBe(200);
    const entries = await (await call(`${setup.sessionPath}/branches/main/entries?order=asc`, { token: setup.key })).json<{ items: Entry[] }>();
    const target = entries.items[0]?.id ?? "";
    // The label API refuses it.
    expect((await call(`${setup.sessionPath}/entries/${target}/label`, { method: "PUT", body: { label: "" }, token: setup.key })).status).toBe(400);
    const navigated = await call(`${setup.lanePath}/navigate`, { body: { targetId: target, label: "" }, token: setup.key });
    expect(navigated.status).toBe(400);
    const label = await (await call(`${setup.sessionPath}/entries/${target}/label`, { token: setup.key })).json<{ entryId: string; label: string | null }>();
    expect(label.label).toBeNull();
  });
});
