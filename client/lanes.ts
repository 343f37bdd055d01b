import type { UiMessage } from "../schema/ai-sdk.ts";
import type { LaneConfiguration, LaneExecutionInfo, LaneInfo } from "../schema/lane.ts";
import type { AgentMessage, ImageContent } from "../schema/messages.ts";
import { path, type CallOptions, type HttpClient } from "./http.ts";
import { paginate } from "./paging.ts";
import { sessionPath } from "./sessions.ts";
import type {
  AppendedEntry,
  CancelQueuedResult,
  EnqueuedItem,
  LaneConfigPatchBody,
  LaneSnapshotAt,
  NewLaneEntryBody,
  Page,
  PageQuery,
  PutLaneBody,
  PutLaneResult,
  QueueKind,
} from "./types.ts";

/** `/v1/sessions/{sid}/lanes/{lane}` plus a sub-path. */
export const lanePath = (sessionId: string, lane: string, rest = ""): string => sessionPath(sessionId, `/lanes${path(lane)}${rest}`);

/** Lanes of a session (spec/API.md "Lanes"): an agent bound to a branch of the same name. */
export class LanesApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /**
   * `PUT …/lanes/{lane}` `{ createAt?, model?, thinkingLevel?, activeTools? }`: get or create; the
   * start entry and configuration apply only to a lane this request creates. `created` is true when
   * this request created the lane (201), false when it existed (200). 404 UnknownTarget for an
   * unknown `createAt`; 422 UnknownModel / UnknownTool for names the deployment does not know;
   * 422 LimitExceeded for a new lane once the session holds its most lanes (or branches).
   */
  async put(sessionId: string, lane: string, body: PutLaneBody = {}, options: CallOptions = {}): Promise<PutLaneResult> {
    const response = await this.http.send<LaneInfo>({ ...options, method: "PUT", path: lanePath(sessionId, lane), body });
    return { lane: response.body, created: response.status === 201 };
  }

  /** `GET …/lanes?limit&cursor`: one page of LaneInfo by name. */
  list(sessionId: string, query: PageQuery = {}, options: CallOptions = {}): Promise<Page<LaneInfo>> {
    return this.http.json({ ...options, method: "GET", path: sessionPath(sessionId, "/lanes"), query: { limit: query.limit, cursor: query.cursor } });
  }

  /** Every lane, page by page (`limit` is the page size). */
  all(sessionId: string, query: Omit<PageQuery, "cursor"> = {}, options: CallOptions = {}): AsyncGenerator<LaneInfo, void, undefined> {
    return paginate((cursor) => this.list(sessionId, { ...query, ...(cursor !== undefined && { cursor }) }, options));
  }

  /** `GET …/lanes/{lane}` → LaneExecutionInfo (404 UnknownLane). */
  get(sessionId: string, lane: string, options: CallOptions = {}): Promise<LaneExecutionInfo> {
    return this.http.json({ ...options, method: "GET", path: lanePath(sessionId, lane) });
  }

  /**
   * `PATCH …/lanes/{lane}/config` `{ model?, thinkingLevel?, activeTools? }` → the configuration.
   * 422 UnknownModel / UnknownTool (nothing written) for names the deployment does not know.
   */
  configure(sessionId: string, lane: string, patch: LaneConfigPatchBody, options: CallOptions = {}): Promise<LaneConfiguration> {
    return this.http.json({ ...options, method: "PATCH", path: lanePath(sessionId, lane, "/config"), body: patch });
  }

  /**
   * `POST …/lanes/{lane}/entries` `{ message }` | `{ customType, data? }` → 201 `{ entryId, placed }`:
   * placed now when idle, queued as a `write` item (`placed: false`) when busy. Accepts `idempotencyKey`.
   */
  append(sessionId: string, lane: string, body: NewLaneEntryBody, options: CallOptions = {}): Promise<AppendedEntry> {
    return this.http.json({ ...options, method: "POST", path: lanePath(sessionId, lane, "/entries"), body });
  }

  /** `GET …/lanes/{lane}/snapshot` → `{ seq, snapshot }`. */
  snapshot(sessionId: string, lane: string, options: CallOptions = {}): Promise<LaneSnapshotAt> {
    return this.http.json({ ...options, method: "GET", path: lanePath(sessionId, lane, "/snapshot") });
  }

  /**
   * The `api` a page gives the AI SDK's `DefaultChatTransport` (`useChat`) to chat on this lane:
   * `{baseUrl}/v1/sessions/{sid}/lanes/{lane}/ai-sdk` (docs/ai-sdk.md). No request is made.
   */
  aiSdkApi(sessionId: string, lane: string): string {
    return `${this.http.baseUrl}${lanePath(sessionId, lane, "/ai-sdk")}`;
  }

  /** `GET …/lanes/{lane}/ai-sdk/messages`: the lane's conversation as AI SDK `UIMessage`s, for a page's initial `messages`. */
  aiSdkMessages(sessionId: string, lane: string, options: CallOptions = {}): Promise<UiMessage[]> {
    return this.http.json({ ...options, method: "GET", path: lanePath(sessionId, lane, "/ai-sdk/messages") });
  }
}

/** A lane's queue (spec/API.md "Queue"): admitted whether the lane is idle or busy. */
export class QueueApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /** `POST …/lanes/{lane}/queue` `{ kind, message, images? }` → 201 `{ entryId }`. Accepts `idempotencyKey`. */
  enqueue(
    sessionId: string,
    lane: string,
    kind: QueueKind,
    message: string | AgentMessage,
    extra: { images?: ImageContent[] } = {},
    options: CallOptions = {},
  ): Promise<EnqueuedItem> {
    return this.http.json({ ...options, method: "POST", path: lanePath(sessionId, lane, "/queue"), body: { kind, message, ...extra } });
  }

  /** `steer`: delivered into the running run at its next steering point. */
  steer(sessionId: string, lane: string, message: string | AgentMessage, options: CallOptions = {}): Promise<EnqueuedItem> {
    return this.enqueue(sessionId, lane, "steer", message, {}, options);
  }

  /** `followUp`: continues the run after it would otherwise stop. */
  followUp(sessionId: string, lane: string, message: string | AgentMessage, options: CallOptions = {}): Promise<EnqueuedItem> {
    return this.enqueue(sessionId, lane, "followUp", message, {}, options);
  }

  /** `nextRun`: held for the lane's next run. */
  nextRun(sessionId: string, lane: string, message: string | AgentMessage, options: CallOptions = {}): Promise<EnqueuedItem> {
    return this.enqueue(sessionId, lane, "nextRun", message, {}, options);
  }

  /** `DELETE …/lanes/{lane}/queue/{entryId}` → `"cancelled" | "already_consumed" | "not_found"`. */
  async cancel(sessionId: string, lane: string, entryId: string, options: CallOptions = {}): Promise<CancelQueuedResult> {
    const body = await this.http.json<{ result: CancelQueuedResult }>({ ...options, method: "DELETE", path: lanePath(sessionId, lane, `/queue${path(entryId)}`) });
    return body.result;
  }
}
