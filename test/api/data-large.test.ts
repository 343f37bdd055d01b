import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { Write } from "../../harness/session/storage.ts";
import { branchTip, entryLabel } from "../../harness/session/builtin-addresses.ts";
import { appendList, insertEntry, setValue } from "../../harness/session/writes.ts";
import { list, value } from "../../harness/session/addresses.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { objectOf } from "./session-helpers.ts";
import { allEntries, exportText, linesOf, newSessionId, send } from "./data-helpers.ts";

// The Show: export → import of a 10,000-entry session with branches equals the original
// (entries with ids, parents and seqs, the tree's branches, values, list items, labels). The
// source is seeded through the session's own commits (runInDurableObject): 10,000 REST appends
// would take minutes, and these are the writes such appends make.

describe("export → import of a large session", () => {
  it("round-trips 10,000 entries on two branches, a chunked entry, values, a list and labels", { timeout: 120_000 }, async () => {
    const source = await laneSetup("dxl");
    const big = "x".repeat(1_500_000);
    await runInDurableObject(objectOf(source.tenantId, source.sid), async (instance: SessionObject) => {
      const session = instance.session();
      let parentId: string | null = null;
      let forkPoint: string | null = null;
      for (let batch = 0; batch < 20; batch++) {
        const writes: Write[] = [];
        for (let index = 0; index < 500; index++) {
          const n = batch * 500 + index;
          const id = session.idGenerator.next();
          // The second half goes on a branch `side` from entry 4,999; `main` ends there.
          const parent = n === 5_000 ? forkPoint : parentId;
          writes.push(insertEntry({ id, parentId: parent, type: "message", message: { role: "user", content: n === 1234 ? big : `entry ${n}`, timestamp: n } }));
          if (n % 1000 === 0) writes.push(setValue(entryLabel(id), `label ${n}`));
          if (n === 4_999) forkPoint = id;
          parentId = id;
        }
        writes.push(setValue(branchTip(batch < 10 ? "main" : "side"), parentId));
        writes.push(appendList(list("app", "log"), { batch }));
        await session.mutate((m) => void m.commit(writes));
      }
      await session.mutate((m) => void m.commit([setValue(value("app", "colour"), "blue")]));
    });
    const text = await exportText(source.key, source.sid);
    const lines = linesOf(text);
    expect(lines.filter((line) => line.type === "entry")).toHaveLength(10_000);

    const id = newSessionId("big");
    const imported = await send(`/v1/sessions/import?id=${id}`, { body: text, token: source.key });
    expect(imported.status).toBe(201);
    const view = await imported.json<{ stats: { messageCount: number }; branches: { name: string; tipId: string | null }[] }>();
    expect(view.stats.messageCount).toBe(10_000);
    const original = await (await call(source.sessionPath, { token: source.key })).json<{ branches: unknown }>();
    expect(view.branches).toEqual(original.branches);
    expect(await allEntries(source.key, id)).toEqual(await allEntries(source.key, source.sid));
    // Values, list items and labels: the import's export says the same as the original's.
    const again = linesOf(await exportText(source.key, id));
    const rest = (all: typeof lines) => all.filter((line) => line.type === "value" || line.type === "item" || line.type === "label");
    expect(rest(again)).toEqual(rest(lines));
    expect(rest(lines).filter((line) => line.type === "label")).toHaveLength(10);
    const branchScan = await (await call(`/v1/sessions/${id}/branches/side/entries?limit=1&order=asc`, { token: source.key })).json<{ items: { id: string }[] }>();
    const originalScan = await (await call(`/v1/sessions/${source.sid}/branches/side/entries?limit=1&order=asc`, { token: source.key })).json<{ items: { id: string }[] }>();
    expect(branchScan.items).toEqual(originalScan.items);
  });
});
