import { describe, expect, it } from "vitest";
import { IMPORT_SEQ_MAX } from "../../schema/data-export.ts";
import { DEFAULT_SETTINGS } from "../../schema/settings.ts";
import { call, newTenant } from "./helpers.ts";
import { ndjson, newSessionId, send } from "./data-helpers.ts";

// An import is checked like a creation (docs/data.md "Import"): a stream no export would produce,
// and that would leave a session broken, is 422 InvalidImport and creates nothing. Each case below
// was imported before (201) and then failed: the next writes collided on seq (500), an answer
// stayed "streaming" for ever, an entry had an id no route could name.

const SCRIPTED = { provider: "scripted", modelId: "echo" };
const USER = { role: "user", content: "hi", timestamp: 1 };

function stream(entries: { id: string; parentId: string | null; seq: number; message: unknown }[], options: { tip?: string; labels?: { entryId: string; label: string }[] } = {}): string {
  const header = {
    type: "session", format: "pi-session", version: 1, id: "orig", name: null, createdAt: 1, metadata: {},
    settings: DEFAULT_SETTINGS, resources: { skills: {}, promptTemplates: {} }, tools: {},
    branches: { main: options.tip ?? entries.at(-1)?.id ?? null },
    lanes: [{ name: "main", model: SCRIPTED, thinkingLevel: "off", activeToolNames: [] }],
  };
  const labels = options.labels ?? [];
  return ndjson([
    header,
    ...entries.map(({ message, ...entry }) => ({ type: "entry", entry: { ...entry, timestamp: 1000, type: "message", message } })),
    ...labels.map((label) => ({ type: "label", ...label })),
    { type: "end", entries: entries.length, values: 0, items: 0, labels: labels.length, results: 0 },
  ]);
}

async function refused(key: string, body: string): Promise<{ status: number; code?: string; reason?: string; exists: number }> {
  const id = newSessionId("refused");
  const response = await send(`/v1/sessions/import?id=${id}`, { body, token: key });
  const answer = await response.json<{ error?: { code: string; details?: { reason?: string } } }>();
  const exists = (await call(`/v1/sessions/${id}`, { token: key })).status;
  return { status: response.status, ...(answer.error && { code: answer.error.code }), ...(answer.error?.details?.reason !== undefined && { reason: answer.error.details.reason }), exists };
}

describe("an import refuses what no export holds", () => {
  it("an entry seq above 2^48, which would leave later writes no distinct seqs", async () => {
    const { key } = await newTenant("imp_seq");
    expect(await refused(key, stream([{ id: "e1", parentId: null, seq: Number.MAX_SAFE_INTEGER, message: USER }]))).toEqual({ status: 422, code: "InvalidImport", reason: "seq_order", exists: 404 });
    expect(await refused(key, stream([{ id: "e1", parentId: null, seq: IMPORT_SEQ_MAX + 1, message: USER }]))).toMatchObject({ status: 422, reason: "seq_order" });
    // At the bound the session is imported and writes on.
    const id = newSessionId("at_bound");
    const imported = await send(`/v1/sessions/import?id=${id}`, { body: stream([{ id: "e1", parentId: null, seq: IMPORT_SEQ_MAX, message: USER }]), token: key });
    expect(imported.status).toBe(201);
    const appended = await call(`/v1/sessions/${id}/branches/main/entries`, { body: { message: USER }, token: key });
    expect(appended.status).toBe(201);
  });

  it("an assistant message still streaming (stopReason pending), which an append refuses too", async () => {
    const { key } = await newTenant("imp_pending");
    const pending = {
      role: "assistant", content: [{ type: "text", text: "half an ans" }], api: "scripted", provider: "scripted", model: "echo",
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
      stopReason: "pending", timestamp: 2,
    };
    const body = stream([
      { id: "e1", parentId: null, seq: 1, message: USER },
      { id: "e2", parentId: "e1", seq: 2, message: pending },
    ]);
    expect(await refused(key, body)).toEqual({ status: 422, code: "InvalidImport", reason: "pending_assistant", exists: 404 });
  });

  it("an entry id, parent, branch tip or label's entry that is not an id (1–64 of A–Z a–z 0–9 _ -)", async () => {
    const { key } = await newTenant("imp_ids");
    const invalidLine = { status: 422, code: "InvalidImport", reason: "invalid_line", exists: 404 };
    expect(await refused(key, stream([{ id: "a b/c", parentId: null, seq: 1, message: USER }]))).toEqual(invalidLine);
    expect(await refused(key, stream([{ id: "x".repeat(3 * 1024 * 1024), parentId: null, seq: 1, message: USER }]))).toEqual(invalidLine);
    expect(await refused(key, stream([{ id: "e1", parentId: "no/such", seq: 1, message: USER }]))).toEqual(invalidLine);
    expect(await refused(key, stream([{ id: "e1", parentId: null, seq: 1, message: USER }], { tip: "e 1" }))).toEqual(invalidLine);
    expect(await refused(key, stream([{ id: "e1", parentId: null, seq: 1, message: USER }], { labels: [{ entryId: "e 1", label: "x" }] }))).toEqual(invalidLine);
  });
});
