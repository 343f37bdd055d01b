import type { Entry } from "../schema/entries.ts";
import type { JsonValue } from "../schema/json.ts";
import { path, type CallOptions, type HttpClient } from "./http.ts";
import { paginate } from "./paging.ts";
import { sessionPath } from "./sessions.ts";
import type {
  AppendedEntry,
  Branch,
  BranchEntriesQuery,
  BranchListing,
  CreateBranchBody,
  ListItem,
  ListQuery,
  NewBranchEntryBody,
  Page,
  PageQuery,
  SeqAck,
  StoredValue,
} from "./types.ts";

// Application values and lists, and named branches (spec/API.md "Sessions", "Branches").
// `namespace` and `key` are single path segments (the SDK encodes `/` as %2F); the runtime's `pi`
// and `pi.*` namespaces answer 400 ReservedNamespace.

const address = (sessionId: string, kind: "values" | "lists", namespace: string, key: string): string =>
  sessionPath(sessionId, `/${kind}${path(namespace, key)}`);

export class ValuesApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /** `GET …/values/{namespace}/{key}` → `{ value, seq }` (404 NotFound when absent; a stored null is a value). */
  get<T extends JsonValue = JsonValue>(sessionId: string, namespace: string, key: string, options: CallOptions = {}): Promise<StoredValue<T>> {
    return this.http.json({ ...options, method: "GET", path: address(sessionId, "values", namespace, key) });
  }

  /** `PUT …/values/{namespace}/{key}`: the body is the JSON value itself (`null` included). */
  set(sessionId: string, namespace: string, key: string, value: JsonValue, options: CallOptions = {}): Promise<SeqAck> {
    return this.http.json({ ...options, method: "PUT", path: address(sessionId, "values", namespace, key), body: value });
  }

  /** `DELETE …/values/{namespace}/{key}` → 204 (idempotent). */
  async delete(sessionId: string, namespace: string, key: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: address(sessionId, "values", namespace, key) });
  }
}

export class ListsApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /** `GET …/lists/{namespace}/{key}?cursor&order&limit` (an absent list is empty). */
  read<T extends JsonValue = JsonValue>(sessionId: string, namespace: string, key: string, query: ListQuery = {}, options: CallOptions = {}): Promise<Page<ListItem<T>>> {
    return this.http.json({ ...options, method: "GET", path: address(sessionId, "lists", namespace, key), query: { ...query } });
  }

  /** Every element, page by page. */
  all<T extends JsonValue = JsonValue>(
    sessionId: string,
    namespace: string,
    key: string,
    query: Omit<ListQuery, "cursor"> = {},
    options: CallOptions = {},
  ): AsyncGenerator<ListItem<T>, void, undefined> {
    return paginate((cursor) => this.read<T>(sessionId, namespace, key, { ...query, ...(cursor !== undefined && { cursor }) }, options));
  }

  /** `POST …/lists/{namespace}/{key}` (the body is the element) → 201 `{ seq }`. Accepts `idempotencyKey`. */
  append(sessionId: string, namespace: string, key: string, element: JsonValue, options: CallOptions = {}): Promise<SeqAck> {
    return this.http.json({ ...options, method: "POST", path: address(sessionId, "lists", namespace, key), body: element });
  }

  /** `DELETE …/lists/{namespace}/{key}` → 204. */
  async delete(sessionId: string, namespace: string, key: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: address(sessionId, "lists", namespace, key) });
  }
}

export class BranchesApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /**
   * `GET …/branches?limit&cursor`: one page of `{ name, tipId, lane }` by name (`lane`: a lane is
   * bound to the branch).
   */
  list(sessionId: string, query: PageQuery = {}, options: CallOptions = {}): Promise<Page<BranchListing>> {
    return this.http.json({ ...options, method: "GET", path: sessionPath(sessionId, "/branches"), query: { limit: query.limit, cursor: query.cursor } });
  }

  /** Every branch, page by page (`limit` is the page size). */
  all(sessionId: string, query: Omit<PageQuery, "cursor"> = {}, options: CallOptions = {}): AsyncGenerator<BranchListing, void, undefined> {
    return paginate((cursor) => this.list(sessionId, { ...query, ...(cursor !== undefined && { cursor }) }, options));
  }

  /**
   * `POST …/branches` `{ name, at }` → 201 `{ name, tipId }` (409 BranchExists, 404 UnknownTarget,
   * 422 LimitExceeded once the session holds its most branches). Accepts `idempotencyKey`.
   */
  create(sessionId: string, body: CreateBranchBody, options: CallOptions = {}): Promise<Branch> {
    return this.http.json({ ...options, method: "POST", path: sessionPath(sessionId, "/branches"), body });
  }

  /** `GET …/branches/{name}/entries?…`: the branch scan (root-ward from `start`, default the tip). */
  entries(sessionId: string, name: string, query: BranchEntriesQuery = {}, options: CallOptions = {}): Promise<Page<Entry>> {
    return this.http.json({ ...options, method: "GET", path: sessionPath(sessionId, `/branches${path(name)}/entries`), query: { ...query } });
  }

  /** Every entry of a branch scan, page by page. */
  allEntries(sessionId: string, name: string, query: Omit<BranchEntriesQuery, "cursor"> = {}, options: CallOptions = {}): AsyncGenerator<Entry, void, undefined> {
    return paginate((cursor) => this.entries(sessionId, name, { ...query, ...(cursor !== undefined && { cursor }) }, options));
  }

  /**
   * `POST …/branches/{name}/entries` `{ message }` | `{ customType, data? }` → 201 `{ entryId, placed }`
   * (on a lane's branch: the lane's operation-aware append). Accepts `idempotencyKey`.
   */
  append(sessionId: string, name: string, body: NewBranchEntryBody, options: CallOptions = {}): Promise<AppendedEntry> {
    return this.http.json({ ...options, method: "POST", path: sessionPath(sessionId, `/branches${path(name)}/entries`), body });
  }
}
