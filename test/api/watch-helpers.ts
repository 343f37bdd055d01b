import { env, exports } from "cloudflare:workers";
import type { HarnessEvent, LaneSnapshot } from "../../schema/lane.ts";
import { isRebase, reduceLaneSnapshot } from "../../schema/reduce-lane-snapshot.ts";
import type { WatchFrame, WatchMessage } from "../../schema/watch.ts";
import { toWire } from "../../schema/wire.ts";
import { unwrap } from "../helpers/sessions.ts";
import { call, newTenant } from "./helpers.ts";

/** Every wait on a socket is bounded: a missing message fails the test instead of hanging it. */
const WAIT_MS = 8_000;
const utf8 = new TextEncoder();

export type Received<S> = WatchMessage<S> | { type: "text"; text: string };

/** A client socket with an ordered inbox: `next()` takes messages in arrival order. */
export interface Client<S> {
  ws: WebSocket;
  response: Response;
  next(): Promise<Received<S>>;
  /** Reads until `match` holds; returns every message read, the matching one last. */
  until(match: (message: Received<S>) => boolean): Promise<Received<S>[]>;
  /** The close the socket saw (bounded wait). */
  closed(): Promise<{ code: number; reason: string }>;
  send(text: string): void;
  /** UTF-8 bytes of the snapshot and event messages received so far (what an acknowledgement counts). */
  receivedBytes(): number;
  /** Acknowledges every message received so far (`{"type":"ack","bytes":n}`). */
  ack(): void;
  /** Frames received, and how many of them were `batch` frames (their messages are in the inbox one by one). */
  frames(): { all: number; batches: number };
}

export function upgrade(path: string, headers: Record<string, string> = {}): Promise<Response> {
  return exports.default.fetch(`http://api.test${path}`, { headers: { Upgrade: "websocket", ...headers } });
}

/** Connects through the real app; `auth` is a key sent as Bearer header, or `{ protocol }` offered as subprotocols. */
export async function connect<S = LaneSnapshot>(path: string, auth: string | { protocols: string[] }): Promise<Client<S>> {
  const headers: Record<string, string> =
    typeof auth === "string" ? { authorization: `Bearer ${auth}` } : { "Sec-WebSocket-Protocol": auth.protocols.join(", ") };
  const response = await upgrade(path, headers);
  const ws = response.webSocket;
  if (response.status !== 101 || !ws) throw new Error(`Upgrade refused: ${response.status} ${await response.text()}`);
  ws.accept();
  const inbox: Received<S>[] = [];
  const waiters: (() => void)[] = [];
  let closedWith: { code: number; reason: string } | undefined;
  let receivedBytes = 0;
  const frames = { all: 0, batches: 0 };
  const wake = () => waiters.splice(0).forEach((resolve) => resolve());
  ws.addEventListener("message", (event) => {
    const text = typeof event.data === "string" ? event.data : "<binary>";
    if (!text.startsWith("{")) inbox.push({ type: "text", text });
    else {
      receivedBytes += utf8.encode(text).byteLength;
      const frame: WatchFrame<S> = JSON.parse(text);
      frames.all++;
      if (frame.type === "batch") frames.batches++;
      inbox.push(...(frame.type === "batch" ? frame.messages : [frame]));
    }
    wake();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.addEventListener("close", (event) => {
      closedWith = { code: event.code, reason: event.reason };
      resolve(closedWith);
      wake();
    });
  });
  const next = async (): Promise<Received<S>> => {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const message = inbox.shift();
      if (message) return message;
      if (closedWith) throw new Error(`Socket closed (${closedWith.code} ${closedWith.reason}) while a message was awaited`);
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`No message within ${WAIT_MS} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  };
  const until = async (match: (message: Received<S>) => boolean): Promise<Received<S>[]> => {
    const read: Received<S>[] = [];
    for (;;) {
      const message = await next();
      read.push(message);
      if (match(message)) return read;
    }
  };
  return {
    ws,
    response,
    next,
    until,
    closed: () => bounded(closed, "close"),
    send: (text) => ws.send(text),
    receivedBytes: () => receivedBytes,
    ack: () => ws.send(JSON.stringify({ type: "ack", bytes: receivedBytes })),
    frames: () => ({ ...frames }),
  };
}

function bounded<T>(promise: Promise<T>, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`No ${what} within ${WAIT_MS} ms`)), WAIT_MS);
    promise.then((value) => {
      clearTimeout(timer);
      resolve(value);
    }, reject);
  });
}

export async function expectSnapshot<S>(client: Client<S>): Promise<{ seq: number; snapshot: S }> {
  const message = await client.next();
  if (message.type !== "snapshot") throw new Error(`Expected a snapshot, got ${JSON.stringify(message).slice(0, 200)}`);
  return message;
}

export function events<S>(messages: Received<S>[]): { seq: number; event: HarnessEvent }[] {
  return messages.flatMap((message) => (message.type === "event" ? [{ seq: message.seq, event: message.event }] : []));
}

export const isRunEnd =
  (runId: string) =>
  <S>(message: Received<S>): boolean =>
    message.type === "event" && message.event.type === "run_end" && message.event.runId === runId;

export function fold(snapshot: LaneSnapshot, received: HarnessEvent[]): LaneSnapshot {
  let folded = snapshot;
  for (const event of received) {
    const next = reduceLaneSnapshot(folded, event);
    if (isRebase(next)) throw new Error("Unexpected rebase");
    folded = next;
  }
  return folded;
}

export function sessionObject(tenantId: string, sessionId: string) {
  return env.SESSIONS.getByName(`${tenantId}:${sessionId}`);
}

let counter = 0;

/** A tenant, a session created through the API, and lanes created over the lane RPC. */
export async function watchSetup(prefix: string, lanes: string[] = ["main"]) {
  const tenant = await newTenant(prefix);
  const sessionId = `${prefix}_${(counter++).toString(36)}_${crypto.randomUUID().slice(0, 8)}`;
  const created = await call("/v1/sessions", { body: { id: sessionId }, token: tenant.key });
  if (created.status !== 201) throw new Error(`session creation failed: ${created.status} ${await created.text()}`);
  const stub = sessionObject(tenant.tenantId, sessionId);
  for (const lane of lanes) unwrap(await stub.acquireLane(lane));
  return { ...tenant, sessionId, stub, sessionPath: `/v1/sessions/${sessionId}` };
}

/** Accepts a prompt over RPC (the pass starts at once) and returns its id. */
export async function prompt(stub: ReturnType<typeof sessionObject>, lane: string, text: string): Promise<string> {
  return unwrap(await stub.acceptOperation(lane, toWire({ kind: "prompt", prompt: text }))).operationId;
}

/** Waits (bounded, server side) until the operation settled. */
export async function settled(stub: ReturnType<typeof sessionObject>, lane: string, operationId: string): Promise<void> {
  const view = unwrap(await stub.operation(lane, operationId, 10_000));
  if (view.state !== "settled") throw new Error(`Operation ${operationId} did not settle`);
}

export function strictlyIncreasing(seqs: number[]): boolean {
  return seqs.every((seq, i) => i === 0 || seq > (seqs[i - 1] ?? Number.POSITIVE_INFINITY));
}

/** Appends `count` custom entries of about `bytes` each to a lane (over RPC, one commit each). */
export async function fillLane(stub: ReturnType<typeof sessionObject>, lane: string, count: number, bytes: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const data = `${i}:`.padEnd(bytes, "x");
    ids.push(unwrap(await stub.appendToLane(lane, toWire({ customType: "blob", data }))).entryId);
  }
  return ids;
}
