import { expect, it } from "vitest";
import { adminToken, call, newTenant } from "../test/api/helpers.ts";
import { FORWARD_COALESCE_MS } from "../durable-objects/session/due-work/settlement-outbox.ts";
import { pollCalls, recordCalls } from "../test/api/tenant-calls.ts";
import { count, ms, summarize, type BenchLine, type BenchNote } from "./report.ts";

// P13: TenantObject calls per request on a warm isolate, through the real front worker, counted on
// the real object (test/api/tenant-calls.ts wraps its RPC methods). Target (QUALITY P13): none for
// authentication and the request quota (the key trusted for KEY_TRUST_MS, requests spent from a
// quota lease); exactly one for a route whose data the tenant object owns; at most one per
// accepted operation (its reservation), the settlement forward after the answer aside.
//
// - Per request kind: REQUESTS sequential requests of one kind after a warm-up, each request's own
//   calls counted (the object's record read before and after it); a prompt's settlement forward
//   (`operationsSettled`, sent after the answer) is awaited and reported apart. A request that
//   takes a new lease (every LEASE_MAX requests) or verifies its key again (every KEY_TRUST_MS) is
//   a cold one: the median and p95 are the warm figure, the mean includes the refills.
// - Per-tenant throughput: SESSIONS sessions of one tenant driven at once, each PROMPTS turns with
//   a read of its session after each, all calls of the tenant object counted by method.

const REQUESTS = 200;
const SESSIONS = 50;
const PROMPTS = 4;

type Kind = { label: string; target: string; atMost: number; atLeast: number; send: (key: string, sessionPath: string) => Promise<Response>; prompt?: true };

const KINDS: Kind[] = [
  { label: "a session's own read (GET /v1/sessions/{sid}): authentication and quota only", target: "0", atLeast: 0, atMost: 0, send: (key, path) => call(path, { token: key }) },
  { label: "a route whose data the tenant object owns (GET /v1/agents)", target: "1", atLeast: 1, atMost: 1, send: (key) => call("/v1/agents", { token: key }) },
  {
    label: "an accepted operation (POST …/lanes/main/prompt, scripted/echo), on the request's path",
    target: "≤ 1",
    atLeast: 0,
    atMost: 1,
    send: (key, path) => call(`${path}/lanes/main/prompt`, { body: { prompt: "hello" }, token: key }),
    prompt: true,
  },
];

async function tenantWithSessions(prefix: string, sessions: number): Promise<{ tenantId: string; key: string; paths: string[] }> {
  const { tenantId, key } = await newTenant(prefix);
  // As an operator raises a busy tenant's quotas (bench/README.md): the defaults are below what the throughput case sends.
  const quotas = await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { requestsPerMinute: 1_000_000, maxOpenOperations: 10_000 }, token: adminToken() });
  expect(quotas.status).toBe(200);
  const paths: string[] = [];
  for (let i = 0; i < sessions; i++) {
    const path = `/v1/sessions/s_${prefix}_${i}`;
    expect((await call("/v1/sessions", { body: { id: `s_${prefix}_${i}` }, token: key })).status).toBe(201);
    expect((await call(`${path}/lanes/main`, { method: "PUT", body: { model: { provider: "scripted", modelId: "echo" } }, token: key })).status).toBe(201);
    paths.push(path);
  }
  return { tenantId, key, paths };
}

it("P13: tenant-object calls per request on a warm isolate, by request kind", async ({ task }) => {
  const { tenantId, key, paths } = await tenantWithSessions("p13", 1);
  const path = paths[0] ?? "";
  const lines: BenchLine[] = [];
  const notes: string[] = [];
  for (const kind of KINDS) {
    expect((await kind.send(key, path)).status).toBeLessThan(300);
    const recorder = await recordCalls(tenantId);
    const perRequest: number[] = [];
    const byMethod = new Map<string, number>();
    let seen = 0;
    let forwards = 0;
    for (let i = 0; i < REQUESTS; i++) {
      const response = await kind.send(key, path);
      expect(response.status).toBeLessThan(300);
      await response.arrayBuffer();
      const calls = kind.prompt ? await pollCalls(recorder.read, (names) => names.filter((name) => name === "operationsSettled").length > forwards) : await recorder.read();
      const mine = calls.slice(seen).filter((name) => name !== "operationsSettled");
      forwards = calls.filter((name) => name === "operationsSettled").length;
      seen = calls.length;
      perRequest.push(mine.length);
      for (const name of mine) byMethod.set(name, (byMethod.get(name) ?? 0) + 1);
    }
    await recorder.stop();
    const summary = summarize(perRequest);
    const mean = perRequest.reduce((a, b) => a + b, 0) / REQUESTS;
    lines.push({
      id: "P13",
      what: "TenantObject calls per request, warm isolate (median, p95; mean with lease refills and key checks in the case)",
      case: `${kind.label}; mean ${count(mean)}`,
      median: count(summary.median),
      p95: count(summary.p95),
      target: kind.target,
      met: summary.median >= kind.atLeast && summary.median <= kind.atMost && summary.p95 <= kind.atMost,
      samples: REQUESTS,
    });
    const methods = [...byMethod].sort((a, b) => a[0].localeCompare(b[0])).map(([name, n]) => `${name} ${count(n / REQUESTS)}`);
    notes.push(`${kind.label}: per request ${methods.join(", ") || "none"}${kind.prompt ? `; after the answer, operationsSettled ${count(forwards / REQUESTS)}` : ""}`);
  }
  task.meta.benchLines = lines;
  task.meta.benchNotes = [{ id: "P13", lines: [`Calls by method over ${REQUESTS} requests of each kind:`, ...notes.map((line) => `  ${line}`)] } satisfies BenchNote];
});

it("P13 (per-tenant throughput): 50 sessions of one tenant driven at once, tenant-object calls per request kind", async ({ task }) => {
  const { tenantId, key, paths } = await tenantWithSessions("p13tp", SESSIONS);
  const recorder = await recordCalls(tenantId);
  const started = performance.now();
  await Promise.all(
    paths.map(async (path) => {
      for (let turn = 0; turn < PROMPTS; turn++) {
        const prompt = await call(`${path}/lanes/main/prompt`, { body: { prompt: `turn ${turn}` }, token: key });
        expect(prompt.status).toBe(200);
        await prompt.arrayBuffer();
        const read = await call(path, { token: key });
        expect(read.status).toBe(200);
        await read.arrayBuffer();
      }
    }),
  );
  const elapsed = performance.now() - started;
  const prompts = SESSIONS * PROMPTS;
  // Every session's last forward: turns settled within FORWARD_COALESCE_MS of each other share one,
  // so how many calls arrive is not known ahead; each has arrived well within four such windows.
  await new Promise((resolve) => setTimeout(resolve, 4 * FORWARD_COALESCE_MS));
  const calls = await recorder.read();
  await recorder.stop();
  const byMethod = new Map<string, number>();
  for (const name of calls) byMethod.set(name, (byMethod.get(name) ?? 0) + 1);
  const of = (name: string): number => byMethod.get(name) ?? 0;
  const requests = prompts * 2;
  const onPath = calls.length - of("operationsSettled");
  const what = `one tenant, ${SESSIONS} sessions at once × ${PROMPTS} turns, each turn a prompt and a read of the session (${requests} requests)`;
  const line = (fields: Pick<BenchLine, "case" | "median" | "target" | "met">): BenchLine => ({ id: "P13", what, p95: "—", samples: requests, ...fields });
  task.meta.benchLines = [
    line({ case: "TenantObject calls on the requests' paths, per request (both kinds)", median: count(onPath / requests), target: "≤ 0.5 (1 per prompt, 0 per read)", met: onPath / requests <= 0.5 }),
    line({ case: "authorizeAndReserve per prompt (the reservation, with the key check)", median: count(of("authorizeAndReserve") / prompts), target: "≤ 1", met: of("authorizeAndReserve") <= prompts }),
    line({ case: "authorizeLease per request (lease refills and key checks)", median: count(of("authorizeLease") / requests), target: "—", met: undefined }),
    line({ case: "operationsSettled per prompt (after the answer)", median: count(of("operationsSettled") / prompts), target: "—", met: undefined }),
    line({ case: `wall time for the ${requests} requests (workerd test pool, one process)`, median: ms(elapsed), target: "—", met: undefined }),
  ];
  const breakdown = [...byMethod].sort((a, b) => a[0].localeCompare(b[0])).map(([name, n]) => `  ${name}: ${n}`);
  task.meta.benchNotes = [{ id: "P13", lines: [`Per-tenant throughput, TenantObject calls by method (${prompts} prompts, ${prompts} reads, ${count((requests / elapsed) * 1000)} requests/s):`, ...breakdown] }];
});
