import { ERROR_STATUS, type ErrorCode } from "../schema/errors.ts";

// The SDK's one HTTP path (ARCHITECTURE §2: the client imports only schema/). A thin fetch wrapper:
// base URL, credentials, JSON bodies, query strings, Idempotency-Key, and error bodies
// (`{ error: { code, message, details?, requestId } }`, D16) turned into ApiRequestError.

/** The fetch the client calls; `globalThis.fetch` by default, injectable (tests, proxies, service bindings). */
export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

export interface HttpClientOptions {
  /** Origin (and optional path prefix) of the API, e.g. `https://sessions.example.com`; `/v1/…` is appended. */
  baseUrl: string;
  /** A tenant API key (`sk_…`) or a browser token (`bt_…`), sent as `Authorization: Bearer <key>`. */
  key?: string;
  /** The admin token, used instead of `key` by the admin routes. */
  adminToken?: string;
  fetch?: FetchLike;
  /** Extra headers sent on every request. */
  headers?: Record<string, string>;
}

/** Per-call options of every SDK method. */
export interface CallOptions {
  /** `Idempotency-Key` (creating POSTs, ARCHITECTURE D15): the same key and body replay the first response. */
  idempotencyKey?: string;
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

export type QueryValue = string | number | boolean | null | undefined;

export interface RequestSpec extends CallOptions {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Path below the base URL, starting with `/v1/`; build it with `path`. */
  path: string;
  query?: Record<string, QueryValue>;
  /** The JSON body. `null` is a body (a value set to null); leave the property out to send none. */
  body?: unknown;
  /** Which credential authenticates: the tenant key (default) or the admin token. */
  auth?: "key" | "admin";
}

/** A response: its status and parsed JSON body (`undefined` for 204 and empty bodies). */
export interface HttpResponse<T> {
  status: number;
  body: T;
  headers: Headers;
}

/** Every non-2xx answer of the API, typed by its documented code (ARCHITECTURE D16). */
export class ApiRequestError extends Error {
  override readonly name = "ApiRequestError";
  readonly status: number;
  readonly code: ErrorCode;
  /** The code string exactly as the server sent it (equal to `code` unless the server is newer than this SDK). */
  readonly rawCode: string;
  readonly details?: Record<string, unknown>;
  readonly requestId?: string;
  /** `Retry-After` in seconds (429, 503). */
  readonly retryAfter?: number;

  constructor(init: {
    status: number;
    code: ErrorCode;
    rawCode?: string;
    message: string;
    details?: Record<string, unknown>;
    requestId?: string;
    retryAfter?: number;
  }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.rawCode = init.rawCode ?? init.code;
    if (init.details !== undefined) this.details = init.details;
    if (init.requestId !== undefined) this.requestId = init.requestId;
    if (init.retryAfter !== undefined) this.retryAfter = init.retryAfter;
  }
}

/** Narrows an unknown error to ApiRequestError, optionally of one code: `if (isApiError(e, "SessionNotFound")) …`. */
export function isApiError<C extends ErrorCode = ErrorCode>(error: unknown, code?: C): error is ApiRequestError & { code: C } {
  return error instanceof ApiRequestError && (code === undefined || error.code === code);
}

export type Result<T> = { ok: true; value: T } | { ok: false; error: ApiRequestError };

/** Errors as values: `const r = await toResult(client.sessions.get(id)); if (!r.ok) r.error.code …`. Other failures (network) still reject. */
export async function toResult<T>(promise: Promise<T>): Promise<Result<T>> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    if (error instanceof ApiRequestError) return { ok: false, error };
    throw error;
  }
}

/** A path from segments, each URL-encoded (`/` inside a value key becomes %2F, as the API expects). */
export function path(...segments: readonly (string | number)[]): string {
  return `/${segments.map((segment) => encodeURIComponent(String(segment))).join("/")}`;
}

/**
 * Refuses (a TypeError, nothing sent) a path with a `.` or `..` segment, a name the caller passed:
 * URLs resolve such segments (even percent-encoded) before any route sees them, so the request
 * would reach another route (an abort of operation `..` would abort whatever runs).
 */
function assertNoDotSegments(requestPath: string): void {
  const dot = requestPath.split("/").find((segment) => segment === "." || segment === "..");
  if (dot !== undefined) throw new TypeError(`A name may not be "${dot}": no URL can name it (the request would reach another route)`);
}

/** `?a=1&b=x` from the defined entries (undefined and null are left out); "" when none. */
export function queryString(query: Record<string, QueryValue> | undefined): string {
  if (query === undefined) return "";
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) params.set(name, String(value));
  }
  const text = params.toString();
  return text.length === 0 ? "" : `?${text}`;
}

/** Seconds as the API's `wait` query parameter reads them (at most three decimals). */
export function waitSeconds(seconds: number | undefined): string | undefined {
  if (seconds === undefined) return undefined;
  return String(Math.round(Math.max(0, seconds) * 1000) / 1000);
}

export class HttpClient {
  readonly baseUrl: string;
  private readonly fetcher: FetchLike;
  private readonly options: HttpClientOptions;

  constructor(options: HttpClientOptions) {
    this.options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    const fetcher = options.fetch ?? globalThis.fetch;
    if (typeof fetcher !== "function") throw new TypeError("No fetch available: pass options.fetch");
    // Called unbound: some runtimes refuse a `fetch` invoked as a method of another object.
    this.fetcher = (input, init) => fetcher(input, init);
  }

  /** The fetch this client sends with (watchLane reads with it too). */
  get fetch(): FetchLike {
    return this.fetcher;
  }

  /** The tenant key this client authenticates with (watchLane uses it). */
  get key(): string | undefined {
    return this.options.key;
  }

  /** Sends a request; 2xx → the parsed body, anything else → ApiRequestError. */
  async send<T>(spec: RequestSpec): Promise<HttpResponse<T>> {
    assertNoDotSegments(spec.path);
    const headers = new Headers(this.options.headers);
    const token = spec.auth === "admin" ? this.options.adminToken : this.options.key;
    if (token !== undefined) headers.set("authorization", `Bearer ${token}`);
    if (spec.idempotencyKey !== undefined) headers.set("idempotency-key", spec.idempotencyKey);
    for (const [name, value] of Object.entries(spec.headers ?? {})) headers.set(name, value);
    const hasBody = "body" in spec && spec.body !== undefined;
    if (hasBody) headers.set("content-type", "application/json");
    headers.set("accept", "application/json");
    const response = await this.fetcher(`${this.baseUrl}${spec.path}${queryString(spec.query)}`, {
      method: spec.method,
      headers,
      ...(hasBody && { body: JSON.stringify(spec.body) }),
      ...(spec.signal !== undefined && { signal: spec.signal }),
    });
    const text = await response.text();
    if (!response.ok) throw errorFromResponse(response, text);
    const body: T = text.length === 0 ? undefined : JSON.parse(text);
    return { status: response.status, body, headers: response.headers };
  }

  /**
   * A request whose body or answer is not JSON (JSON Lines exports and imports): `body` is sent as
   * it is with `contentType`; 2xx → the Response itself (its body unread), anything else → ApiRequestError.
   */
  async raw(spec: Omit<RequestSpec, "body">, body?: { data: BodyInit; contentType: string }): Promise<Response> {
    assertNoDotSegments(spec.path);
    const headers = new Headers(this.options.headers);
    const token = spec.auth === "admin" ? this.options.adminToken : this.options.key;
    if (token !== undefined) headers.set("authorization", `Bearer ${token}`);
    if (spec.idempotencyKey !== undefined) headers.set("idempotency-key", spec.idempotencyKey);
    for (const [name, value] of Object.entries(spec.headers ?? {})) headers.set(name, value);
    if (body) headers.set("content-type", body.contentType);
    // A streamed upload needs `duplex: "half"` in fetch implementations that stream request bodies.
    const init: RequestInit & { duplex?: "half" } = {
      method: spec.method,
      headers,
      ...(body && { body: body.data, ...(body.data instanceof ReadableStream && { duplex: "half" }) }),
      ...(spec.signal !== undefined && { signal: spec.signal }),
    };
    const response = await this.fetcher(`${this.baseUrl}${spec.path}${queryString(spec.query)}`, init);
    if (!response.ok) throw errorFromResponse(response, await response.text());
    return response;
  }

  /** `send`, returning only the body. */
  async json<T>(spec: RequestSpec): Promise<T> {
    return (await this.send<T>(spec)).body;
  }
}

const STATUS_FALLBACK: Record<number, ErrorCode> = {
  400: "ValidationFailed",
  401: "Unauthenticated",
  404: "NotFound",
  413: "PayloadTooLarge",
  426: "UpgradeRequired",
  429: "RateLimited",
  503: "Overloaded",
};

function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === "string" && Object.hasOwn(ERROR_STATUS, code);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The API's error body, or (a proxy's page, an empty body) a code inferred from the status.
 * `retryAfter`: the `Retry-After` header, else the wait the body names (`details.retryAfterSeconds`,
 * all a socket command's reply frame carries).
 */
export function errorFromResponse(response: Response, text: string): ApiRequestError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const error = isRecord(parsed) && isRecord(parsed.error) ? parsed.error : undefined;
  const fallback = STATUS_FALLBACK[response.status] ?? "Internal";
  const rawCode = typeof error?.code === "string" ? error.code : fallback;
  const header = Number(response.headers.get("retry-after") ?? Number.NaN);
  const named = isRecord(error?.details) ? error.details.retryAfterSeconds : undefined;
  const retryAfter = Number.isFinite(header) ? header : typeof named === "number" && Number.isFinite(named) && named > 0 ? named : Number.NaN;
  return new ApiRequestError({
    status: response.status,
    code: isErrorCode(rawCode) ? rawCode : fallback,
    rawCode,
    message: typeof error?.message === "string" ? error.message : `HTTP ${response.status}${text ? `: ${text.slice(0, 200)}` : ""}`,
    ...(isRecord(error?.details) && { details: error.details }),
    ...(typeof error?.requestId === "string" && { requestId: error.requestId }),
    ...(Number.isFinite(retryAfter) && { retryAfter }),
  });
}
