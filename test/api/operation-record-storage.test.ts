import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { LaneSnapshot, OperationResultRecord } from "../../schema/lane.ts";
import type { PromptAnswer } from "../../schema/lane-answers.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { storedId } from "../../durable-objects/session/storage/stored-ids.ts";

// A settled operation's record (QUALITY P3): kept once, in the compact form, in the session's
// `op_results` table, and answered by every API exactly as before; a record an earlier build stored
// (the full JSON in the values table) answers the same.

type Setup = Awaited<ReturnType<typeof laneSetup>>;

async function settledPrompt(setup: Setup, prompt: string): Promise<OperationResultRecord> {
  const response = await call(`${setup.lanePath}/prompt`, { body: { prompt, wait: 10 }, token: setup.key });
  expect(response.status).toBe(200);
  const { messages: _messages, messagesTruncated: _truncated, ...record } = await response.json<PromptAnswer>();
  return record;
}

/** The operation's record and the lane's last result, as the API answers them (raw JSON text). */
async function answers(setup: Setup, operationId: string): Promise<{ operation: string; lastResult: string }> {
  const operation = await call(`${setup.lanePath}/operations/${operationId}`, { token: setup.key });
  expect(operation.status).toBe(200);
  const snapshot = await call(`${setup.lanePath}/snapshot`, { token: setup.key });
  expect(snapshot.status).toBe(200);
  const { lastResult } = (await snapshot.json<{ snapshot: LaneSnapshot }>()).snapshot;
  return { operation: await operation.text(), lastResult: JSON.stringify(lastResult) };
}

const sessionObject = (setup: Setup) => env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`);

describe("operation records at rest", () => {
  it("a settled run's record is stored once, compact, in op_results, and answered whole", async () => {
    const setup = await laneSetup("record_compact");
    const record = await settledPrompt(setup, "hello there");
    const stored = await runInDurableObject(sessionObject(setup), (_instance: SessionObject, state) => ({
      rows: state.storage.sql.exec<{ record: string }>("SELECT record FROM op_results WHERE operation_id = ?", storedId(record.operationId)).toArray(),
      inValues: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM vals WHERE namespace = 'pi.result'").one().n,
    }));
    expect(stored.inValues).toBe(0);
    expect(stored.rows).toHaveLength(1);
    const text = stored.rows[0]?.record ?? "";
    // Neither the operation id (the row's key) nor the defaults (a completed run) are repeated.
    expect(text).not.toContain(record.operationId);
    expect(text).not.toContain("completed");
    const { operationId: _id, ...full } = record;
    expect(text.length).toBeLessThan(JSON.stringify(full).length - 40);
    const answered = await answers(setup, record.operationId);
    expect(answered.operation).toBe(JSON.stringify({ state: "settled", result: record }));
    expect(answered.lastResult).toBe(JSON.stringify(record));
  });

  it("a record stored in the earlier form (full JSON in the values table) answers exactly the same", async () => {
    const setup = await laneSetup("record_earlier");
    const record = await settledPrompt(setup, "from an earlier build");
    const before = await answers(setup, record.operationId);
    await runInDurableObject(sessionObject(setup), (_instance: SessionObject, state) => {
      const { operationId, ...full } = record;
      const sql = state.storage.sql;
      const { seq } = sql.exec<{ seq: number }>("SELECT seq FROM op_results WHERE operation_id = ?", storedId(operationId)).one();
      sql.exec("DELETE FROM op_results WHERE operation_id = ?", storedId(operationId));
      sql.exec("INSERT INTO vals (namespace, key, seq, chunks, value) VALUES ('pi.result', ?, ?, 0, ?)", operationId, seq, JSON.stringify(full));
    });
    await evictDurableObject(sessionObject(setup));
    expect(await answers(setup, record.operationId)).toEqual(before);
    // The lane goes on: the next run settles and is stored in the compact form.
    const next = await settledPrompt(setup, "and now");
    expect(next).toMatchObject({ status: "completed", fromTipId: record.tipId });
    expect((await answers(setup, next.operationId)).lastResult).toBe(JSON.stringify(next));
  });
});
