import type * as v from "valibot";
import type { ErrorCode } from "../../schema/errors.ts";

// The shape of one entry of the route catalog (catalog.ts). The catalog is declarative: it names
// the schemas the routes validate with (imported from schema/, never copied) and document.ts turns
// it into the OpenAPI document.

/** Who may call a route: a tenant API key, the admin token, or anyone. */
export type Auth = "tenant" | "admin" | "none";

export type Method = "get" | "post" | "put" | "patch" | "delete";

/** Tags group routes in the document and on /docs, in this order. */
export const TAGS = {
  Meta: "Health and this reference.",
  Admin: "Tenants and API keys, behind the admin token.",
  Tenant: "Who the caller is, its provider keys, and the models it can use.",
  Agents: "Versioned agent definitions of the tenant: model, settings, resources and tools, defined once for many sessions.",
  "Tenant tools": "The tenant's own tools and MCP servers, by revision: one definition and one signing secret for every session made from its agents.",
  Sessions: "Sessions of the authenticated tenant.",
  Entries: "The session-wide entry inventory, entry labels and the usage ledger.",
  Values: "Application values and lists (`pi` and `pi.*` namespaces are reserved for the runtime).",
  Branches: "Named branches: movable tips into the session's tree.",
  Lanes: "Lanes, their configuration, entries, snapshots and queues.",
  Operations: "Operations of a lane: primitives and conveniences.",
  Schedules: "Prompts that start on their own on a lane: cron expressions, one-off times and intervals.",
  Tools: "Tool definitions of a session, and results of client-executed tool calls.",
  Watch: "WebSocket streams of a session or a lane.",
} as const;
export type Tag = keyof typeof TAGS;

/** A query schema: an object schema whose entries are the query parameters. */
export type QuerySchema = v.GenericSchema & { readonly entries: v.ObjectEntries };

export interface RouteResponse {
  description: string;
  /** The answer's valibot schema: every answer with a body has one (test/api/openapi-completeness.test.ts). */
  schema?: v.GenericSchema;
  /** The answer's media type: JSON unless said otherwise; "none" for 204 and 101; "sse" for `text/event-stream`; "ndjson" for JSON Lines (the schema is one line's). */
  content?: "json" | "html" | "sse" | "ndjson" | "none";
}

export interface CatalogRoute {
  method: Method;
  /** OpenAPI form: `/v1/sessions/{sid}/…`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: Tag;
  auth: Auth;
  /** Every `{name}` of the path, with the schema the route validates it with. */
  pathParams?: Readonly<Record<string, v.GenericSchema>>;
  /** The query schema the route validates `c.req.query()` with. */
  query?: QuerySchema;
  /**
   * Query parameters named by a pattern (`metadata.{key}`), which an object schema cannot list:
   * documented as one parameter each, with the schema of one value.
   */
  queryPatterns?: readonly { name: string; description: string; schema: v.GenericSchema }[];
  /** The body schema the route validates with (`jsonBody(c, …)`): the same object. */
  body?: v.GenericSchema;
  /** A JSON Lines body (`application/x-ndjson`, read as a stream): the schema of one line. */
  lines?: v.GenericSchema;
  /** A valid body, shown in the document (and used by the tests). */
  example?: unknown;
  /** A creating POST that accepts `Idempotency-Key` (ARCHITECTURE D15). */
  idempotent?: true;
  /** Success answers by status. */
  responses: Readonly<Record<number, RouteResponse>>;
  /**
   * The documented error codes this route can answer besides those its shape implies (document.ts
   * adds Unauthenticated and Overloaded for authenticated routes, ValidationFailed for parameters
   * and bodies, PayloadTooLarge for bodies, the idempotency codes, and Internal).
   */
  errors: readonly ErrorCode[];
  /** A code answered with another status than ERROR_STATUS gives it on this route. */
  errorStatus?: Partial<Record<ErrorCode, number>>;
}

/** Errors of every route that reaches a session object: unknown session, shutting down. */
export const SESSION_ERRORS: readonly ErrorCode[] = ["SessionNotFound", "SessionClosed"];
/** Errors of every route that addresses a lane. */
export const LANE_ERRORS: readonly ErrorCode[] = [...SESSION_ERRORS, "UnknownLane"];
