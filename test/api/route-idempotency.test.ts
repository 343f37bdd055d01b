import { beforeAll, describe, expect, it } from "vitest";
import type { OpenApiDocument } from "../../worker/openapi/document.ts";
import { exportText } from "./data-helpers.ts";
import { adminToken, call } from "./helpers.ts";
import { documentRoutes, fillPath, makeResources, takesIdempotencyKey, type DocumentRoute, type Resources } from "./route-fixtures.ts";

// QUALITY R5 over every route of /openapi.json that takes the `Idempotency-Key` parameter: a valid
// request sent twice with one key answers the same status and body (the second marked
// `Idempotency-Replayed: true`) and has one effect, read back through the API; the same key with
// another valid request is 422 IdempotencyConflict and has none. Every creating POST (one that
// answers 201 or 202) without the parameter is listed below with the reason, and a route of either
// kind this file does not know fails the test by name.

let doc: OpenApiDocument;
let r: Resources;
let exported: string;
let lanes = 0;

beforeAll(async () => {
  doc = await (await call("/openapi.json")).json<OpenApiDocument>();
  r = await makeResources("idem");
  exported = await exportText(r.key, r.sid);
}, 60_000);

type Body = { json: unknown } | { ndjson: string };
interface Case {
  /** Path parameters besides the fixtures (a fresh lane, so one case's runs never reach another's count). */
  params?: Record<string, string>;
  query?: string;
  body: Body;
  /** Another valid request under the same key: 422. A string: why the route has none (no body, and the path is the key's scope). */
  other: (Body & { query?: string }) | string;
  /** What the effect is counted by: it grows by `per` for one effect. */
  count: (params: Record<string, string>) => Promise<number>;
  per?: number;
}

const items = async (path: string, token = r.key): Promise<unknown[]> => {
  const response = await call(path, { token });
  if (response.status !== 200) throw new Error(`read ${path}: ${response.status} ${await response.text()}`);
  const body = await response.json<{ items?: unknown[] } | unknown[]>();
  return Array.isArray(body) ? body : (body.items ?? []);
};
const sessionCount = async () => (await items("/v1/sessions?limit=1000")).length;
const entryCount = async () => (await items(`/v1/sessions/${r.sid}/entries?limit=1000`)).length;

/** A fresh lane on the fixture session (its own queue and runs), idle. */
async function freshLane(): Promise<Record<string, string>> {
  const lane = `idem_${lanes++}`;
  const created = await call(`/v1/sessions/${r.sid}/lanes/${lane}`, { method: "PUT", token: r.key });
  if (created.status !== 201) throw new Error(`lane: ${created.status} ${await created.text()}`);
  return { lane };
}

/** A fresh lane holding these turns. */
async function turns(prompts: string[]): Promise<Record<string, string>> {
  const params = await freshLane();
  for (const prompt of prompts) expect((await call(`/v1/sessions/${r.sid}/lanes/${params.lane}/prompt`, { body: { prompt, wait: 10 }, token: r.key })).status).toBe(200);
  return params;
}

/** Entries of the session once the lane is idle again (an accepted run settles first). */
async function entriesWhenIdle(params: Record<string, string>): Promise<number> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const lane = await (await call(`/v1/sessions/${r.sid}/lanes/${params.lane}`, { token: r.key })).json<{ current: unknown; queues: unknown[] }>();
    if (lane.current === null) return entryCount();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`lane ${params.lane} never became idle`);
}

/**
 * A fresh lane busy with a long streamed answer (the scripted model), and the running operation's
 * id: what an abort acts on.
 */
async function busyLane(): Promise<{ params: Record<string, string>; operationId: string }> {
  const params = await freshLane();
  const lanePath = `/v1/sessions/${r.sid}/lanes/${params.lane}`;
  expect((await call(`${lanePath}/config`, { method: "PATCH", body: { model: { provider: "scripted", modelId: "script" } }, token: r.key })).status).toBe(200);
  const words = Array.from({ length: 2000 }, (_, i) => `w${i}`).join(" ");
  expect((await call(`/v1/sessions/${r.sid}/lists/scripted/steps`, { body: { text: words, chunkMs: 30 }, token: r.key })).status).toBe(201);
  const accepted = await call(`${lanePath}/operations`, { body: { kind: "prompt", prompt: "talk" }, token: r.key });
  expect(accepted.status).toBe(202);
  return { params, operationId: (await accepted.json<{ operationId: string }>()).operationId };
}

/** Counts 1 once the operation has ended aborted: the first count (before the abort) does not wait, the next ones wait for the end. */
function abortedCount(operationId: string): (params: Record<string, string>) => Promise<number> {
  let counted = 0;
  return async (params) => {
    const wait = counted++ === 0 ? 0 : 20;
    const view = await (await call(`/v1/sessions/${r.sid}/lanes/${params.lane}/operations/${operationId}?wait=${wait}`, { token: r.key })).json<{ state: string; result?: { status: string } }>();
    return view.state === "settled" && view.result?.status === "aborted" ? 1 : 0;
  };
}

const NO_OTHER_ABORT = "no other request exists under the key: the route takes no body, and its path (the lane, the operation) is the key's scope";

/** Admin tenants named `name`, over every page of the listing. */
async function tenantsNamed(name: string): Promise<number> {
  let found = 0;
  let cursor: string | null = null;
  do {
    const page: { items: { name: string }[]; nextCursor: string | null } = await (await call(`/v1/admin/tenants?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { token: adminToken() })).json();
    found += page.items.filter((tenant) => tenant.name === name).length;
    cursor = page.nextCursor;
  } while (cursor !== null);
  return found;
}

const unique = `${Date.now().toString(36)}`;

/** One case per route taking the key; a route missing here fails by name. */
const CASES: Record<string, () => Promise<Case>> = {
  "POST /v1/admin/tenants": async () => ({ body: { json: { name: `idem ${unique}` } }, other: { json: { name: `idem other ${unique}` } }, count: () => tenantsNamed(`idem ${unique}`) }),
  "POST /v1/admin/tenants/{tenantId}/keys": async () => ({
    body: { json: { name: "replayed" } }, other: { json: { name: "another" } },
    count: async () => (await items(`/v1/admin/tenants/${r.tenantId}/keys?limit=1000`, adminToken())).length,
  }),
  "POST /v1/sessions": async () => ({ body: { json: { name: "once", metadata: { idem: "1" } } }, other: { json: { name: "twice" } }, count: sessionCount }),
  "POST /v1/sessions/{sid}/fork": async () => ({ body: { json: { scope: "tree" } }, other: { json: { scope: "branch", branch: "main" } }, count: sessionCount }),
  "POST /v1/sessions/{sid}/tokens": async () => ({
    body: { json: { scopes: ["watch"], ttlSeconds: 600 } }, other: { json: { scopes: ["prompt"], ttlSeconds: 600 } },
    // A token is signed, not stored: nothing to count; the replay refuses to show it again.
    count: async () => 0, per: 0,
  }),
  "POST /v1/sessions/{sid}/lists/{namespace}/{key}": async () => ({
    body: { json: { step: 2 } }, other: { json: { step: 3 } },
    count: async () => (await items(`/v1/sessions/${r.sid}/lists/app/k?limit=1000`)).length,
  }),
  "POST /v1/sessions/{sid}/branches": async () => ({
    body: { json: { name: "idem_branch", at: null } }, other: { json: { name: "idem_branch_2", at: null } },
    count: async () => (await items(`/v1/sessions/${r.sid}/branches?limit=1000`)).length,
  }),
  "POST /v1/sessions/{sid}/branches/{name}/entries": async () => ({
    body: { json: { customType: "note", data: { n: 1 } } }, other: { json: { customType: "note", data: { n: 2 } } }, count: entryCount,
  }),
  "POST /v1/sessions/import": async () => ({
    query: `?id=${r.sid}_imported`, body: { ndjson: exported }, other: { ndjson: exported, query: `?id=${r.sid}_imported_2` }, count: sessionCount,
  }),
  "POST /v1/imports": async () => ({
    body: { json: {} }, other: { json: { id: `${r.sid}_parts` } },
    // An open import is not listed anywhere: the replay answers its id, and a second one would have another.
    count: async () => 0, per: 0,
  }),
  "POST /v1/sessions/{sid}/lanes/{lane}/entries": async () => ({
    params: await freshLane(), body: { json: { customType: "note", data: { n: 1 } } }, other: { json: { customType: "note", data: { n: 2 } } }, count: entriesWhenIdle,
  }),
  "POST /v1/sessions/{sid}/lanes/{lane}/queue": async () => {
    const params = await freshLane();
    return {
      params, body: { json: { kind: "nextRun", message: "later" } }, other: { json: { kind: "nextRun", message: "other" } },
      count: async () => (await (await call(`/v1/sessions/${r.sid}/lanes/${params.lane}`, { token: r.key })).json<{ queues: unknown[] }>()).queues.length,
    };
  },
  "POST /v1/sessions/{sid}/lanes/{lane}/operations": async () => ({
    params: await freshLane(), body: { json: { kind: "prompt", prompt: "once" } }, other: { json: { kind: "prompt", prompt: "other" } }, count: entriesWhenIdle, per: 2,
  }),
  "POST /v1/sessions/{sid}/lanes/{lane}/prompt": async () => ({
    params: await freshLane(), body: { json: { prompt: "once", wait: 10 } }, other: { json: { prompt: "other", wait: 10 } }, count: entriesWhenIdle, per: 2,
  }),
  "POST /v1/sessions/{sid}/lanes/{lane}/compact": async () => {
    // Settings that keep only the last turn, so two turns leave something to compact.
    const settings = { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } };
    expect((await call(`/v1/sessions/${r.sid}`, { method: "PATCH", body: { settings }, token: r.key })).status).toBe(200);
    const params = await turns(["one", "two"]);
    return { params, body: { json: { customInstructions: "short", wait: 10 } }, other: { json: { customInstructions: "long", wait: 10 } }, count: entriesWhenIdle };
  },
  "POST /v1/sessions/{sid}/lanes/{lane}/navigate": async () => ({
    // Away from a turn, summarized: the summary entry is the navigation's effect.
    params: await turns(["one"]), body: { json: { targetId: r.entryId, summarize: true, wait: 10 } }, other: { json: { targetId: null, wait: 10 } }, count: entriesWhenIdle,
  }),
  "POST /v1/webhooks": async () => ({
    body: { json: { url: "https://hooks.example.com/idem", events: ["schedule.fired"] } }, other: { json: { url: "https://hooks.example.com/other", events: ["schedule.fired"] } },
    count: async () => (await items("/v1/webhooks?limit=1000")).length,
  }),
  "POST /v1/sessions/{sid}/lanes/{lane}/schedules": async () => {
    const params = await freshLane();
    const at = Date.now() + 365 * 24 * 3_600_000;
    return {
      params, body: { json: { at, prompt: "once" } }, other: { json: { at, prompt: "other" } },
      count: async () => (await items(`/v1/sessions/${r.sid}/lanes/${params.lane}/schedules`)).length,
    };
  },
  "POST /v1/sessions/{sid}/lanes/{lane}/abort": async () => {
    const { params, operationId } = await busyLane();
    return { params, query: "?wait=10", body: { json: undefined }, other: NO_OTHER_ABORT, count: abortedCount(operationId) };
  },
  "POST /v1/sessions/{sid}/lanes/{lane}/operations/{opId}/abort": async () => {
    const { params, operationId } = await busyLane();
    return { params: { ...params, opId: operationId }, body: { json: undefined }, other: NO_OTHER_ABORT, count: abortedCount(operationId) };
  },
  "POST /v1/agents": async () => ({
    body: { json: { name: "idem agent", model: { provider: "scripted", modelId: "echo" } } }, other: { json: { name: "other agent", model: { provider: "scripted", modelId: "echo" } } },
    count: async () => (await items("/v1/agents?limit=1000")).length,
  }),
};

/**
 * A replay that answers a documented refusal instead of the first answer: a new key's secret is
 * shown once and stored nowhere (409 KeySecretNotReplayed names the key), so is a browser token and
 * a webhook's signing secret (docs/api-tenants.md, docs/webhooks.md).
 */
const REPLAYED_AS: Record<string, { status: number; code: string }> = {
  "POST /v1/admin/tenants/{tenantId}/keys": { status: 409, code: "KeySecretNotReplayed" },
  "POST /v1/sessions/{sid}/tokens": { status: 409, code: "KeySecretNotReplayed" },
  "POST /v1/webhooks": { status: 409, code: "KeySecretNotReplayed" },
};

/** POSTs answering 201 or 202 without the key, and why a retry is safe without it. */
const WITHOUT_KEY: Record<string, string> = {
  "POST /v1/sessions/{sid}/lanes/{lane}/resume": "makes nothing: it drives the lane's current operation (202 while it runs on), and a repeat drives the same one",
  "POST /v1/imports/{importId}/commit": "a commit is idempotent by itself: a repeat answers the session it made again (docs/data.md \"Import in parts\")",
  "POST /v1/sessions/{sid}/lanes/{lane}/operations/{opId}/tool-results/{toolCallId}": "a tool call takes one result: a second post for the same toolCallId is 409 ToolResultConflict, never placed twice (docs/api-lanes.md)",
};

function send(route: DocumentRoute, c: Case, body: Body & { query?: string }, key: string): Promise<Response> {
  const path = `${fillPath(r, route.template, c.params)}${body.query ?? c.query ?? ""}`;
  const token = route.op["x-auth"] === "admin" ? adminToken() : r.key;
  const headers = { "idempotency-key": key };
  return "json" in body
    ? call(path, { method: route.method, body: body.json, token, headers })
    : call(path, { method: route.method, rawBody: body.ndjson, token, headers: { ...headers, "content-type": "application/x-ndjson" } });
}

const creating = (route: DocumentRoute): boolean => route.method === "POST" && ("201" in route.op.responses || "202" in route.op.responses);

describe("Idempotency-Key over every route that takes it (QUALITY R5)", () => {
  it("every route taking the key has a case here, and every creating POST without it has a reason", () => {
    const routes = documentRoutes(doc);
    const keyed = routes.filter((route) => takesIdempotencyKey(route.op)).map((route) => route.name);
    expect(keyed.filter((name) => !CASES[name]), "routes taking Idempotency-Key without a case in CASES").toEqual([]);
    expect(Object.keys(CASES).filter((name) => !keyed.includes(name)), "CASES of routes that do not take the key").toEqual([]);
    const unkeyed = routes.filter((route) => creating(route) && !takesIdempotencyKey(route.op)).map((route) => route.name);
    expect(unkeyed.filter((name) => !WITHOUT_KEY[name]), "creating POSTs without Idempotency-Key and without a reason in WITHOUT_KEY").toEqual([]);
    expect(Object.keys(WITHOUT_KEY).filter((name) => !unkeyed.includes(name)), "WITHOUT_KEY entries that are no creating POST without the key").toEqual([]);
  });

  it("the same key and request: the same answer, replayed, one effect; the same key and another request: 422, no effect", { timeout: 90_000 }, async () => {
    const problems: string[] = [];
    for (const route of documentRoutes(doc).filter((candidate) => takesIdempotencyKey(candidate.op))) {
      const make = CASES[route.name];
      if (!make) continue;
      const c = await make();
      const params = c.params ?? {};
      const key = `idem-${unique}-${route.name.replace(/[^A-Za-z0-9]+/g, "-")}`;
      const before = await c.count(params);
      const first = await send(route, c, c.body, key);
      const firstText = await first.text();
      if (first.status < 200 || first.status > 299) {
        problems.push(`${route.name}: first answer ${first.status} ${firstText.slice(0, 200)}`);
        continue;
      }
      const second = await send(route, c, c.body, key);
      const secondText = await second.text();
      const replayedAs = REPLAYED_AS[route.name];
      if (replayedAs) {
        if (second.status !== replayedAs.status || !secondText.includes(`"${replayedAs.code}"`)) problems.push(`${route.name}: replay ${second.status} ${secondText.slice(0, 200)}`);
      } else if (second.status !== first.status || secondText !== firstText) {
        problems.push(`${route.name}: replay ${second.status} ${secondText.slice(0, 200)} differs from ${first.status} ${firstText.slice(0, 200)}`);
      }
      if (second.headers.get("idempotency-replayed") !== "true") problems.push(`${route.name}: replay without Idempotency-Replayed: true`);
      const once = await c.count(params);
      if (once - before !== (c.per ?? 1)) problems.push(`${route.name}: effect counted ${once - before} (one effect is ${c.per ?? 1}); first answer ${firstText.slice(0, 300)}`);
      if (typeof c.other === "string") continue;
      const conflict = await send(route, c, c.other, key);
      const conflictText = await conflict.text();
      if (conflict.status !== 422 || !conflictText.includes('"IdempotencyConflict"')) problems.push(`${route.name}: another request under the key answered ${conflict.status} ${conflictText.slice(0, 200)}`);
      if ((await c.count(params)) !== once) problems.push(`${route.name}: the conflicting request had an effect`);
    }
    expect(problems).toEqual([]);
  });
});
