import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { migrate } from "../../durable-objects/sql/migrations.ts";
import { SESSION_MIGRATIONS } from "../../durable-objects/session/storage/session-migrations.ts";
import { SqlSessionStorage } from "../../durable-objects/session/storage/sql-session-storage.ts";
import { idText, storedId } from "../../durable-objects/session/storage/stored-ids.ts";
import { operationResult } from "../../harness/session/builtin-addresses.ts";
import { insertEntry, insertUsage, setValue } from "../../harness/session/writes.ts";
import { assistantMessage, customEntry, messageEntry, newId, objectStub, rerunMigration, uniqueObjectName, usageRow } from "../helpers/storage.ts";

// Entry, ledger and result-record ids in canonical UUID text are stored as their 16 bytes (QUALITY P3); other ids
// as their text. Every read answers the same text; session migration 9 converts earlier text ids.

type IdRow = { kind: string; n: number };

function storedKinds(state: DurableObjectState): Record<string, IdRow[]> {
  const kinds = (column: string, table: string) =>
    state.storage.sql.exec<IdRow>(`SELECT typeof(${column}) || ':' || length(${column}) AS kind, count(*) AS n FROM ${table} WHERE ${column} IS NOT NULL GROUP BY 1 ORDER BY 1`).toArray();
  return { entries: kinds("id", "entries"), usage: kinds("id", "usage"), usageEntries: kinds("entry_id", "usage"), records: kinds("operation_id", "op_results") };
}

/** A small tree and ledger: a path of three entries, a side entry, an other-form id, usage rows. */
function seed(storage: SqlSessionStorage) {
  const root = messageEntry(null);
  const answer = messageEntry(root.id, assistantMessage("a"));
  const note = customEntry(answer.id, "note", { n: 1 });
  const side = messageEntry(root.id);
  const named = customEntry(note.id, "named", null, "not-a-uuid");
  const shouting = customEntry(named.id, "upper", null, "01A2354B-3113-71ED-93B9-8C44DE19DCF1");
  const linked = usageRow(undefined, { entryId: answer.id });
  const loose = usageRow();
  const record = { operationId: newId(), value: { t: answer.id, a: 5, d: 1 } };
  storage.commit([
    insertEntry(root),
    insertEntry(answer),
    insertEntry(note),
    insertEntry(side),
    insertEntry(named),
    insertEntry(shouting),
    insertUsage(linked),
    insertUsage(loose),
    setValue(operationResult(record.operationId), record.value),
    setValue(operationResult("op-named"), { a: 1, d: 0 }),
  ]);
  return { root, answer, note, side, named, shouting, linked, loose, record };
}

/** How `seed` stores its ids: the UUIDs as 16 bytes, the other ids (and the uppercase UUID) as text. */
const SEEDED_KINDS = {
  entries: [
    { kind: "blob:16", n: 4 },
    { kind: "text:10", n: 1 },
    { kind: "text:36", n: 1 },
  ],
  usage: [{ kind: "blob:16", n: 2 }],
  usageEntries: [{ kind: "blob:16", n: 1 }],
  records: [
    { kind: "blob:16", n: 1 },
    { kind: "text:8", n: 1 },
  ],
};

/** Everything the storage answers about ids, for before/after comparisons. */
function readAll(storage: SqlSessionStorage, seeded: ReturnType<typeof seed>) {
  const ids = [seeded.root.id, seeded.answer.id, seeded.note.id, seeded.side.id, seeded.named.id, seeded.shouting.id];
  const found = storage.getEntries([...ids, "01a2354b-0000-7000-8000-000000000000"]);
  return {
    byId: ids.map((id) => found.get(id)),
    scan: storage.scanEntries({}),
    branch: storage.scanBranch({ start: seeded.shouting.id }),
    oldestFirst: storage.scanBranchStructure({ start: seeded.shouting.id, order: "oldestFirst", stopAtId: seeded.note.id }),
    stopped: storage.scanBranchStructure({ start: seeded.shouting.id, stopAtId: seeded.answer.id }),
    usage: storage.scanUsage(),
    record: storage.getValue(operationResult(seeded.record.operationId))?.value,
    records: storage.scanValues(operationResult("")).map((stored) => stored.address.key),
  };
}

describe("ids at rest", () => {
  it("stores canonical UUID ids as 16 bytes and other ids as text; every read answers the same ids", async () => {
    await runInDurableObject(objectStub(uniqueObjectName("binary_ids")), (_instance, state) => {
      migrate(state.storage, SESSION_MIGRATIONS);
      const storage = SqlSessionStorage.create(state.storage, { id: "s", tenantId: "t", createdAt: 1 });
      const seeded = seed(storage);
      expect(storedKinds(state)).toEqual(SEEDED_KINDS);
      const read = readAll(storage, seeded);
      expect(read.record).toEqual(seeded.record.value);
      expect(read.records).toEqual([seeded.record.operationId, "op-named"]);
      expect(read.byId.map((entry) => entry?.id)).toEqual([seeded.root.id, seeded.answer.id, seeded.note.id, seeded.side.id, "not-a-uuid", seeded.shouting.id]);
      expect(read.byId.map((entry) => entry?.parentId)).toEqual([null, seeded.root.id, seeded.answer.id, seeded.root.id, seeded.note.id, "not-a-uuid"]);
      expect(read.branch.map((entry) => entry.id)).toEqual([seeded.shouting.id, "not-a-uuid", seeded.note.id, seeded.answer.id, seeded.root.id]);
      expect(read.oldestFirst.map((entry) => entry.id)).toEqual([seeded.root.id, seeded.answer.id, seeded.note.id]);
      expect(read.stopped.map((entry) => entry.id)).toEqual([seeded.shouting.id, "not-a-uuid", seeded.note.id, seeded.answer.id]);
      expect(read.usage.map((row) => [row.id, row.entryId])).toEqual([
        [seeded.linked.id, seeded.answer.id],
        [seeded.loose.id, undefined],
      ]);
      // An id is claimed once, whatever its stored form.
      expect(() => storage.commit([insertEntry(messageEntry(seeded.root.id, undefined, seeded.answer.id))])).toThrow(/already written/);
      expect(() => storage.commit([insertUsage(usageRow(undefined, { id: seeded.root.id }))])).toThrow(/already written/);
      expect(() => storage.commit([insertEntry(messageEntry("01a2354b-0000-7000-8000-000000000000"))])).toThrow(/does not exist/);
    });
  });

  it("migration 9 converts the text ids an earlier build stored; reads answer the same before and after", async () => {
    await runInDurableObject(objectStub(uniqueObjectName("binary_ids_migration")), (_instance, state) => {
      migrate(state.storage, SESSION_MIGRATIONS);
      const storage = SqlSessionStorage.create(state.storage, { id: "s", tenantId: "t", createdAt: 1 });
      const seeded = seed(storage);
      const expected = readAll(storage, seeded);
      // The rows as the earlier build left them: every id as text, before migration 9.
      state.storage.sql.exec(`UPDATE entries SET id = ${idText("id")}`);
      state.storage.sql.exec(`UPDATE usage SET id = ${idText("id")}, entry_id = ${idText("entry_id")}`);
      state.storage.sql.exec(`UPDATE op_results SET operation_id = ${idText("operation_id")}`);
      expect(storedKinds(state).entries).toEqual([{ kind: "text:10", n: 1 }, { kind: "text:36", n: 5 }]);

      rerunMigration(state.storage, SESSION_MIGRATIONS, "binary_ids");
      expect(storedKinds(state)).toEqual(SEEDED_KINDS);
      const reopened = SqlSessionStorage.open(state.storage);
      expect(reopened && readAll(reopened, seeded)).toEqual(expected);
    });
  });

  it("storedId keeps anything but canonical UUID text as it is", () => {
    expect(storedId("not-a-uuid")).toBe("not-a-uuid");
    expect(storedId("01A2354B-3113-71ED-93B9-8C44DE19DCF1")).toBe("01A2354B-3113-71ED-93B9-8C44DE19DCF1");
    expect(new Uint8Array(storedId("01a2354b-3113-71ed-93b9-8c44de19dcf1") as ArrayBuffer)).toEqual(
      new Uint8Array([0x01, 0xa2, 0x35, 0x4b, 0x31, 0x13, 0x71, 0xed, 0x93, 0xb9, 0x8c, 0x44, 0xde, 0x19, 0xdc, 0xf1]),
    );
  });
});
