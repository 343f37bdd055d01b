import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { call } from "./helpers.ts";
import { objectOf, scriptedLane, tenantWithSession, user } from "./session-helpers.ts";

// Through the API: entry and ledger ids are stored as 16 bytes (QUALITY P3) and every answer names
// them as the same UUID text the writes returned.

type Entry = { id: string; parentId: string | null; message?: { role: string } };
type UsageRow = { id: string; entryId?: string };

describe("ids at rest, through the API", () => {
  it("stores UUID ids as bytes; entries, the branch, one entry and the ledger answer them as text", async () => {
    const { tenantId, sid, key, base } = await tenantWithSession("ids_at_rest");
    await call(`${base}/branches`, { body: { name: "main", at: null }, token: key });
    const posted = await call(`${base}/branches/main/entries`, { body: { message: user("first") }, token: key });
    const { entryId } = await posted.json<{ entryId: string }>();
    await scriptedLane(tenantId, sid, [{ text: "answer" }]);
    expect((await call(`${base}/lanes/main/prompt`, { body: { prompt: "hello" }, token: key })).status).toBe(200);

    const kinds = await runInDurableObject(objectOf(tenantId, sid), (_instance: SessionObject, state) =>
      state.storage.sql
        .exec<{ kind: string }>("SELECT DISTINCT typeof(id) || ':' || length(id) AS kind FROM entries UNION SELECT DISTINCT typeof(id) || ':' || length(id) FROM usage")
        .toArray()
        .map((row) => row.kind),
    );
    expect(kinds).toEqual(["blob:16"]);

    const entries = (await (await call(`${base}/entries`, { token: key })).json<{ items: Entry[] }>()).items;
    expect(entries).toHaveLength(3);
    expect(entries[0]?.id).toBe(entryId);
    for (const entry of entries) expect(entry.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(entries.map((entry) => entry.parentId)).toEqual([null, entries[0]?.id, entries[1]?.id]);
    const branch = (await (await call(`${base}/branches/main/entries`, { token: key })).json<{ items: Entry[] }>()).items;
    expect(branch.map((entry) => entry.id)).toEqual(entries.map((entry) => entry.id).reverse());
    const answer = entries[2];
    expect((await (await call(`${base}/entries/${answer?.id}`, { token: key })).json<Entry>()).id).toBe(answer?.id);
    const ledger = (await (await call(`${base}/usage`, { token: key })).json<{ rows: UsageRow[] }>()).rows;
    expect(ledger).toHaveLength(1);
    expect(ledger[0]?.entryId).toBe(answer?.id);
    expect(ledger[0]?.id).toMatch(/^[0-9a-f]{8}-/);
  });
});
