import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { call, newTenant } from "../test/api/helpers.ts";
import { installStorageTally, rowsWrittenByStatement, storageTally } from "./peer/storage-tally.ts";
import { promptText } from "./node/turn-prompts.ts";
import { bytes, count, type BenchLine } from "./report.ts";

// P12 (cost), our side's counts: what one simple turn, driven through the real front worker
// (`POST …/lanes/main/prompt` on `scripted/echo`), costs in billed units over every object it
// touches. The cost itself is computed by the reporter (bench/cost-row.ts) once the peer's counts
// (server rows) are in.
//
// - Durable Object requests: every method of SessionObject and TenantObject (a simple turn calls
//   no DeferredIndex: it serves deferred tool calls) is wrapped on its prototype (as test/api/prompt-tenant-calls.test.ts does) and counted by name
//   while the turns run; each RPC call on a stub is one billed request.
// - Alarm invocations: after each turn's settlement forward arrived, the session's and the tenant's
//   alarms are run at once (`runDurableObjectAlarm`, true when one was armed). In production an
//   armed alarm fires by itself (the session's safety net, 5 s after a turn), so this is the figure
//   for turns more than 5 s apart, which a conversation with a person is; back-to-back turns share
//   one alarm (DueWork only ever moves it earlier).
// - Rows written and read: the isolate's SQL `exec` and storage `put`/`delete` are tallied
//   (bench/peer/storage-tally.ts, the peer's own instrumentation), so the session, the tenant and
//   the alarms are all counted, SQLite's own `rowsWritten`/`rowsRead`.
// - Retained bytes: growth of every touched object's `databaseSize` over the turns.

const WARMUP = 10;
const TURNS = 200;

/** Calls by "Class.method", counted only while `counting` (the test's own object access is not). */
const calls = new Map<string, number>();
let counting = false;
const callCount = (name: string): number => calls.get(name) ?? 0;
const totalCalls = (): number => [...calls.values()].reduce((sum, value) => sum + value, 0);

/**
 * The object's own calls of its methods, not requests (as in test/api/session-search.test.ts): its
 * alarm (counted from runDurableObjectAlarm instead) and the harness asking how often to send live
 * updates (a private method).
 */
const OWN_WORK = new Set(["constructor", "alarm", "liveUpdateIntervalMs"]);

/** Wraps every method of `instance`'s class but its own work, each call one billed request. */
function countMethodsOf(instance: object, className: string): void {
  const prototype: object = Object.getPrototypeOf(instance);
  if (Reflect.get(prototype, "__costCounted")) return;
  Reflect.set(prototype, "__costCounted", true);
  for (const name of Object.getOwnPropertyNames(prototype)) {
    if (OWN_WORK.has(name)) continue;
    const descriptor = Object.getOwnPropertyDescriptor(prototype, name);
    const original: unknown = descriptor?.value;
    if (typeof original !== "function") continue;
    Reflect.set(prototype, name, function counted(this: unknown, ...args: unknown[]) {
      if (counting) calls.set(`${className}.${name}`, callCount(`${className}.${name}`) + 1);
      return Reflect.apply(original, this, args);
    });
  }
}

const databaseSize = (stub: DurableObjectStub): Promise<number> =>
  runInDurableObject(stub, (_instance: object, state) => state.storage.sql.databaseSize);

async function until(done: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 500 && !done(); attempt++) await new Promise((resolve) => setTimeout(resolve, 5));
  if (!done()) throw new Error("the settlement forward never reached the tenant object");
}

it("P12 (cost): Durable Object requests, alarms, rows written and read, and bytes retained per simple turn, ours", async ({ task }) => {
  const { tenantId, key } = await newTenant("cost");
  const sessionId = "s_cost";
  expect((await call("/v1/sessions", { body: { id: sessionId }, token: key })).status).toBe(201);
  const lane = await call(`/v1/sessions/${sessionId}/lanes/main`, { method: "PUT", body: { model: { provider: "scripted", modelId: "echo" } }, token: key });
  expect(lane.status).toBe(201);
  const session = env.SESSIONS.getByName(`${tenantId}:${sessionId}`);
  const tenant = env.TENANTS.getByName(tenantId);
  await runInDurableObject(session, (instance: object, state) => {
    installStorageTally(state.storage);
    countMethodsOf(instance, "SessionObject");
  });
  await runInDurableObject(tenant, (instance: object) => countMethodsOf(instance, "TenantObject"));

  let alarms = 0;
  let settled = 0;
  const turn = async (index: number): Promise<void> => {
    // The peer's turns (P1) send the same prompt: the two sides' rows and bytes compare like for like.
    const text = promptText(index);
    counting = true;
    const response = await call(`/v1/sessions/${sessionId}/lanes/main/prompt`, { body: { prompt: text }, token: key });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: "completed" });
    settled++;
    await until(() => callCount("TenantObject.operationsSettled") >= settled);
    counting = false;
    for (const stub of [session, tenant]) if (await runDurableObjectAlarm(stub)) alarms++;
  };
  for (let index = 0; index < WARMUP; index++) await turn(index);
  calls.clear();
  settled = 0;
  alarms = 0;
  const sizesBefore = [await databaseSize(session), await databaseSize(tenant)];
  const before = storageTally();
  const statementsBefore = rowsWrittenByStatement();
  for (let index = WARMUP; index < WARMUP + TURNS; index++) await turn(index);
  const after = storageTally();
  const statementsAfter = rowsWrittenByStatement();
  const sizesAfter = [await databaseSize(session), await databaseSize(tenant)];

  const perTurn = (value: number): number => value / TURNS;
  const rpc = perTurn(totalCalls());
  const alarmsPerTurn = perTurn(alarms);
  const rowsWritten = perTurn(after.rowsWritten - before.rowsWritten + after.kvWrites - before.kvWrites);
  const rowsRead = perTurn(after.rowsRead - before.rowsRead);
  const retained = perTurn(sizesAfter.reduce((sum, size, i) => sum + size - (sizesBefore[i] ?? 0), 0));
  const what = "ours: billed units per simple turn (POST …/prompt, scripted/echo), every object";
  const line = (fields: Omit<BenchLine, "id" | "what" | "p95" | "target" | "met" | "samples">): BenchLine => ({ id: "P12", what, p95: "—", target: "—", met: undefined, samples: TURNS, ...fields });
  task.meta.benchLines = [
    line({ case: "Workers requests (the prompt)", median: count(1), key: "ours.cost.workersRequests", value: 1 }),
    line({ case: `Durable Object requests: ${count(rpc)} RPC calls + ${count(alarmsPerTurn)} alarm invocations`, median: count(rpc + alarmsPerTurn), key: "ours.cost.objectRequests", value: rpc + alarmsPerTurn }),
    line({ case: "SQL rows written (SQLite rowsWritten + KV writes, session and tenant, alarms included)", median: count(rowsWritten), key: "ours.cost.rowsWritten", value: rowsWritten }),
    line({ case: "SQL rows read (SQLite rowsRead over every statement, all objects)", median: count(rowsRead), key: "ours.cost.rowsRead", value: rowsRead }),
    line({ case: "bytes retained (databaseSize growth of the session and the tenant objects)", median: bytes(retained), key: "ours.cost.retainedBytes", value: retained }),
  ];
  const breakdown = [...calls].sort((a, b) => a[0].localeCompare(b[0])).map(([name, n]) => `  ${count(n / TURNS)}  ${name}`);
  // Where the rows written go, statement by statement (SQLite's rowsWritten: an index row counts).
  const byStatement = [...statementsAfter]
    .map(([statement, rows]): [string, number] => [statement, perTurn(rows - (statementsBefore.get(statement) ?? 0))])
    .filter(([, rows]) => rows > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([statement, rows]) => `  ${rows.toFixed(2).padStart(6)}  ${statement.length > 110 ? `${statement.slice(0, 107)}...` : statement}`);
  task.meta.benchNotes = [
    {
      id: "P12",
      lines: [
        `Ours, Durable Object calls per turn by method (over ${TURNS} turns after ${WARMUP}), alarms per turn ${count(alarmsPerTurn)} (run right after each turn: turns more than 5 s apart):`,
        ...breakdown,
        "Ours, rows written per turn by statement (session and tenant):",
        ...byStatement,
      ],
    },
  ];
  expect(rpc).toBeGreaterThanOrEqual(1);
});
