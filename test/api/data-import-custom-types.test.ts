import { describe, expect, it } from "vitest";
import { DEFAULT_SETTINGS } from "../../schema/settings.ts";
import { call, newTenant } from "./helpers.ts";
import { ndjson, newSessionId, send } from "./data-helpers.ts";

// A custom entry's `customType` is bounded to 256 characters on every route that writes or
// filters one (schema/api-sessions.ts CustomTypeSchema), and an import takes no other: a longer one
// would be stored yet never found by `?customType=`, and a huge one (stored inline in its own
// column of the entries row, outside the payload chunking) would meet SQLite's 2 MB row limit in
// the staging transaction, a 500 instead of a 4xx.

const SCRIPTED = { provider: "scripted", modelId: "echo" };

function exportWithCustomEntry(customType: string): string {
  const header = {
    type: "session", format: "pi-session", version: 1, id: "orig", name: null, createdAt: 1, metadata: {},
    settings: DEFAULT_SETTINGS, resources: { skills: {}, promptTemplates: {} }, tools: {},
    branches: { main: "e1" },
    lanes: [{ name: "main", model: SCRIPTED, thinkingLevel: "off", activeToolNames: [] }],
  };
  return ndjson([
    header,
    { type: "entry", entry: { id: "e1", parentId: null, seq: 1, timestamp: 1000, type: "custom", customType, data: { n: 1 } } },
    { type: "end", entries: 1, values: 0, items: 0, labels: 0, results: 0 },
  ]);
}

async function imported(key: string, body: string): Promise<{ status: number; code: string | undefined }> {
  const response = await send(`/v1/sessions/import?id=${newSessionId("rbimp")}`, { body, token: key });
  const answer = await response.json<{ error?: { code: string } }>();
  return { status: response.status, code: answer.error?.code };
}

describe("an imported entry's customType is bounded as on every REST path", () => {
  it("a customType REST refuses (over 256 characters) is refused by an import too (422 InvalidImport), not stored", async () => {
    const { key } = await newTenant("rbimp_ct");
    // The REST twin refuses it.
    const sid = newSessionId("rbimp_rest");
    expect((await call("/v1/sessions", { body: { id: sid }, token: key })).status).toBe(201);
    expect((await call(`/v1/sessions/${sid}/branches`, { body: { name: "b" }, token: key })).status).toBe(201);
    expect((await call(`/v1/sessions/${sid}/branches/b/entries`, { body: { customType: "t".repeat(257) }, token: key })).status).toBe(400);
    // The import takes it.
    expect(await imported(key, exportWithCustomEntry("t".repeat(257)))).toEqual({ status: 422, code: "InvalidImport" });
  });

  // The local runtime does not enforce SQLite's 2 MB string limit and stores it (201); on the
  // platform the staging transaction fails with SQLITE_TOOBIG (a 500). Either way it should be a 4xx.
  it("a customType larger than SQLite's 2 MB string limit is refused with a 4xx before staging", { timeout: 60_000 }, async () => {
    const { key } = await newTenant("rbimp_big");
    const answer = await imported(key, exportWithCustomEntry("t".repeat(3 * 1024 * 1024)));
    expect(answer.status, JSON.stringify(answer)).toBeLessThan(500);
    expect(answer.status).toBeGreaterThanOrEqual(400);
  });
});
