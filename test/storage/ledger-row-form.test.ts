import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { migrate } from "../../durable-objects/sql/migrations.ts";
import { SESSION_MIGRATIONS } from "../../durable-objects/session/storage/session-migrations.ts";
import { SqlSessionStorage } from "../../durable-objects/session/storage/sql-session-storage.ts";
import { insertUsage } from "../../harness/session/writes.ts";
import { objectStub, uniqueObjectName, usageOf, usageRow } from "../helpers/storage.ts";

// A ledger row's payload (QUALITY P3): a row without details stores its sparse usage bare, one with
// details wraps it; the wrapped form earlier builds wrote for every row reads the same.

describe("ledger row payloads", () => {
  it("stores a row without details bare and one with details wrapped; both, and the earlier form, read whole", async () => {
    await runInDurableObject(objectStub(uniqueObjectName("ledger_form")), (_instance, state) => {
      migrate(state.storage, SESSION_MIGRATIONS);
      const storage = SqlSessionStorage.create(state.storage, { id: "s", tenantId: "t", createdAt: 1 });
      const plain = usageRow(usageOf({ input: 5, output: 7, totalTokens: 12 }));
      const detailed = usageRow(usageOf({ input: 1, totalTokens: 1 }, { input: 0.5, total: 0.5 }), { details: { source: "summary" } });
      storage.commit([insertUsage(plain), insertUsage(detailed)]);
      const payloads = state.storage.sql.exec<{ payload: string }>("SELECT payload FROM usage ORDER BY seq").toArray().map((row) => row.payload);
      expect(payloads).toEqual([`{"input":5,"output":7,"totalTokens":12}`, `{"usage":{"input":1,"totalTokens":1,"cost":{"input":0.5,"total":0.5}},"details":{"source":"summary"}}`]);
      const read = storage.scanUsage();
      expect(read.map((row) => row.usage)).toEqual([plain.usage, detailed.usage]);
      expect(read.map((row) => row.details)).toEqual([undefined, { source: "summary" }]);

      // The earlier form: every row wrapped.
      state.storage.sql.exec(`UPDATE usage SET payload = '{"usage":' || payload || '}' WHERE payload NOT LIKE '{"usage":%'`);
      expect(SqlSessionStorage.open(state.storage)?.scanUsage()).toEqual(read);
    });
  });
});
