import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { idText } from "../../durable-objects/session/storage/stored-ids.ts";
import { call } from "./helpers.ts";
import { objectOf, tenantWithSession, user, readTexts } from "./session-helpers.ts";

// An entry's parent is stored once, as the integer link `parent_seq` the branch walk follows; its id
// is read back through that link (QUALITY P3: 36 bytes less per entry, kept forever). Entries an
// earlier build stored with the parent's id text read exactly the same.

type Entry = { id: string; parentId: string | null };

async function sessionWithEntries(prefix: string) {
  const target = await tenantWithSession(prefix);
  const { key, base } = target;
  const post = async (body: unknown) => {
    const response = await call(`${base}/branches/main/entries`, { body, token: key });
    expect(response.status).toBe(201);
    return (await response.json<{ entryId: string }>()).entryId;
  };
  await call(`${base}/branches`, { body: { name: "main", at: null }, token: key });
  const m1 = await post({ message: user("one") });
  const n1 = await post({ customType: "note", data: { n: 1 } });
  const m2 = await post({ message: user("two") });
  return { ...target, ids: { m1, n1, m2 } };
}

/** Every read that answers entries, as raw JSON text. */
async function reads(setup: Awaited<ReturnType<typeof sessionWithEntries>>): Promise<string[]> {
  const paths = [
    `${setup.base}/entries`,
    `${setup.base}/entries?order=desc&limit=2`,
    `${setup.base}/entries?type=custom`,
    `${setup.base}/entries/${setup.ids.m2}`,
    `${setup.base}/branches/main/entries`,
    `${setup.base}/branches/main/entries?order=asc`,
  ];
  return readTexts(paths, setup.key);
}

describe("entry parents at rest", () => {
  it("stores no parent id text; every read answers each entry's parentId", async () => {
    const setup = await sessionWithEntries("parent_link");
    const stored = await runInDurableObject(objectOf(setup.tenantId, setup.sid), (_instance: SessionObject, state) =>
      state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM entries WHERE parent_id IS NOT NULL").one().n,
    );
    expect(stored).toBe(0);
    const { m1, n1, m2 } = setup.ids;
    const all = (await (await call(`${setup.base}/entries`, { token: setup.key })).json<{ items: Entry[] }>()).items;
    expect(all.map(({ id, parentId }) => ({ id, parentId }))).toEqual([
      { id: m1, parentId: null },
      { id: n1, parentId: m1 },
      { id: m2, parentId: n1 },
    ]);
    const one = await (await call(`${setup.base}/entries/${m2}`, { token: setup.key })).json<Entry>();
    expect(one.parentId).toBe(n1);
    const branch = (await (await call(`${setup.base}/branches/main/entries`, { token: setup.key })).json<{ items: Entry[] }>()).items;
    expect(branch.map((entry) => entry.parentId)).toEqual([n1, m1, null]);
  });

  it("entries stored with their parent's id text (the earlier form) read exactly the same", async () => {
    const setup = await sessionWithEntries("parent_text");
    const before = await reads(setup);
    await runInDurableObject(objectOf(setup.tenantId, setup.sid), (_instance: SessionObject, state) => {
      state.storage.sql.exec(`UPDATE entries SET parent_id = (SELECT ${idText("p.id")} FROM entries p WHERE p.seq = entries.parent_seq)`);
      expect(state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM entries WHERE parent_id IS NOT NULL").one().n).toBe(2);
    });
    expect(await reads(setup)).toEqual(before);
  });
});
