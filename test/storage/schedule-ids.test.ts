import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DueWork } from "../../durable-objects/session/due-work/due-work.ts";
import { migrate } from "../../durable-objects/sql/migrations.ts";
import { SESSION_MIGRATIONS } from "../../durable-objects/session/storage/session-migrations.ts";
import { idText } from "../../durable-objects/session/storage/stored-ids.ts";
import { newId, objectStub, rerunMigration, uniqueObjectName } from "../helpers/storage.ts";

// The host's schedule rows (due_work, settlement_outbox) key canonical UUID operation ids by their
// 16 bytes, like the session's own ids (QUALITY P3: every turn inserts and deletes one of each);
// other ids stay text. Every read answers the text; session migration 10 converts earlier rows.

type KindRow = { kind: string; n: number };

function storedKinds(state: DurableObjectState): { due: KindRow[]; outbox: KindRow[] } {
  const kinds = (table: string) =>
    state.storage.sql.exec<KindRow>(`SELECT typeof(operation_id) || ':' || length(operation_id) AS kind, count(*) AS n FROM ${table} GROUP BY 1 ORDER BY 1`).toArray();
  return { due: kinds("due_work"), outbox: kinds("settlement_outbox") };
}

const NOW = 1_800_000_000_000;

describe("schedule ids at rest", () => {
  it("stores UUID operation ids as 16 bytes; due, settle, postpone and forward find them by their text", async () => {
    await runInDurableObject(objectStub(uniqueObjectName("schedule_ids")), (_instance, state) => {
      migrate(state.storage, SESSION_MIGRATIONS);
      const schedule = new DueWork(state.storage, () => NOW);
      const [first, second] = [newId(), newId()];
      schedule.due("main", first, NOW + 60_000);
      schedule.due("side", second, NOW + 90_000);
      schedule.due("named", "op-named", NOW + 120_000);
      expect(storedKinds(state).due).toEqual([
        { kind: "blob:16", n: 2 },
        { kind: "text:8", n: 1 },
      ]);
      expect(schedule.all().map((row) => row.operation_id)).toEqual([first, second, "op-named"]);

      schedule.postpone("side", second, 10_000);
      expect(schedule.all().map((row) => [row.operation_id, row.due_at])).toEqual([
        [second, NOW + 10_000],
        [first, NOW + 60_000],
        ["op-named", NOW + 120_000],
      ]);

      schedule.settled("main", first);
      schedule.settled("named", "op-named");
      expect(schedule.all().map((row) => row.operation_id)).toEqual([second]);
      expect(storedKinds(state).outbox).toEqual([
        { kind: "blob:16", n: 1 },
        { kind: "text:8", n: 1 },
      ]);
      expect(schedule.outbox.pending(10).map((row) => [row.operation_id, row.lane])).toEqual([
        [first, "main"],
        ["op-named", "named"],
      ]);
      schedule.outbox.postpone([first], 5_000);
      expect(schedule.outbox.earliest()).toBe(NOW + 5_000);
      schedule.outbox.remove([first, "op-named"]);
      expect(schedule.outbox.pending(10)).toEqual([]);
    });
  });

  it("migration 10 converts the text keys an earlier build left pending; they are found as before", async () => {
    await runInDurableObject(objectStub(uniqueObjectName("schedule_ids_migration")), (_instance, state) => {
      migrate(state.storage, SESSION_MIGRATIONS);
      const schedule = new DueWork(state.storage, () => NOW);
      const [due, settled] = [newId(), newId()];
      schedule.due("main", due, NOW + 60_000);
      schedule.due("side", settled, NOW + 60_000);
      schedule.settled("side", settled);
      // The rows as the earlier build left them: text keys, before migration 10.
      state.storage.sql.exec(`UPDATE due_work SET operation_id = ${idText("operation_id")}`);
      state.storage.sql.exec(`UPDATE settlement_outbox SET operation_id = ${idText("operation_id")}`);
      expect(storedKinds(state)).toEqual({ due: [{ kind: "text:36", n: 1 }], outbox: [{ kind: "text:36", n: 1 }] });

      rerunMigration(state.storage, SESSION_MIGRATIONS, "binary_schedule_ids");
      expect(storedKinds(state)).toEqual({ due: [{ kind: "blob:16", n: 1 }], outbox: [{ kind: "blob:16", n: 1 }] });
      expect(schedule.all().map((row) => row.operation_id)).toEqual([due]);
      schedule.settled("main", due);
      expect(schedule.all()).toEqual([]);
      expect(schedule.outbox.pending(10).map((row) => row.operation_id).sort()).toEqual([due, settled].sort());
      schedule.outbox.remove([due, settled]);
      expect(schedule.outbox.pending(10)).toEqual([]);
    });
  });
});
