import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import type { HarnessEvent, LaneSnapshot } from "../../schema/lane.ts";
import type { LaneWatchMessage, WatchReply } from "../../schema/watch.ts";
import { devVar, devVarsProblems } from "../../scripts/dev-vars.mjs";

// What an API user has: HTTP with a bearer token, a WebSocket client, and patience with a limit.
// Every wait here is bounded and fails with a message naming what was awaited.

/** The admin token `npm start` uses: read from the repo's .dev.vars (created by start.mjs when missing). */
export function readAdminToken(): string {
  const text = readFileSync(new URL("../../.dev.vars", import.meta.url), "utf8");
  const token = devVar(text, "ADMIN_TOKEN");
  if (!token) throw new Error(".dev.vars has no ADMIN_TOKEN line");
  // A token from before the service required 32 characters: every admin call would be 503.
  const [problem] = devVarsProblems(text);
  if (problem) throw new Error(problem);
  return token;
}

export interface Reply<T> {
  status: number;
  headers: Headers;
  body: T;
}

export interface RequestOptions {
  body?: unknown;
  headers?: Record<string, string>;
}

/** An HTTP client bound to a base URL and one bearer token. */
export class Api {
  constructor(
    readonly baseUrl: string,
    readonly token: string,
  ) {}

  /** One request; the JSON body (or null for an empty one) is typed by the caller's expectation. */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<Reply<T>> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, ...options.headers };
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
    });
    const text = await response.text();
    const body: T = text === "" ? null : JSON.parse(text);
    return { status: response.status, headers: response.headers, body };
  }

  /** A request that must answer `status`; returns its body. */
  async expect<T>(status: number, method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const reply = await this.request<T>(method, path, options);
    if (reply.status !== status) {
      throw new Error(`${method} ${path}: expected ${status}, got ${reply.status} ${JSON.stringify(reply.body)}`);
    }
    return reply.body;
  }
}

export interface ErrorBody {
  error: { code: string; message: string; requestId?: string };
}

/** A new tenant (unique id) with one key. */
export async function createTenant(admin: Api, prefix: string): Promise<{ tenantId: string; keyId: string; key: string; api: Api }> {
  const tenant = await admin.expect<{ id: string }>(201, "POST", "/v1/admin/tenants", {
    body: { id: `${prefix}-${randomUUID().slice(0, 8)}`, name: prefix },
  });
  const { keyId, key } = await admin.expect<{ keyId: string; key: string }>(201, "POST", `/v1/admin/tenants/${tenant.id}/keys`, {
    body: { name: "e2e" },
  });
  return { tenantId: tenant.id, keyId, key, api: new Api(admin.baseUrl, key) };
}

/** A session with lane `main`, its model switched to `scripted/script` (steps from the list `scripted/steps`). */
export async function scriptedSession(api: Api, id: string): Promise<void> {
  await api.expect(201, "POST", "/v1/sessions", { body: { id } });
  await api.expect(201, "PUT", `/v1/sessions/${id}/lanes/main`, { body: {} });
  await api.expect(200, "PATCH", `/v1/sessions/${id}/lanes/main/config`, {
    body: { model: { provider: "scripted", modelId: "script" } },
  });
}

/** A scripted step as the API takes it (the full list is in the API guide); a few shapes the tests use. */
export type ScriptStep = { text: string; chunkMs?: number } | { deferred: { pollAfterMs?: number; ready: ScriptStep } };

export async function appendSteps(api: Api, sessionId: string, steps: ScriptStep[]): Promise<void> {
  for (const step of steps) await api.expect(201, "POST", `/v1/sessions/${sessionId}/lists/scripted/steps`, { body: step });
}

/** `count` distinct words: streamed one chunk per word when the step has `chunkMs`. */
export function words(count: number, stem = "word"): string {
  return Array.from({ length: count }, (_, i) => `${stem}${i}`).join(" ");
}

/** Starts a prompt run with the primitive (202) and returns its operation id. */
export async function startRun(api: Api, sessionId: string, prompt: string): Promise<string> {
  const accepted = await api.expect<{ operationId: string; kind: string }>(202, "POST", `/v1/sessions/${sessionId}/lanes/main/operations`, {
    body: { kind: "prompt", prompt },
  });
  return accepted.operationId;
}

export interface OperationRecord {
  operationId: string;
  kind: string;
  status: string;
  fromTipId: string | null;
  tipId: string | null;
  startedAt: number;
  endedAt: number;
  error?: { code: string; message: string };
}

type OperationView = { state: "settled"; result: OperationRecord } | { state: "active"; status: string; at: string };

/** Long-polls GET …/operations/{id}?wait until the operation settles (bounded); returns its record. */
export async function settled(api: Api, sessionId: string, operationId: string, timeoutMs = 45_000): Promise<OperationRecord> {
  const deadline = Date.now() + timeoutMs;
  let last: OperationView | undefined;
  while (Date.now() < deadline) {
    const wait = Math.max(1, Math.min(20, Math.floor((deadline - Date.now()) / 1000)));
    const reply = await api.request<OperationView>("GET", `/v1/sessions/${sessionId}/lanes/main/operations/${operationId}?wait=${wait}`);
    if (reply.status !== 200) throw new Error(`GET operation ${operationId}: ${reply.status} ${JSON.stringify(reply.body)}`);
    last = reply.body;
    if (last.state === "settled") return last.result;
  }
  throw new Error(`Operation ${operationId} did not settle within ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
}

/** Polls `read` until `done` holds (bounded); returns the value that satisfied it. */
export async function pollUntil<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await read();
    if (done(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)?.slice(0, 500)})`);
}

/** What a lane socket delivers: its messages, the replies to commands sent on it, and texts such as `pong`. */
export type Received = LaneWatchMessage | WatchReply | { type: "text"; text: string };

/** A real WebSocket client with an ordered inbox; every read is bounded. */
export interface WatchClient {
  ws: WebSocket;
  /** Every message received so far, in order. */
  log: Received[];
  next(): Promise<Received>;
  /** Reads until `match` holds; returns what was read, the match last. */
  until(match: (message: Received) => boolean): Promise<Received[]>;
  close(): Promise<void>;
}

const WATCH_WAIT_MS = 20_000;

/** Opens `…/lanes/{lane}/watch` with the global WebSocket, authenticated by the `bearer.<key>` subprotocol. */
export async function openLaneWatch(baseUrl: string, key: string, sessionId: string, lane: string): Promise<WatchClient> {
  const url = `${baseUrl.replace(/^http/, "ws")}/v1/sessions/${sessionId}/lanes/${lane}/watch`;
  const ws = new WebSocket(url, [`bearer.${key}`]);
  const log: Received[] = [];
  const inbox: Received[] = [];
  let closed: { code: number; reason: string } | undefined;
  let wake: (() => void) | undefined;
  ws.addEventListener("message", (event) => {
    const text = typeof event.data === "string" ? event.data : "<binary>";
    const message: Received = text.startsWith("{") ? JSON.parse(text) : { type: "text", text };
    log.push(message);
    inbox.push(message);
    wake?.();
  });
  const closedPromise = new Promise<void>((resolve) =>
    ws.addEventListener("close", (event) => {
      closed = { code: event.code, reason: event.reason };
      wake?.();
      resolve();
    }),
  );
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`WebSocket ${url} did not open within ${WATCH_WAIT_MS} ms`)), WATCH_WAIT_MS);
    ws.addEventListener("open", () => {
      clearTimeout(timer);
      resolve();
    });
    ws.addEventListener("close", (event) => {
      clearTimeout(timer);
      reject(new Error(`WebSocket closed before open: ${event.code} ${event.reason}`));
    });
  });
  const next = async (): Promise<Received> => {
    const deadline = Date.now() + WATCH_WAIT_MS;
    for (;;) {
      const message = inbox.shift();
      if (message) return message;
      if (closed) throw new Error(`Socket closed (${closed.code} ${closed.reason}) while a message was awaited`);
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`No watch message within ${WATCH_WAIT_MS} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  };
  const until = async (match: (message: Received) => boolean): Promise<Received[]> => {
    const read: Received[] = [];
    for (;;) {
      const message = await next();
      read.push(message);
      if (match(message)) return read;
    }
  };
  const close = async () => {
    if (ws.readyState === WebSocket.CLOSED) return;
    ws.close(1000, "done");
    await Promise.race([closedPromise, new Promise((resolve) => setTimeout(resolve, 5000))]);
  };
  return { ws, log, next, until, close };
}

export const isEvent =
  (type: HarnessEvent["type"], runId?: string) =>
  (message: Received): boolean =>
    message.type === "event" && message.event.type === type && (runId === undefined || ("runId" in message.event && message.event.runId === runId));

/** The events of `messages` in order, with their seqs. */
export function eventsOf(messages: Received[]): { seq: number; event: HarnessEvent }[] {
  return messages.flatMap((message) => (message.type === "event" ? [{ seq: message.seq, event: message.event }] : []));
}

/** The shared client fold over `events`; a rebase is unexpected in these flows. */
export { foldEvents as fold } from "../lane-fold.ts";

/** The text of an assistant or user message entry (for readable transcript assertions). */
export function transcriptText(snapshot: LaneSnapshot): string[] {
  return snapshot.transcript.map((entry) => {
    if (entry.type !== "message") return `[${entry.type}]`;
    const message = entry.message;
    if (message.role === "user") {
      const content = typeof message.content === "string" ? message.content : message.content.map((part) => (part.type === "text" ? part.text : "")).join("");
      return `user: ${content}`;
    }
    if (message.role === "assistant") return `assistant: ${message.content.map((part) => (part.type === "text" ? part.text : "")).join("")}`;
    return `[${message.role}]`;
  });
}
