import type { JsonSchema } from "@valibot/to-json-schema";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { ERROR_STATUS, type ErrorCode } from "../../schema/errors.ts";
import type { OpenApiDocument, OpenApiOperation, OpenApiParameter } from "../../worker/openapi/document.ts";
import { MAX_BODY_BYTES } from "../../worker/validate.ts";
import {
  BAD_IDEMPOTENCY_KEYS, BAD_METADATA_FILTERS, BAD_QUERY, NDJSON_BODIES, BAD_SEGMENTS, METHODS, RAW_BODIES, Rng, badAuthHeaders, bodyMutations, junk, nested, nodes, setAt,
} from "./fuzz-generators.ts";
import { adminToken, call, newTenant } from "./helpers.ts";
import { conforms } from "./openapi-helpers.ts";
import { documentRoutes, fillPath, makeResources, missingFixtures, readBack, type Resources } from "./route-fixtures.ts";

// QUALITY R3 (and the auth half of R4): ≥ 10,000 generated malformed, oversized or wrongly typed
// requests across every route of /openapi.json, each a mutation of a valid request that the
// document says must be refused, against a tenant holding one of every resource a path names
// (route-fixtures.ts). Every one must answer 4xx with a documented `{ error: { code } }` at the
// code's status, in the API's words (no validator phrase such as "Expected never"; a 405 carries
// `Allow`), and afterwards everything the tenant reads through every GET route, and the other
// tenant's session list, is exactly as before. Bodies are also sent chunked (no Content-Length),
// far beyond the bound and malformed in odd pieces. A route of the document that gets no case (or
// only unauthenticated ones), or a path parameter without a fixture, fails the run by name.
// Reproduce a run with its seed (printed); change SEED to explore others.

const SEED = 0x5eed_0a03;
const TARGET = 10_400;
const CONCURRENCY = 16;

interface Route { method: string; template: string; op: OpenApiOperation; params: OpenApiParameter[]; body?: { schema: JsonSchema; example: unknown; required: boolean } }
interface Case {
  kind: string; label: string; method: string; path: string; headers: Record<string, string>; body?: string | Uint8Array;
  /** Sent as a stream (chunked, no Content-Length) instead of `body`. */
  stream?: () => ReadableStream<Uint8Array>;
  expect: readonly number[]; op?: OpenApiOperation;
  /** `METHOD /template` of the document's route this request is sent to (none for a wrong method or an unknown path). */
  route?: string;
}

let doc: OpenApiDocument;
let ctx: { r: Resources; key: string; otherKey: string; revokedKey: string };

const components = (): Record<string, JsonSchema> => doc.components.schemas;
const encoder = new TextEncoder();

async function ok<T>(response: Response, status: number): Promise<T> {
  if (response.status !== status) throw new Error(`setup: ${response.status} ${await response.text()}`);
  return response.json<T>();
}

beforeAll(async () => {
  doc = await ok<OpenApiDocument>(await call("/openapi.json"), 200);
  // One of every resource a path names (route-fixtures.ts): every route is fuzzed against a real one.
  const r = await makeResources("fuzz");
  const other = await newTenant("fuzzother");
  // 10,000 requests in a minute are far beyond the default per-tenant quota (429 RateLimited).
  const quotas = "/v1/admin/tenants/{tenantId}/quotas";
  if (doc.paths[quotas]?.patch) {
    for (const { tenantId } of [r, other]) {
      await ok(await call(quotas.replace("{tenantId}", tenantId), { method: "PATCH", body: { requestsPerMinute: 1_000_000 }, token: adminToken() }), 200);
    }
  }
  const spare = await ok<{ keyId: string; key: string }>(await call(`/v1/admin/tenants/${r.tenantId}/keys`, { body: { name: "spare" }, token: adminToken() }), 201);
  expect((await call(`/v1/admin/tenants/${r.tenantId}/keys/${spare.keyId}`, { method: "DELETE", token: adminToken() })).status).toBe(204);
  ctx = { r, key: r.key, otherKey: other.key, revokedKey: spare.key };
}, 60_000);

/**
 * What must not change: everything the tenant can read, through every GET route of the document
 * (route-fixtures.ts readBack), and the other tenant's session list.
 */
async function snapshot(): Promise<Record<string, unknown>> {
  const out = await readBack(doc, ctx.r);
  const otherSessions = await call("/v1/sessions", { token: ctx.otherKey });
  out.otherSessions = { status: otherSessions.status, body: await otherSessions.json() };
  return out;
}

function routesOf(): Route[] {
  return Object.entries(doc.paths).flatMap(([template, item]) =>
    Object.entries(item).map(([method, op]): Route => {
      const media = op.requestBody?.content["application/json"];
      const params = op.parameters.filter((parameter): parameter is OpenApiParameter => !("$ref" in parameter));
      return {
        method: method.toUpperCase(), template, op, params,
        ...(op.requestBody && media?.schema && { body: { schema: media.schema, example: media.example ?? {}, required: op.requestBody.required } }),
      };
    }),
  );
}

const fill = (template: string, override: Record<string, string> = {}): string => fillPath(ctx.r, template, override);

function credentials(route: Route): Record<string, string> {
  const auth = route.op["x-auth"];
  return auth === "none" ? {} : { authorization: `Bearer ${auth === "admin" ? adminToken() : ctx.key}` };
}

/** Whether a parsed body breaks API.md's JSON rules: deeper than `limit`, or a non-finite number. */
function breaksJsonRules(value: unknown, limit = 70): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [node, depth] = item;
    if (typeof node === "number" && !Number.isFinite(node)) return true;
    if (typeof node !== "object" || node === null) continue;
    if (depth >= limit) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}

/** Whether the document (and API.md's JSON rules: finite, ≤ 64 deep, ≤ 1 MiB) refuses this body. */
function refusedBody(route: Route, bytes: string | Uint8Array): boolean {
  if (!route.body) return false;
  const text = typeof bytes === "string" ? bytes : new TextDecoder().decode(bytes);
  if (encoder.encode(text).byteLength > MAX_BODY_BYTES) return true;
  if (text.length === 0) return route.body.required;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return true;
  }
  return breaksJsonRules(parsed) || !conforms(route.body.schema, parsed, components());
}

/** The valid request of a route, for one dimension to be mutated. */
function valid(route: Route, kind: string, label: string, expected: readonly number[]): Case {
  return { kind, label, method: route.method, path: fill(route.template), headers: credentials(route), expect: expected, op: route.op, route: `${route.method} ${route.template}` };
}
const withBody = (c: Case, body: string | Uint8Array, contentType = "application/json"): Case => ({ ...c, body, headers: { ...c.headers, "content-type": contentType } });

function generate(rng: Rng): Case[] {
  const routes = routesOf();
  const cases: Case[] = [];
  const bodyRoutes = routes.filter((route) => route.body);
  const addBody = (route: Route, label: string, text: string | Uint8Array, contentType?: string) => {
    if (refusedBody(route, text)) cases.push(withBody(valid(route, "body", label, [400, 413]), text, contentType));
  };
  for (const route of bodyRoutes) {
    const { example } = route.body ?? { example: {} };
    for (const mutation of bodyMutations(example)) addBody(route, mutation.label, JSON.stringify(mutation.body) ?? "");
    for (const raw of RAW_BODIES) addBody(route, raw.label, raw.bytes);
    for (const { path, value } of nodes(example)) {
      if (typeof value === "number") addBody(route, `${path.join(".")}=1e999`, JSON.stringify(setAt(example, path, "__INF__")).replace("\"__INF__\"", "1e999"));
    }
    for (const raw of ["1e999", "[-1e999]", JSON.stringify(nested(80, "array")), JSON.stringify(nested(90, "object"))]) addBody(route, `json rule ${raw.slice(0, 12)}`, raw);
    for (const bytes of [MAX_BODY_BYTES + 1, 1.5 * 1024 * 1024, 2 * 1024 * 1024]) {
      cases.push(withBody(valid(route, "oversize", `${bytes} bytes`, [413]), JSON.stringify({ pad: "x".repeat(bytes) }).slice(0, bytes)));
    }
    // The same bounds for chunked bodies (no Content-Length): far beyond the bound, just beyond
    // it, and malformed bodies in odd pieces.
    for (const bytes of [MAX_BODY_BYTES + 1, 2 * 1024 * 1024, 16 * 1024 * 1024]) {
      cases.push({ ...valid(route, "chunked", `chunked ${bytes} bytes`, [413]), headers: { ...credentials(route), "content-type": "application/json" }, stream: () => chunkedBody(bytes) });
    }
    for (const raw of RAW_BODIES) {
      if (!refusedBody(route, raw.bytes)) continue;
      const bytes = typeof raw.bytes === "string" ? encoder.encode(raw.bytes) : raw.bytes;
      cases.push({ ...valid(route, "chunked", `chunked ${raw.label}`, [400, 413]), headers: { ...credentials(route), "content-type": "application/json" }, stream: () => piecesOf(bytes) });
    }
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=latin1", ""]) {
      addBody(route, `content-type ${type || "(empty)"}`, "{nope", type);
      addBody(route, `content-type ${type || "(empty)"}, unknown member`, JSON.stringify({ "x-unknown": [1] }), type);
    }
    if (route.op.parameters.some((parameter) => "$ref" in parameter)) {
      for (const key of BAD_IDEMPOTENCY_KEYS) {
        const c = withBody(valid(route, "idempotency", `Idempotency-Key ${JSON.stringify(key)}`, [400]), JSON.stringify(example));
        cases.push({ ...c, headers: { ...c.headers, "idempotency-key": key } });
      }
    }
  }
  // JSON Lines bodies (an import, an import's part): lines that are not an export's.
  for (const route of routes.filter((candidate) => candidate.op.requestBody?.content["application/x-ndjson"])) {
    // 409 ImportPartOutOfOrder: concurrent attempts at one part of an import (the fuzz sends 16 at once) take over from each other.
    for (const raw of NDJSON_BODIES) cases.push(withBody(valid(route, "lines", raw.label, [400, 409, 413, 422]), raw.bytes, "application/x-ndjson"));
  }
  for (const route of routes) {
    const exampleBody = route.body ? JSON.stringify(route.body.example) : undefined;
    const base = (kind: string, label: string, expected: readonly number[]): Case => {
      const c = valid(route, kind, label, expected);
      return exampleBody === undefined ? c : withBody(c, exampleBody);
    };
    for (const parameter of route.params) {
      if (parameter.in === "path") {
        for (const segment of BAD_SEGMENTS) {
          let decoded = segment;
          try {
            decoded = decodeURIComponent(segment);
          } catch { /* kept raw, as the router does */ }
          const reserved = parameter.name === "namespace" && /^pi(\.|$)/.test(decoded);
          if (!reserved && conforms(parameter.schema, decoded, components())) continue;
          cases.push({ ...base("path", `${parameter.name}=${segment.slice(0, 20)}`, [400, 404]), path: fill(route.template, { [parameter.name]: segment }) });
        }
      }
      if (parameter.in === "query" && parameter.name.startsWith("metadata.")) {
        for (const query of BAD_METADATA_FILTERS) cases.push({ ...base("query", query.slice(0, 40), [400]), path: `${fill(route.template)}?${query}` });
      } else if (parameter.in === "query") {
        const bad = parameter.name === "cursor" && route.template === "/v1/sessions" ? ["x".repeat(201)] : BAD_QUERY[parameter.name] ?? [];
        for (const value of bad) {
          const c = base("query", `${parameter.name}=${value.slice(0, 20)}`, [400]);
          cases.push({ ...c, path: `${c.path}?${parameter.name}=${encodeURIComponent(value)}` });
        }
      }
    }
    const auth = route.op["x-auth"];
    if (auth !== "none") {
      const upgrade: Record<string, string> = route.template.endsWith("/watch") ? { upgrade: "websocket" } : {};
      const variants = badAuthHeaders(rng, ctx.key, ctx.revokedKey, adminToken(), auth === "admin");
      // Every unproven admin token counts against the one admin-wide failed-authentication limit
      // (auth-limits.ts), shared by every file of the run: all variants on every admin route
      // would spend half of a minute's allowance and refuse other files' wrong-token tests. One
      // middleware checks them all, so each admin route gets a seeded third of the variants.
      const offset = rng.int(3);
      const chosen = auth === "admin" ? variants.filter((_, index) => index % 3 === offset) : variants;
      for (const variant of chosen) {
        const c = base("auth", variant.label, [401]);
        const { authorization: _, ...rest } = c.headers;
        cases.push({ ...c, headers: { ...rest, ...upgrade, ...variant.headers } });
      }
      if (auth === "tenant" && route.template.includes("{sid}")) {
        const c = base("other-tenant", "another tenant's key", [404]);
        cases.push({ ...c, headers: { ...c.headers, ...upgrade, authorization: `Bearer ${ctx.otherKey}` } });
      }
    }
  }
  for (const [template, item] of Object.entries(doc.paths)) {
    const route = routes.find((candidate) => candidate.template === template);
    if (!route) continue;
    for (const method of METHODS.filter((method) => !(method.toLowerCase() in item))) {
      const c: Case = { kind: "method", label: `${method} ${template}`, method, path: fill(template), headers: credentials(route), expect: [405] };
      cases.push(method === "GET" ? c : withBody(c, "{}"));
    }
  }
  for (const path of ["/", "/v1", "/v2/me", "/v1/nope", "/v1/admin", `/v1/sessions/${ctx.r.sid}/nope`, `/v1/sessions/${ctx.r.sid}/lanes/main/nope`, `/v1/sessions/${ctx.r.sid}/forks`, "/health/x", "/openapi.json/x"]) {
    for (const method of ["GET", "POST", "DELETE"]) {
      // Under /v1/admin the admin token is checked first: a tenant key is 401 there, route or not.
      const c: Case = { kind: "unknown-route", label: `${method} ${path}`, method, path, headers: { authorization: `Bearer ${ctx.key}` }, expect: path.startsWith("/v1/admin") ? [401] : [404] };
      cases.push(method === "GET" ? c : withBody(c, "{}"));
    }
  }
  // Random fill: several random mutations at once on a random body route, kept when refused.
  while (cases.length < TARGET) {
    const route = rng.pick(bodyRoutes);
    let body: unknown = route.body?.example;
    for (let i = 1 + rng.int(3); i > 0; i--) body = setAt(body, rng.pick(nodes(body)).path, junk(rng));
    if (rng.next() < 0.3) body = setAt(body, [`x-${rng.int(1000)}`], junk(rng));
    addBody(route, `random ${cases.length}`, JSON.stringify(body) ?? "");
  }
  return cases;
}

/**
 * Routes of the document the generated cases leave out: one with no case at all, or one that takes
 * input (a path or query parameter, a body) without a case past authentication. Either fails the
 * run by name, so a route added later is fuzzed or the run says why not.
 */
function unreached(cases: readonly Case[]): string[] {
  const kinds = new Map<string, Set<string>>();
  for (const c of cases) if (c.route) kinds.set(c.route, (kinds.get(c.route) ?? new Set()).add(c.kind));
  const wrongMethodPaths = new Set(cases.filter((c) => c.kind === "method").map((c) => c.path));
  return documentRoutes(doc).flatMap((route) => {
    const reached = kinds.get(route.name);
    const takesInput = route.op.parameters.length > 0 || route.op.requestBody !== undefined;
    // A public route without input (/health, /openapi.json, /docs) has nothing to refuse but its wrong methods.
    if (!reached && !takesInput && route.op["x-auth"] === "none" && wrongMethodPaths.has(route.template)) return [];
    if (!reached) return [`${route.name}: no case`];
    return takesInput && [...reached].every((kind) => kind === "auth") ? [`${route.name}: only unauthenticated cases`] : [];
  });
}

const isErrorCode = (code: unknown): code is ErrorCode => typeof code === "string" && Object.hasOwn(ERROR_STATUS, code);

/** `bytes` of an unterminated JSON string, produced 64 KiB at a time as the server reads. */
function chunkedBody(bytes: number): ReadableStream<Uint8Array> {
  const piece = encoder.encode(`"${"x".repeat(64 * 1024 - 1)}`);
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      const next = piece.subarray(0, Math.min(piece.byteLength, bytes - sent));
      sent += next.byteLength;
      controller.enqueue(next);
    },
  });
}

/** `bytes` in pieces of 1, 2, 3, … bytes, so multi-byte characters and tokens straddle pieces. */
function piecesOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (let offset = 0, size = 1; offset < bytes.byteLength; offset += size, size++) controller.enqueue(bytes.slice(offset, offset + size));
      controller.close();
    },
  });
}

async function send(c: Case): Promise<Response> {
  const body = c.stream ? c.stream() : c.body;
  return exports.default.fetch(`http://api.test${c.path}`, { method: c.method, headers: c.headers, ...(body !== undefined && { body }) });
}

/** The validator's own phrases, which must never reach a user (API words instead). */
const VALIDATOR_WORDS = [/expected never/i, /Expected Object but received Object/, /\(body\)/, /Invalid key:/, /Invalid type:/];

/** The first problem with an answer, or undefined when it is a documented refusal. */
async function problem(c: Case, response: Response): Promise<string | undefined> {
  const text = await response.text();
  if (!c.expect.includes(response.status)) return `status ${response.status} (expected ${c.expect.join("/")}): ${text.slice(0, 200)}`;
  let code: unknown;
  try {
    const body: unknown = JSON.parse(text);
    code = typeof body === "object" && body !== null && "error" in body && typeof body.error === "object" && body.error !== null && "code" in body.error ? body.error.code : undefined;
  } catch {
    return `not JSON: ${text.slice(0, 200)}`;
  }
  const leaked = VALIDATOR_WORDS.find((words) => words.test(text));
  if (leaked) return `validator words ${leaked} in ${text.slice(0, 300)}`;
  if (response.status === 405 && !response.headers.get("allow")) return "405 without Allow";
  if (!isErrorCode(code)) return `undocumented code ${String(code)}`;
  const documented = Object.entries(c.op?.responses ?? {}).find(([, answer]) => answer["x-error-codes"]?.some((named) => named === code));
  const status = documented ? Number(documented[0]) : ERROR_STATUS[code];
  if (response.status !== status) return `${code} answered ${response.status}, documented ${status}`;
  if (c.op && !documented && code !== "NotFound") return `${code} is not among the route's documented codes`;
  if (!response.headers.get("content-type")?.startsWith("application/json")) return `content-type ${response.headers.get("content-type")}`;
  return undefined;
}

describe("fuzz (QUALITY R3)", () => {
  it(`≥ 10,000 generated invalid requests: zero 5xx, only documented 4xx, no state change (seed ${SEED})`, { timeout: 180_000 }, async () => {
    console.log(`fuzz seed ${SEED} (0x${SEED.toString(16)})`);
    const before = await snapshot();
    const noFixture = documentRoutes(doc).flatMap((route) => missingFixtures(ctx.r, route.template).map((param) => `${route.name}: ${param}`));
    expect(noFixture, "path parameters without a fixture in test/api/route-fixtures.ts").toEqual([]);
    const cases = generate(new Rng(SEED));
    expect(cases.length).toBeGreaterThanOrEqual(10_000);
    expect(unreached(cases), "routes of /openapi.json the fuzz did not exercise").toEqual([]);
    const failures: string[] = [];
    const byKind = new Map<string, number>();
    let next = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < cases.length) {
        const c = cases[next++];
        if (!c) break;
        byKind.set(c.kind, (byKind.get(c.kind) ?? 0) + 1);
        const found = await problem(c, await send(c));
        if (found) failures.push(`${c.kind} ${c.method} ${c.path.slice(0, 120)} [${c.label}]: ${found}`);
      }
    }));
    console.log(`fuzz sent ${cases.length} requests: ${JSON.stringify(Object.fromEntries(byKind))}; ${failures.length} failures`);
    expect(failures.slice(0, 40)).toEqual([]);
    expect(await snapshot()).toEqual(before);
  });
});
