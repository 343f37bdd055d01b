import { describe, expect, it } from "vitest";
import { FIRST_EXPORT_PAGE, type ExportCounts, type ExportCursor } from "../../durable-objects/session/storage/export-pages.ts";
import { toWire } from "../../schema/wire.ts";
import { call, newTenant } from "./helpers.ts";
import { newSessionId, send } from "./data-helpers.ts";
import { objectOf, user } from "./session-helpers.ts";

// An export is the session as of its header (docs/data.md): entries up to the mark taken then. An
// entry added and labelled while the pages are read is not in it, and neither is its label (a
// label naming an entry the stream does not hold makes the import refuse the stream).

describe("GET …/export while the session is written to", { timeout: 60_000 }, () => {
  it("leaves out the label of an entry added during the download, so the export imports again", async () => {
    const { tenantId, key } = await newTenant("expdw");
    const sid = newSessionId("expdw");
    expect((await call("/v1/sessions", { body: { id: sid }, token: key })).status).toBe(201);
    const base = `/v1/sessions/${sid}`;
    expect((await call(`${base}/branches`, { body: { name: "main", at: null }, token: key })).status).toBe(201);
    expect((await call(`${base}/branches/main/entries`, { body: { message: user("hello") }, token: key })).status).toBe(201);
    expect((await call(`${base}/values/app/colour`, { method: "PUT", body: "blue", token: key })).status).toBeLessThan(300);

    // What GET …/export does (worker/routes/data.ts), with a write between the header and the label page.
    const stub = objectOf(tenantId, sid);
    const begun: { ok: true; value: { header: Record<string, unknown>; highWater: number } } = JSON.parse(await stub.exportBegin());
    const { header, highWater } = begun.value;
    const later = await (await call(`${base}/branches/main/entries`, { body: { message: user("during the download") }, token: key })).json<{ entryId: string }>();
    expect((await call(`${base}/entries/${later.entryId}/label`, { method: "PUT", body: { label: "late" }, token: key })).status).toBe(200);
    const lines: string[] = [JSON.stringify(header)];
    const counts: ExportCounts = { entries: 0, values: 0, items: 0, labels: 0, results: 0 };
    let cursor: ExportCursor | null = FIRST_EXPORT_PAGE;
    while (cursor !== null) {
      const page: { ok: true; value: { lines: string[]; counts: ExportCounts; next: ExportCursor | null } } = JSON.parse(await stub.exportPage(highWater, toWire(cursor)));
      lines.push(...page.value.lines);
      for (const kind of Object.keys(counts) as (keyof ExportCounts)[]) counts[kind] += page.value.counts[kind];
      cursor = page.value.next;
    }
    lines.push(JSON.stringify({ type: "end", ...counts }));
    expect(lines.filter((line) => line.includes(later.entryId))).toEqual([]);

    const imported = await send(`/v1/sessions/import?id=${newSessionId("expdwi")}`, { body: `${lines.join("\n")}\n`, token: key });
    expect(imported.status, await imported.clone().text()).toBe(201);
  });
});
