import type { SessionSummary } from "../schema/api.ts";
export type { SessionSummary };
import type { ForkSession } from "../schema/api-fork.ts";
import type { DeleteSessionsAnswer, TenantDetail } from "../schema/data-lifecycle.ts";
export type { DeleteSessionsAnswer, TenantDetail };
import type { BrowserToken, CreateBrowserToken } from "../schema/browser-tokens.ts";
export type { BrowserToken, CreateBrowserToken };
import type { Entry } from "../schema/entries.ts";
import { path, type CallOptions, type HttpClient } from "./http.ts";
import { paginate } from "./paging.ts";
import type { CreatedSession, CreateSessionBody, EntriesQuery, LabelResult, Page, PatchSessionBody, Session, SessionsQuery, UsagePage, UsageQuery } from "./types.ts";

/** `/v1/sessions/{sid}` plus a sub-path. */
export const sessionPath = (sessionId: string, rest = ""): string => `/v1/sessions${path(sessionId)}${rest}`;

/** Sessions of the key's tenant (spec/API.md "Sessions"). */
export class SessionsApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /**
   * `POST /v1/sessions` → 201 Session, created with its name, metadata, settings, resources and
   * tools in one step (`agent: "<id>"` or `"<id>@<version>"`: from that agent version, lane `main`
   * included); `toolSecrets` holds each new http tool's signing secret, shown this once.
   * Accepts `idempotencyKey`: a retry after a failure gets the session the first attempt created.
   */
  create(body: CreateSessionBody = {}, options: CallOptions = {}): Promise<CreatedSession> {
    return this.http.json({ ...options, method: "POST", path: "/v1/sessions", body });
  }

  /**
   * `GET /v1/sessions?limit&cursor&order&agent&metadata.<key>&status&createdAfter&createdBefore`: one page
   * of `{ id, name, createdAt, metadata, agent? }` matching every filter, oldest first, or newest first with
   * `order: "desc"` (from the tenant's index; `get` has the whole Session). A filtered page may be
   * short, even empty, with a `nextCursor`: keep going until it is null (`all` does).
   */
  list(query: SessionsQuery = {}, options: CallOptions = {}): Promise<Page<SessionSummary>> {
    const filters = Object.fromEntries(Object.entries(query.metadata ?? {}).map(([key, value]) => [`metadata.${key}`, value]));
    return this.http.json({
      ...options,
      method: "GET",
      path: "/v1/sessions",
      query: { limit: query.limit, cursor: query.cursor, order: query.order, agent: query.agent, status: query.status, createdAfter: query.createdAfter, createdBefore: query.createdBefore, ...filters },
    });
  }

  /** Every session matching the filters, page by page (`limit` is the page size): `for await (const session of client.sessions.all({ metadata: { user: "u_42" } })) …`. */
  all(query: Omit<SessionsQuery, "cursor"> = {}, options: CallOptions = {}): AsyncGenerator<SessionSummary, void, undefined> {
    return paginate((cursor) => this.list({ ...query, ...(cursor !== undefined && { cursor }) }, options));
  }

  /** `GET /v1/sessions/{sid}` (404 SessionNotFound). */
  get(sessionId: string, options: CallOptions = {}): Promise<Session> {
    return this.http.json({ ...options, method: "GET", path: sessionPath(sessionId) });
  }

  /**
   * `PATCH /v1/sessions/{sid}` `{ name?, settings?, metadata?, agent? }`: `name: null` removes the
   * name; settings and metadata are JSON Merge Patches (a nested field changes alone; null restores
   * a setting's default or deletes a metadata key; 422 LimitExceeded beyond 16 metadata keys);
   * `agent: "<id>@<version>"` moves the whole session to that agent version (`toolSecrets`: the
   * secrets of http tools it brought anew, shown this once).
   */
  patch(sessionId: string, body: PatchSessionBody, options: CallOptions = {}): Promise<CreatedSession> {
    return this.http.json({ ...options, method: "PATCH", path: sessionPath(sessionId), body });
  }

  /**
   * `POST /v1/sessions/{sid}/fork` → 201 the new Session: one lane's branch (`{ scope: "branch",
   * branch, entryId?, position? }`) or the whole tree (`{ scope: "tree" }`), without the usage
   * ledger or runs. Accepts `idempotencyKey`: a retry gets the fork the first attempt made.
   */
  fork(sessionId: string, body: ForkSession, options: CallOptions = {}): Promise<Session> {
    return this.http.json({ ...options, method: "POST", path: sessionPath(sessionId, "/fork"), body });
  }

  /**
   * `POST /v1/sessions/{sid}/tokens` → 201 `{ token, expiresAt }`: a short-lived browser token for
   * this session (only `lanes`, when given; `scopes` `"watch"` and/or `"prompt"`; `ttlSeconds`
   * 1–3600, default 900) to hand to a page instead of the key. A page uses it as `key` (this
   * client, `watchLane`). Only a tenant key mints; revoking that key ends its tokens. The token
   * is shown once: a repeat with the same `idempotencyKey` is 409 `KeySecretNotReplayed`.
   */
  createBrowserToken(sessionId: string, body: CreateBrowserToken, options: CallOptions = {}): Promise<BrowserToken> {
    return this.http.json({ ...options, method: "POST", path: sessionPath(sessionId, "/tokens"), body });
  }

  /**
   * `DELETE /v1/sessions?metadata.<key>=<value>` → 202 `{ matched }`: the sessions holding every
   * pair (at least one; one end user's sessions, say) leave listings at once and are deleted in the
   * background (docs/data.md "Deleting data").
   */
  deleteByMetadata(metadata: Record<string, string>, options: CallOptions = {}): Promise<DeleteSessionsAnswer> {
    const query = Object.fromEntries(Object.entries(metadata).map(([key, value]) => [`metadata.${key}`, value]));
    return this.http.json({ ...options, method: "DELETE", path: "/v1/sessions", query });
  }

  /** `DELETE /v1/sessions/{sid}` → 204; afterwards the session is 404 (a repeated delete too). */
  async delete(sessionId: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: sessionPath(sessionId) });
  }
}

/** The session-wide entry inventory and entry labels. */
export class EntriesApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /** `GET …/entries?type&customType&order&limit&cursor`: every entry of the session by seq. */
  list(sessionId: string, query: EntriesQuery = {}, options: CallOptions = {}): Promise<Page<Entry>> {
    return this.http.json({ ...options, method: "GET", path: sessionPath(sessionId, "/entries"), query: { ...query } });
  }

  /** Every entry matching `query`, page by page. */
  all(sessionId: string, query: Omit<EntriesQuery, "cursor"> = {}, options: CallOptions = {}): AsyncGenerator<Entry, void, undefined> {
    return paginate((cursor) => this.list(sessionId, { ...query, ...(cursor !== undefined && { cursor }) }, options));
  }

  /** `GET …/entries/{entryId}` (404 UnknownEntry). */
  get(sessionId: string, entryId: string, options: CallOptions = {}): Promise<Entry> {
    return this.http.json({ ...options, method: "GET", path: sessionPath(sessionId, `/entries${path(entryId)}`) });
  }

  /** `GET …/entries/{entryId}/label` → `{ entryId, label }` (label null when none; 404 UnknownEntry). */
  getLabel(sessionId: string, entryId: string, options: CallOptions = {}): Promise<{ entryId: string; label: string | null }> {
    return this.http.json({ ...options, method: "GET", path: sessionPath(sessionId, `/entries${path(entryId)}/label`) });
  }

  /** `PUT …/entries/{entryId}/label` `{ label }` (404 UnknownEntry). */
  setLabel(sessionId: string, entryId: string, label: string, options: CallOptions = {}): Promise<LabelResult> {
    return this.http.json({ ...options, method: "PUT", path: sessionPath(sessionId, `/entries${path(entryId)}/label`), body: { label } });
  }

  /** `DELETE …/entries/{entryId}/label` → 204 (idempotent). */
  async deleteLabel(sessionId: string, entryId: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: sessionPath(sessionId, `/entries${path(entryId)}/label`) });
  }
}

/** `GET …/usage?fromSeq&limit`: ledger rows (ascending) and the session totals. */
export function usage(http: HttpClient, sessionId: string, query: UsageQuery = {}, options: CallOptions = {}): Promise<UsagePage> {
  return http.json({ ...options, method: "GET", path: sessionPath(sessionId, "/usage"), query: { fromSeq: query.fromSeq, limit: query.limit } });
}
