import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { DEFAULT_SETTINGS } from "../../schema/settings.ts";
import { call, newTenant } from "./helpers.ts";
import { expectError, objectOf } from "./session-helpers.ts";
import { allEntries, ndjson, newSessionId, send } from "./data-helpers.ts";

// POST /v1/sessions/import and /v1/imports (docs/data.md): refusals that leave nothing, tenancy,
// Idempotency-Key, parts in order, and an abandoned import deleted by its object's alarm.

const SCRIPTED = { provider: "scripted", modelId: "echo" };
const message = (text: string) => ({ role: "user", content: text, timestamp: 1 });

/** A small valid export: two entries on `main`, a lane, a value, an item, a label, an http tool. */
function sample(overrides: { lanes?: unknown[]; entries?: unknown[]; end?: Record<string, number>; extra?: unknown[] } = {}): unknown[] {
  const entries = overrides.entries ?? [
    { id: "e1", parentId: null, seq: 1, timestamp: 1000, type: "message", message: message("hello") },
    { id: "e2", parentId: "e1", seq: 2, timestamp: 1001, type: "message", message: message("again") },
  ];
  const header = {
    type: "session", format: "pi-session", version: 1, id: "orig", name: "sample", createdAt: 1, metadata: { user: "u1" },
    settings: DEFAULT_SETTINGS, resources: { skills: {}, promptTemplates: {} },
    tools: { lookup: { kind: "http", description: "Looks up", parameters: { type: "object" }, url: "https://tools.example.com/x" } },
    branches: { main: "e2" },
    lanes: overrides.lanes ?? [{ name: "main", model: SCRIPTED, thinkingLevel: "off", activeToolNames: ["lookup"] }],
  };
  const data = [
    { type: "value", namespace: "app", key: "colour", value: "blue" },
    { type: "item", namespace: "app", key: "log", value: { n: 1 } },
    { type: "label", entryId: "e1", label: "start" },
  ];
  const end = overrides.end ?? { entries: entries.length, values: 1, items: 1, labels: 1, results: 0 };
  return [header, ...entries.map((entry) => ({ type: "entry", entry })), ...data, ...(overrides.extra ?? []), { type: "end", ...end }];
}

/** Nothing of a refused import is left: the id answers 404 and can be created. */
async function expectNothing(key: string, id: string): Promise<void> {
  expect((await call(`/v1/sessions/${id}`, { token: key })).status).toBe(404);
  expect((await call("/v1/sessions", { body: { id }, token: key })).status).toBe(201);
}

async function importRefused(body: string | ReadableStream<Uint8Array>, status: number, code: string, reason?: string): Promise<void> {
  const { key } = await newTenant("dib");
  const id = newSessionId("bad");
  const response = await send(`/v1/sessions/import?id=${id}`, { body, token: key });
  const text = await response.clone().text();
  await expectError(response, status, code);
  if (reason) expect(JSON.parse(text).error.details.reason, text).toBe(reason);
  await expectNothing(key, id);
}

describe("import: a valid stream", () => {
  it("makes the session, with a new secret for its http tool, listed like a created one", async () => {
    const { key } = await newTenant("dia");
    const id = newSessionId("ok");
    const response = await send(`/v1/sessions/import?id=${id}`, { body: ndjson(sample()), token: key });
    expect(response.status).toBe(201);
    const view = await response.json<{ id: string; name: string; toolSecrets: Record<string, string>; branches: unknown[] }>();
    expect(view).toMatchObject({ id, name: "sample", branches: [{ name: "main", tipId: "e2", lane: true }] });
    expect(view.toolSecrets.lookup).toEqual(expect.any(String));
    expect((await allEntries(key, id)).map((entry) => [entry.id, entry.parentId, entry.seq])).toEqual([["e1", null, 1], ["e2", "e1", 2]]);
    expect(await (await call(`/v1/sessions/${id}/values/app/colour`, { token: key })).json()).toMatchObject({ value: "blue" });
    expect(await (await call(`/v1/sessions/${id}/entries/e1/label`, { token: key })).json()).toMatchObject({ label: "start" });
    const listing = await (await call("/v1/sessions", { token: key })).json<{ items: { id: string; name: string }[] }>();
    expect(listing.items).toContainEqual(expect.objectContaining({ id, name: "sample" }));
  });

  it("does not import result records: the runs are history of the original only", async () => {
    const { key } = await newTenant("dic");
    const id = newSessionId("res");
    const record = { operationId: "0190a0a0-0000-7000-8000-000000000001", kind: "run", status: "completed", fromTipId: null, tipId: "e2", startedAt: 1, endedAt: 2 };
    const body = ndjson(sample({ extra: [{ type: "result", record }], end: { entries: 2, values: 1, items: 1, labels: 1, results: 1 } }));
    expect((await send(`/v1/sessions/import?id=${id}`, { body, token: key })).status).toBe(201);
    await expectError(await call(`/v1/sessions/${id}/lanes/main/operations/${record.operationId}`, { token: key }), 404, "OperationMismatch");
  });
});

describe("import: refusals write nothing", () => {
  it("a malformed line", () => importRefused(`${ndjson(sample()).slice(0, 40)}\n`, 422, "InvalidImport", "malformed"));
  it("an unknown line type", () => importRefused(ndjson([sample()[0], { type: "mystery" }]), 422, "InvalidImport", "invalid_line"));
  it("a first line that is not the header", () => importRefused(ndjson(sample().slice(1)), 422, "InvalidImport", "header_first"));
  it("an entry whose parent is missing", () =>
    importRefused(ndjson(sample({ entries: [{ id: "e1", parentId: "ghost", seq: 1, timestamp: 1, type: "message", message: message("x") }] })), 422, "InvalidImport", "unknown_parent"));
  it("an entry after its child (parents precede)", () =>
    importRefused(
      ndjson(sample({ entries: [
        { id: "e2", parentId: "e1", seq: 1, timestamp: 1, type: "message", message: message("x") },
        { id: "e1", parentId: null, seq: 2, timestamp: 1, type: "message", message: message("y") },
      ] })),
      422, "InvalidImport", "unknown_parent",
    ));
  it("duplicate entry ids", () =>
    importRefused(
      ndjson(sample({ entries: [
        { id: "e1", parentId: null, seq: 1, timestamp: 1, type: "message", message: message("x") },
        { id: "e1", parentId: null, seq: 2, timestamp: 1, type: "message", message: message("y") },
      ] })),
      422, "InvalidImport", "duplicate_id",
    ));
  it("a branch tip the stream does not hold", () =>
    importRefused(ndjson(sample({ entries: [{ id: "e1", parentId: null, seq: 1, timestamp: 1, type: "message", message: message("x") }], end: { entries: 1, values: 1, items: 1, labels: 1, results: 0 } })), 422, "InvalidImport", "unknown_tip"));
  it("a model the tenant cannot use", () => importRefused(ndjson(sample({ lanes: [{ name: "main", model: { provider: "scripted", modelId: "nope" }, thinkingLevel: "off", activeToolNames: [] }] })), 422, "UnknownModel"));
  it("a default model the tenant cannot use", () => {
    const [header, ...rest] = sample();
    return importRefused(ndjson([{ ...(header as object), settings: { ...DEFAULT_SETTINGS, defaultModel: { provider: "scripted", modelId: "nope" } } }, ...rest]), 422, "UnknownModel");
  });
  it("a value in a runtime namespace", () => importRefused(ndjson(sample({ extra: [{ type: "value", namespace: "pi.lane.state", key: "main", value: {} }] })), 422, "InvalidImport", "reserved_namespace"));
  it("more lanes than a session may hold", () => {
    const lanes = Array.from({ length: 101 }, (_, n) => ({ name: `l${n}`, model: SCRIPTED, thinkingLevel: "off", activeToolNames: [] }));
    return importRefused(ndjson(sample({ lanes })), 422, "InvalidImport", "invalid_line");
  });
  it("a stream without its end line (cut short)", () => importRefused(ndjson(sample().slice(0, -1)), 422, "InvalidImport", "incomplete"));
  it("an end line whose counts differ", () => importRefused(ndjson(sample({ end: { entries: 3, values: 1, items: 1, labels: 1, results: 0 } })), 422, "InvalidImport", "counts_differ"));
  it("a line beyond 17 MiB", () => importRefused(`${JSON.stringify(sample()[0])}\n${"x".repeat(17 * 1024 * 1024 + 1)}`, 413, "PayloadTooLarge"));
  it("a body beyond 90 MiB", () => {
    let sent = 0;
    const chunk = new Uint8Array(1024 * 1024).fill(10);
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ > 91) controller.close();
        else controller.enqueue(chunk);
      },
    });
    return importRefused(stream, 413, "PayloadTooLarge");
  });
});

describe("import: tenancy and Idempotency-Key", () => {
  it("another tenant can neither write a part of nor commit your import (404), nor see the session it makes", async () => {
    const mine = await newTenant("did");
    const other = await newTenant("die");
    const begun = await (await call("/v1/imports", { body: {}, token: mine.key })).json<{ importId: string; sessionId: string }>();
    await expectError(await send(`/v1/imports/${begun.importId}/parts/1`, { method: "PUT", body: ndjson(sample()), token: other.key }), 404, "ImportNotFound");
    await expectError(await call(`/v1/imports/${begun.importId}/commit`, { method: "POST", token: other.key }), 404, "ImportNotFound");
    expect((await send(`/v1/imports/${begun.importId}/parts/1`, { method: "PUT", body: ndjson(sample()), token: mine.key })).status).toBe(200);
    expect((await call(`/v1/imports/${begun.importId}/commit`, { method: "POST", token: mine.key })).status).toBe(201);
    expect((await call(`/v1/sessions/${begun.sessionId}`, { token: other.key })).status).toBe(404);
    expect((await call(`/v1/sessions/${begun.sessionId}/export`, { token: other.key })).status).toBe(404);
  });

  it("a repeat of POST /v1/sessions/import with the same key answers the same session, its secrets not again", async () => {
    const { key } = await newTenant("dif");
    const headers = { "idempotency-key": "import-1" };
    const first = await send("/v1/sessions/import", { body: ndjson(sample()), token: key, headers });
    expect(first.status).toBe(201);
    const made = await first.json<{ id: string; toolSecrets?: Record<string, string> }>();
    expect(made.toolSecrets).toBeDefined();
    const again = await send("/v1/sessions/import", { body: ndjson(sample()), token: key, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    const replayed = await again.json<{ id: string; toolSecrets?: unknown }>();
    expect(replayed.id).toBe(made.id);
    expect(replayed.toolSecrets).toBeUndefined();
    const listing = await (await call("/v1/sessions", { token: key })).json<{ items: unknown[] }>();
    expect(listing.items).toHaveLength(1);
    // The key names this request: another `?id=` under it is another request.
    await expectError(await send(`/v1/sessions/import?id=${newSessionId("other")}`, { body: ndjson(sample()), token: key, headers }), 422, "IdempotencyConflict");
  });

  it("a repeat of POST /v1/imports with the same key answers the same import", async () => {
    const { key } = await newTenant("dig");
    const headers = { "idempotency-key": "begin-1" };
    const first = await (await call("/v1/imports", { body: {}, token: key, headers })).json<{ importId: string }>();
    const again = await call("/v1/imports", { body: {}, token: key, headers });
    expect(again.status).toBe(201);
    expect((await again.json<{ importId: string }>()).importId).toBe(first.importId);
  });
});

describe("import in parts", () => {
  it("takes parts in order, a repeated part once, refuses one out of order; nothing is visible before the commit", async () => {
    const { key } = await newTenant("dih");
    const id = newSessionId("parts");
    const begun = await call("/v1/imports", { body: { id }, token: key });
    expect(begun.status).toBe(201);
    const { importId, sessionId } = await begun.json<{ importId: string; sessionId: string }>();
    expect(sessionId).toBe(id);
    const lines = sample();
    const parts = [ndjson(lines.slice(0, 2)), ndjson(lines.slice(2, 5)), ndjson(lines.slice(5))];
    const put = (n: number, body: string) => send(`/v1/imports/${importId}/parts/${n}`, { method: "PUT", body, token: key });

    await expectError(await put(2, parts[1] ?? ""), 409, "ImportPartOutOfOrder");
    // An empty body (or blank lines only) is a broken upload, not a part: refused, it leaves part 1 to come.
    for (const empty of ["", "\n\r\n\n"]) {
      const refused = await put(1, empty);
      expect({ status: refused.status, error: (await refused.json<{ error: { code: string; details: unknown } }>()).error }).toMatchObject({ status: 422, error: { code: "InvalidImport", details: { reason: "empty_part" } } });
    }
    expect(await (await put(1, parts[0] ?? "")).json()).toEqual({ part: 1, lines: 2, repeated: false });
    expect(await (await put(1, parts[0] ?? "")).json()).toEqual({ part: 1, lines: 0, repeated: true });
    // A refused part leaves nothing of it: the same part, fixed, is taken afterwards.
    await expectError(await put(2, `${parts[1] ?? ""}{"type":"mystery"}\n`), 422, "InvalidImport");
    await expectError(await put(3, parts[2] ?? ""), 409, "ImportPartOutOfOrder");
    expect(await (await put(2, parts[1] ?? "")).json()).toEqual({ part: 2, lines: 3, repeated: false });
    // Not yet committed: the session does not exist, and its id is taken.
    await expectError(await call(`/v1/sessions/${id}`, { token: key }), 404, "SessionNotFound");
    await expectError(await call("/v1/sessions", { body: { id }, token: key }), 409, "SessionExists");
    await expectError(await call(`/v1/imports/${importId}/commit`, { method: "POST", token: key }), 422, "InvalidImport");
    expect((await put(3, parts[2] ?? "")).status).toBe(200);

    const committed = await call(`/v1/imports/${importId}/commit`, { method: "POST", token: key });
    expect(committed.status).toBe(201);
    expect(await committed.json()).toMatchObject({ id, name: "sample", toolSecrets: { lookup: expect.any(String) } });
    expect((await allEntries(key, id)).map((entry) => entry.id)).toEqual(["e1", "e2"]);
    // A repeated commit answers the session again, without secrets; no more parts are taken.
    const repeated = await call(`/v1/imports/${importId}/commit`, { method: "POST", token: key });
    expect(repeated.status).toBe(201);
    expect(await repeated.json()).not.toHaveProperty("toolSecrets");
    await expectError(await put(4, ndjson([])), 404, "ImportNotFound");
    const listing = await (await call("/v1/sessions", { token: key })).json<{ items: { id: string }[] }>();
    expect(listing.items.map((item) => item.id)).toEqual([id]);
  });

  it("a part whose upload stopped half-way (the front worker gone) is rolled back when it is sent again", async () => {
    const { tenantId, key } = await newTenant("dij");
    const id = newSessionId("torn");
    const { importId } = await (await call("/v1/imports", { body: { id }, token: key })).json<{ importId: string }>();
    // What an interrupted PUT leaves: part 1 open, some of its lines written, never ended.
    const stub = objectOf(tenantId, id);
    const opened: { ok: true; value: { attempt: string } } = JSON.parse(await stub.importPartBegin(importId, 1));
    const lines = ndjson(sample()).trim().split("\n");
    expect(JSON.parse(await stub.importLines(importId, opened.value.attempt, lines.slice(0, 3)))).toMatchObject({ ok: true });
    // The client sends part 1 again, whole.
    expect(await (await send(`/v1/imports/${importId}/parts/1`, { method: "PUT", body: ndjson(sample()), token: key })).json()).toEqual({ part: 1, lines: lines.length, repeated: false });
    // The stale attempt can write nothing more.
    expect(JSON.parse(await stub.importLines(importId, opened.value.attempt, lines.slice(3)))).toMatchObject({ ok: false, error: { code: "ImportPartOutOfOrder" } });
    expect((await call(`/v1/imports/${importId}/commit`, { method: "POST", token: key })).status).toBe(201);
    expect((await allEntries(key, id)).map((entry) => entry.id)).toEqual(["e1", "e2"]);
  });

  it("an import never committed is deleted by its object's alarm 24 h after it began", async () => {
    const { tenantId, key } = await newTenant("dii");
    const id = newSessionId("gone");
    const begun = await (await call("/v1/imports", { body: { id }, token: key })).json<{ importId: string; expiresAt: number }>();
    expect(begun.expiresAt - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    expect((await send(`/v1/imports/${begun.importId}/parts/1`, { method: "PUT", body: ndjson(sample().slice(0, 3)), token: key })).status).toBe(200);
    const stub = objectOf(tenantId, id);
    // The alarm is armed for the expiry; run early, it keeps the import.
    expect(await runInDurableObject(stub, (_instance: SessionObject, state) => state.storage.getAlarm())).toBe(begun.expiresAt);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await send(`/v1/imports/${begun.importId}/parts/2`, { method: "PUT", body: ndjson(sample().slice(3)), token: key })).status).toBe(200);
    // A day later (the state's clock moved back by a day), the alarm deletes it all.
    await runInDurableObject(stub, (_instance: SessionObject, state) => {
      const row = state.storage.sql.exec<{ value: string }>("SELECT value FROM vals WHERE namespace = 'pi.import' AND key = 'state'").one();
      const staged: { expiresAt: number } = JSON.parse(row.value);
      state.storage.sql.exec("UPDATE vals SET value = ? WHERE namespace = 'pi.import' AND key = 'state'", JSON.stringify({ ...staged, expiresAt: Date.now() - 1 }));
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await expectError(await call(`/v1/imports/${begun.importId}/commit`, { method: "POST", token: key }), 404, "ImportNotFound");
    expect(await runInDurableObject(stub, (_instance: SessionObject, state) => state.storage.sql.exec("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'entries'").one().n)).toBe(0);
    await expectNothing(key, id);
  });
});
