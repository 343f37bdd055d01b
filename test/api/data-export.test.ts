import { describe, expect, it } from "vitest";
import { call, newTenant } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { user } from "./session-helpers.ts";
import { allEntries, exportText, linesOf, newSessionId, send, type EntryBody } from "./data-helpers.ts";

// GET …/export and POST /v1/sessions/import (docs/data.md): the lines, and a round trip.

/** A session with a lane that ran two prompts, a data-only branch, labels, values, a list and an http tool. */
async function richSession(prefix: string) {
  const setup = await laneSetup(prefix);
  const { key, sessionPath, lanePath } = setup;
  const tool = await call(`${sessionPath}/tools/lookup`, {
    method: "PUT",
    body: { kind: "http", description: "Looks things up", parameters: { type: "object", properties: {} }, url: "https://tools.example.com/lookup" },
    token: key,
  });
  expect(tool.status).toBe(201);
  const { secret } = await tool.json<{ secret: string }>();
  for (const text of ["first question", "second question"]) expect((await call(`${lanePath}/prompt`, { body: { prompt: text }, token: key })).status).toBe(200);
  const main = await allEntries(key, setup.sid);
  const [q1, a1] = main;
  if (!q1 || !a1) throw new Error("expected entries");
  expect((await call(`${sessionPath}/branches`, { body: { name: "side", at: a1.id }, token: key })).status).toBe(201);
  const side = await call(`${sessionPath}/branches/side/entries`, { body: { message: user("a side note") }, token: key });
  const sideId = (await side.json<{ entryId: string }>()).entryId;
  expect((await call(`${sessionPath}/entries/${q1.id}/label`, { method: "PUT", body: { label: "start" }, token: key })).status).toBe(200);
  expect((await call(`${sessionPath}/entries/${sideId}/label`, { method: "PUT", body: { label: "aside" }, token: key })).status).toBe(200);
  expect((await call(`${sessionPath}/values/app/colour`, { method: "PUT", body: "blue", token: key })).status).toBe(200);
  for (const n of [1, 2, 3]) expect((await call(`${sessionPath}/lists/app/log`, { body: { n }, token: key })).status).toBe(201);
  expect((await call(sessionPath, { method: "PATCH", body: { name: "rich", metadata: { user: "u1" } }, token: key })).status).toBe(200);
  return { ...setup, q1: q1.id, side: sideId, secret };
}

describe("export", () => {
  it("answers a header, entries in seq order, values, list items, labels, records and an end line; no secret, no pi.* state", async () => {
    const source = await richSession("dxa");
    const text = await exportText(source.key, source.sid);
    const lines = linesOf(text);
    const types = lines.map((line) => line.type);
    expect(types[0]).toBe("session");
    expect(types[types.length - 1]).toBe("end");
    // The sections come in order.
    const order = ["session", "entry", "value", "item", "label", "result", "end"];
    expect(types.map((type) => order.indexOf(type))).toEqual([...types.map((type) => order.indexOf(type))].sort((a, b) => a - b));

    const header = lines[0];
    expect(header).toMatchObject({
      format: "pi-session",
      version: 1,
      id: source.sid,
      name: "rich",
      metadata: { user: "u1" },
      branches: { main: expect.any(String), side: source.side },
      lanes: [{ name: "main", model: expect.any(Object), thinkingLevel: expect.any(String), activeToolNames: expect.any(Array) }],
      tools: { lookup: { kind: "http", description: "Looks things up", url: "https://tools.example.com/lookup", replay: "never" } },
    });
    const entries = lines.filter((line) => line.type === "entry").map((line) => line.entry as EntryBody);
    expect(entries).toEqual(await allEntries(source.key, source.sid));
    expect(lines.filter((line) => line.type === "value")).toEqual([{ type: "value", namespace: "app", key: "colour", value: "blue" }]);
    expect(lines.filter((line) => line.type === "item").map((line) => line.value)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(lines.filter((line) => line.type === "label").map((line) => [line.entryId, line.label]).sort()).toEqual([[source.q1, "start"], [source.side, "aside"]].sort());
    const results = lines.filter((line) => line.type === "result");
    expect(results).toHaveLength(2);
    const record = results[0]?.record as { operationId: string };
    const operation = await call(`${source.lanePath}/operations/${record.operationId}`, { token: source.key });
    expect(operation.status).toBe(200);
    expect(await operation.json()).toMatchObject({ state: "settled", result: record });
    expect(lines[lines.length - 1]).toEqual({ type: "end", entries: entries.length, values: 1, items: 3, labels: 2, results: 2 });
    // Nothing internal: no sealed secret, no hint, no runtime namespace.
    expect(text).not.toMatch(/sealedSecret|secretHint|"pi\.(lane|op|pending|result|capture|tools|branch)/);
    expect(text).not.toContain(source.secret);
    expect(lines.filter((line) => typeof line.namespace === "string" && String(line.namespace).startsWith("pi"))).toEqual([]);
  });

  it("of a session that holds nothing but its settings is its header and an end line", async () => {
    const { key } = await newTenant("dxe");
    const created = await call("/v1/sessions", { body: {}, token: key });
    const { id } = await created.json<{ id: string }>();
    const lines = linesOf(await exportText(key, id));
    expect(lines.map((line) => line.type)).toEqual(["session", "end"]);
    expect(lines[1]).toEqual({ type: "end", entries: 0, values: 0, items: 0, labels: 0, results: 0 });
  });

  it("is 404 for another tenant's session and for one that does not exist", async () => {
    const source = await laneSetup("dxb");
    const other = await laneSetup("dxc");
    expect((await call(`/v1/sessions/${source.sid}/export`, { token: other.key })).status).toBe(404);
    expect((await call(`/v1/sessions/nope_${source.sid}/export`, { token: source.key })).status).toBe(404);
  });
});

describe("import: round trip", () => {
  it("makes a session equal to the original: entries with ids, parents and seqs, branches, lanes, values, lists, labels, settings, tools (new secrets)", async () => {
    const source = await richSession("dxr");
    const text = await exportText(source.key, source.sid);
    const id = newSessionId("imp");
    const response = await send(`/v1/sessions/import?id=${id}`, { body: text, token: source.key });
    expect(response.status).toBe(201);
    const view = await response.json<{ id: string; name: string; metadata: Record<string, string>; toolSecrets?: Record<string, string>; settings: unknown; stats: { messageCount: number } }>();
    expect(view).toMatchObject({ id, name: "rich", metadata: { user: "u1" } });
    expect(view.toolSecrets?.lookup).toMatch(/.{16,}/);
    const original = await (await call(source.sessionPath, { token: source.key })).json<{ settings: unknown; branches: unknown; lanes: unknown; stats: { messageCount: number } }>();
    expect(view.settings).toEqual(original.settings);
    expect(view.stats.messageCount).toBe(original.stats.messageCount);

    expect(await allEntries(source.key, id)).toEqual(await allEntries(source.key, source.sid));
    // The export of the import is the export of the original, but for the session's own id and the records (runs are not imported).
    const again = linesOf(await exportText(source.key, id));
    const before = linesOf(text);
    const comparable = (lines: typeof before) => lines.filter((line) => line.type !== "result" && line.type !== "end").map((line) => (line.type === "session" ? { ...line, id: "x", createdAt: 0 } : line));
    expect(comparable(again)).toEqual(comparable(before));
    expect(again.filter((line) => line.type === "result")).toEqual([]);
    // The session runs on, is listed, and its http tool has the new secret.
    const lanes = await (await call(`/v1/sessions/${id}/lanes/main`, { token: source.key })).json<{ configuration: unknown }>();
    expect(lanes.configuration).toBeDefined();
    expect((await call(`/v1/sessions/${id}/lanes/main/prompt`, { body: { prompt: "third question" }, token: source.key })).status).toBe(200);
    const listing = await (await call("/v1/sessions?limit=100", { token: source.key })).json<{ items: { id: string }[] }>();
    expect(listing.items.map((item) => item.id)).toContain(id);
  });
});
