import * as v from "valibot";

/**
 * Every error code the API documents, with its HTTP status (ARCHITECTURE D16). Engine errors are
 * tagged values mapped once at the edge; a 500 means a bug.
 */
export const ERROR_STATUS = {
  ValidationFailed: 400,
  InvalidBranch: 400,
  InvalidAddress: 400,
  InvalidLane: 400,
  InvalidOperationId: 400,
  ReservedNamespace: 400,
  Unauthenticated: 401,
  /**
   * A browser token asked for something outside what it was minted for: another session, a lane
   * it does not name, a scope it lacks, or a route no token may call (`details.scope`, `lane` or
   * `kind` name what was missing where that applies).
   */
  TokenScope: 403,
  NotFound: 404,
  SessionNotFound: 404,
  /** No import of that id is staged (never begun, committed, abandoned, or another tenant's). */
  ImportNotFound: 404,
  UnknownBranch: 404,
  UnknownEntry: 404,
  UnknownTarget: 404,
  UnknownLane: 404,
  UnknownSkill: 404,
  UnknownTemplate: 404,
  /** A provider this service has no implementation for (GET /v1/providers lists the configured ones). */
  UnknownProvider: 404,
  /** No tool of that name is defined in the session. */
  ToolNotFound: 404,
  /** No MCP server of that name is registered in the session. */
  McpServerNotFound: 404,
  /** No call of that id waits for a client's result in that operation. */
  UnknownToolCall: 404,
  /** No schedule of that id on that lane. */
  ScheduleNotFound: 404,
  /** No live agent of that id (`details.version`: no such version of it). */
  AgentNotFound: 404,
  /** A known path called with a method it does not serve; `Allow` lists the ones it does. */
  MethodNotAllowed: 405,
  SessionExists: 409,
  TenantExists: 409,
  /** The tenant is being deleted (DELETE /v1/admin/tenants/{tenantId}): nothing new is created for it. */
  TenantDeleting: 409,
  /**
   * A stored secret no longer opens (an http tool's signing secret, an MCP server's headers):
   * SECRETS_KEY changed since it was sealed. Register that tool or server again (`details.tool`,
   * `details.mcpServer`, `details.tenantTool` or `details.tenantMcpServer` names it).
   */
  SecretUnreadable: 409,
  /** An agent of that id exists or existed (a deleted agent's id is not reused: its versions stay readable). */
  AgentExists: 409,
  /** The session is bound to no agent (`PUT …/lanes/{lane}` `{ agent: true }`). */
  AgentNotBound: 409,
  IdempotencyInProgress: 409,
  /**
   * A replay of a creation whose answer held a secret (an API key, a webhook endpoint, a browser
   * token): it exists (`details` names it), its secret was shown once and is not shown again.
   */
  KeySecretNotReplayed: 409,
  BranchExists: 409,
  /**
   * A repeat of a request whose success was too large to remember for a replay: the request ran
   * once and is not run again; `details` names what it created where known.
   */
  IdempotencyReplayTooLarge: 409,
  LaneBusy: 409,
  /** A lane's queue is at its bound (items or bytes): retry once the lane has taken some. */
  QueueFull: 409,
  OperationMismatch: 409,
  /** A tool still active on a lane cannot be deleted. */
  ToolInUse: 409,
  /** The client tool call already has its result (a second post). */
  ToolResultConflict: 409,
  /** A schedule of that id exists on the session with another definition (`details.scheduleId`, `lane`); the same body again answers it. */
  ScheduleExists: 409,
  /** The tenant already has a webhook endpoint with this URL (`details.webhookId` names it). */
  WebhookExists: 409,
  PayloadTooLarge: 413,
  InvalidMessage: 422,
  InvalidNavigation: 422,
  /** A fork the source cannot make (`details.reason`: data_only_branch, not_on_branch, undeclared_namespace). */
  InvalidFork: 422,
  /** An import line the format refuses or a session it cannot make (`details`: line, reason). */
  InvalidImport: 422,
  /** An import part sent out of order (`details.expected` names the part it waits for). */
  ImportPartOutOfOrder: 409,
  NothingToCompact: 422,
  NothingToResume: 422,
  NoActiveOperation: 422,
  /** A provider base URL the egress policy refuses (schema/egress-policy.ts); `details.reason: "unsafe_address"` and `rule` for an internal host. */
  InvalidBaseUrl: 422,
  /** A webhook endpoint URL the egress policy refuses (schema/egress-policy.ts); `details.reason: "unsafe_address"` and `rule` for an internal host. */
  InvalidWebhookUrl: 422,
  /** A lane configuration names a model this tenant cannot use (GET /v1/models lists those it can). */
  UnknownModel: 422,
  /** A lane configuration activates tools that do not exist. */
  UnknownTool: 422,
  /** A run would answer deferred (its request or the session's streamOptions) on a model that cannot. */
  DeferredUnsupported: 422,
  IdempotencyConflict: 422,
  /**
   * A session already holds as many branches or lanes, or a tenant as many webhooks (in all, or
   * for one destination host) or agents, or an agent as many versions, as it may, or an agent
   * version is larger than it may be (`details`: resource, limit, and host for webhooks_per_host).
   */
  LimitExceeded: 422,
  UpgradeRequired: 426,
  RateLimited: 429,
  Internal: 500,
  Overloaded: 503,
  SessionClosed: 503,
  /**
   * The service lacks a setting the request needs (`details.secret` names it, e.g. a missing or too
   * short `SECRETS_KEY` when storing a provider key): its operator must set it; retrying will not help.
   */
  NotConfigured: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export const ApiErrorSchema = v.object({
  code: v.picklist(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
  message: v.string(),
  details: v.optional(v.record(v.string(), v.union([v.string(), v.number(), v.boolean(), v.null(), v.array(v.string())]))),
});
export type ApiError = v.InferOutput<typeof ApiErrorSchema>;

/**
 * A 400 about one input in the form every ValidationFailed takes (ARCHITECTURE D16): `<where>: <what>`,
 * `where` a body field's dotted path, a query or path parameter's name, a header's name or `body`,
 * with `details.issues` listing it.
 */
export function invalidInputError(where: string, what: string, details: Record<string, string> = {}): ApiError {
  const issue = `${where}: ${what}`;
  return { code: "ValidationFailed", message: issue, details: { issues: [issue], ...details } };
}

/** What the session object returns over RPC: a value, or a tagged error the edge maps to HTTP. */
export type RpcResult<T> = { ok: true; value: T } | { ok: false; error: ApiError };

declare const jsonType: unique symbol;

/** The UTF-8 JSON text of a `T`, as bytes (the body of a read's answer, passed through unparsed). */
export type JsonBytes<T> = Uint8Array<ArrayBuffer> & { readonly [jsonType]?: T };

/** A read's reply over RPC: its JSON bytes, or a tagged error the edge maps to HTTP. */
export type RpcJson<T> = { ok: true; json: JsonBytes<T> } | { ok: false; error: ApiError };
