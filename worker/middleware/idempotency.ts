import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { routePath } from "hono/route";
import * as v from "valibot";
import { sha256Hex } from "../../durable-objects/tenant/tenant-object.ts";
import { replayWithinBound, type IdempotencyClaim, type IdempotencyReplay } from "../../durable-objects/rpc/idempotency.ts";
import { ApiErrorSchema, ERROR_STATUS } from "../../schema/errors.ts";
import { isRecord } from "../../schema/json.ts";
import type { AppContext, AppEnv } from "../env.ts";
import { errorResponse, fail, invalidInput } from "../http-error.ts";
import { CATALOG } from "../openapi/catalog.ts";
import type { CatalogRoute } from "../openapi/catalog-types.ts";
import { jsonBodyAsSent, pathParam, queryParams } from "../validate.ts";

/** The object that owns a creating POST's Idempotency-Key (ARCHITECTURE D15). */
export interface IdempotencyOwner {
  idempotencyClaim(key: string, requestHash: string): Promise<IdempotencyClaim | { state: "no_session" }>;
  idempotencyComplete(key: string, requestHash: string, replay: IdempotencyReplay | null): Promise<void>;
}

/** The form of an `Idempotency-Key` header (also published in /openapi.json). */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** One claimed key: `key` is scoped to the route (method and path), `requestHash` names the body. */
export interface IdempotencyScope {
  key: string;
  requestHash: string;
}

const scopes = new WeakMap<Request, IdempotencyScope>();
const replays = new WeakMap<Request, IdempotencyReplay>();

/** The claimed key of this request, when it carries one (session creation derives its token from it). */
export function idempotencyScope(c: Context): IdempotencyScope | undefined {
  return scopes.get(c.req.raw);
}

/**
 * A token derived from this request's claimed key (undefined when it carries none). A creation
 * names what it creates by it, so a retry after a lost answer (the thing created, the answer not
 * remembered) names the same one instead of creating a second.
 */
export async function keyDerivedToken(c: Context): Promise<string | undefined> {
  const scope = scopes.get(c.req.raw);
  return scope && sha256Hex(`${scope.key}\n${scope.requestHash}`);
}

/** `prefix` and `digits` hex digits (at most 32) of `token`, or random ones without a token. */
export function newId(prefix: string, digits: number, token: string | undefined): string {
  return `${prefix}${(token ?? crypto.randomUUID().replace(/-/g, "")).slice(0, digits)}`;
}

/**
 * What a replay of this request answers instead of its response: a route whose answer holds a
 * secret (a new API key) remembers an answer without it, since a secret is shown once and stored
 * nowhere.
 */
export function replayInstead(c: Context, status: number, body: unknown): void {
  replays.set(c.req.raw, { status, body: JSON.stringify(body) });
}

/**
 * `Idempotency-Key` on a creating POST: the same key and body replay the remembered success (one
 * effect), the same key with another body is 422, a concurrent duplicate is 409 with
 * `Retry-After`. Without the header the request runs normally.
 *
 * Nothing is claimed for a request that fails its route's validation or size bounds: the route's
 * path, query and body schemas (the very ones of the route catalog, which the route validates with
 * again) run before the claim. Keys are scoped per tenant (the owner is the tenant's object or one
 * of its sessions) and per route (method and path): one key on two routes names two requests. The
 * request hash is taken over the body as sent (parsed JSON), not as validated: validation fills
 * defaults such as a message's timestamp from the clock, which would make a retry a conflict.
 *
 * A success larger than IDEMPOTENCY_REPLAY_MAX_BYTES is remembered as a 409
 * IdempotencyReplayTooLarge refusal naming what it created: its repeat never runs it twice.
 *
 * Only a success (2xx) is remembered. Any other answer releases the claim: a refusal (400, 404,
 * 409, 413, 422, 429, …) changed nothing, so a client that retries with the same key (after
 * `Retry-After`, or after fixing what was refused) gets a fresh answer; a 5xx may have stopped
 * half-way, and the retry completes it (session creation resumes: see worker/routes/sessions.ts).
 */
export function idempotent(owner: (c: AppContext) => IdempotencyOwner) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const header = c.req.header("idempotency-key");
    if (header === undefined) return next();
    if (!IDEMPOTENCY_KEY.test(header)) throw invalidInput("Idempotency-Key", "must be 1–255 printable ASCII characters");
    const body = await validateAsRoute(c, catalogRoute(c));
    const scope = { key: `${c.req.method} ${normalizedPath(new URL(c.req.url).pathname)}\n${header}`, requestHash: await sha256Hex(canonicalJson(body ?? null)) };
    const store = owner(c);
    const claim = await store.idempotencyClaim(scope.key, scope.requestHash);
    switch (claim.state) {
      case "no_session":
        throw fail("SessionNotFound", "Session not found");
      case "conflict":
        throw fail("IdempotencyConflict", "This Idempotency-Key was used with a different request");
      case "in_progress":
        return errorResponse(c, {
          code: "IdempotencyInProgress",
          message: `A request with this Idempotency-Key is still running; retry in ${claim.retryAfterSeconds} s`,
          details: { retryAfterSeconds: claim.retryAfterSeconds },
        });
      case "replay": {
        const replayed = replayedAnswer(c, claim.status, claim.body);
        replayed.headers.set("idempotency-replayed", "true");
        return replayed;
      }
      case "claimed":
        break;
    }
    scopes.set(c.req.raw, scope);
    try {
      await next();
    } catch (error) {
      await store.idempotencyComplete(scope.key, scope.requestHash, null);
      throw error;
    }
    const succeeded = c.res.status >= 200 && c.res.status <= 299;
    // Bounded here as the store bounds it, so a large answer never crosses to the object only to be dropped.
    const replay = succeeded ? replayWithinBound(replays.get(c.req.raw) ?? { status: c.res.status, body: await c.res.clone().text() }) : null;
    await store.idempotencyComplete(scope.key, scope.requestHash, replay);
  });
}

/**
 * A remembered success is answered byte for byte (R5: an identical response). A remembered refusal
 * (KeySecretNotReplayed, IdempotencyReplayTooLarge) is an error like any other, so it carries this
 * request's own `requestId` (and the client's `X-Request-Id`), never the first request's.
 */
function replayedAnswer(c: Context, status: number, body: string): Response {
  if (status >= 400) {
    const remembered = v.safeParse(RememberedRefusalSchema, parseJson(body));
    if (remembered.success && ERROR_STATUS[remembered.output.error.code] === status) return errorResponse(c, remembered.output.error);
  }
  return new Response(body, { status, headers: { "content-type": "application/json" } });
}

const RememberedRefusalSchema = v.object({ error: ApiErrorSchema });

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The catalog entry of the route being served (the catalog test keeps every served route in it). */
function catalogRoute(c: Context): CatalogRoute {
  const path = routePath(c).replace(/:([A-Za-z0-9_]+)/g, "{$1}");
  const method = c.req.method.toLowerCase();
  const route = CATALOG.find((entry) => entry.method === method && entry.path === path);
  if (!route) throw new Error(`No catalog entry for idempotent route ${method} ${path}`);
  return route;
}

/** Runs the route's own validation of path, query and body; returns the body as sent, once valid. */
async function validateAsRoute(c: Context, route: CatalogRoute): Promise<unknown> {
  for (const [name, schema] of Object.entries(route.pathParams ?? {})) pathParam(c, name, schema);
  const query = route.query ? queryParams(c, route.query) : undefined;
  if (route.body) return (await jsonBodyAsSent(c, route.body)).sent;
  // A JSON Lines body is a stream the route reads once, after the claim: the key covers what is
  // known before it (the query, e.g. an import's `?id=`, and the declared length), not its content.
  if (route.lines) return { query: query ?? null, length: c.req.header("content-length") ?? null };
  return undefined;
}

/**
 * A path as the router reads it: each segment percent-decoded (as path parameters are), then
 * encoded one way, so `…/lists/ns/%6B` and `…/lists/ns/k`, which reach the same list, name one
 * request. A segment that does not decode is kept as sent (the route refuses it anyway).
 */
export function normalizedPath(pathname: string): string {
  return pathname
    .split("/")
    .map((segment) => {
      try {
        return encodeURIComponent(decodeURIComponent(segment));
      } catch {
        return segment;
      }
    })
    .join("/");
}

/**
 * JSON text of a parsed body with every object's members in one order: the same JSON value sent
 * with its members in another order (a client serializing a map) is the same request (RFC 8259
 * §4: members are unordered).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, member: unknown) =>
    isRecord(member) ? Object.fromEntries(Object.entries(member).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : member,
  );
}
