import { Agent, request, type IncomingMessage } from "node:http";
import WebSocket from "ws";
import { summarize, type Summary } from "../report.ts";
import { pool } from "./turn-prompts.ts";

// The client side of P14's floor (bench/sse-floor/worker.ts): an audience of one topology, then
// events sent by the object the way P7 and P14 time theirs (the arrival on the machine's clock
// minus the object's stamp), read by clients as thin as P7's and P14's. One event at a time: the
// next is sent once every client has the last and the runtime has had a moment to settle, as the
// answers of P14 follow each other.

export type FloorTopology = "sockets" | "object-sse" | "relay-sse";

export interface FloorResult {
  /** Every client's latency for every counted event. */
  all: Summary;
  /** Per event, the latency of its last client. */
  last: Summary;
  /** Per event, the latency of its first client. */
  first: Summary;
}

const OPEN_TIMEOUT_MS = 30_000;
const SETTLE_MS = 100;
/** One connection per stream: the pool must never queue a stream behind another. */
const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

interface FloorClient {
  latencies: number[];
  close(): void;
}

/** `clients` of `topology`; `warmUp` uncounted events, then `events` counted ones, sent `slice` clients a turn. */
export async function measureFloor(baseUrl: string, topology: FloorTopology, options: { clients: number; events: number; warmUp: number; slice: number }): Promise<FloorResult> {
  const { clients, events, warmUp, slice } = options;
  const audience = await pool(Array.from({ length: clients }, () => () => open(baseUrl, topology)), 25);
  const lasts: number[] = [];
  const firsts: number[] = [];
  try {
    for (let index = 0; index < warmUp + events; index++) {
      const before = audience.map((client) => client.latencies.length);
      const sent = await fetch(`${baseUrl}/send?to=${topology}&slice=${slice}`, { method: "POST" });
      const { audience: size } = (await sent.json()) as { audience: number };
      if (size !== clients) throw new Error(`the floor sent to ${size} clients, not ${clients}`);
      await until(() => audience.every((client, at) => client.latencies.length > (before[at] ?? 0)));
      const latest = audience.map((client) => client.latencies.at(-1) ?? 0);
      if (index < warmUp) for (const client of audience) client.latencies.splice(0);
      else {
        lasts.push(Math.max(...latest));
        firsts.push(Math.min(...latest));
      }
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    }
    if (audience.some((client) => client.latencies.length !== events)) throw new Error("a client of the floor missed or repeated an event");
    return { all: summarize(audience.flatMap((client) => client.latencies)), last: summarize(lasts), first: summarize(firsts) };
  } finally {
    for (const client of audience) client.close();
  }
}

async function until(done: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error("timed out waiting for the floor's event at every client");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The latency of each stamped event in `text` (events are whole within a message or SSE block). */
function readStamps(text: string, receivedAt: number, into: number[]): void {
  for (let at = text.indexOf('"sentAt":'); at >= 0; at = text.indexOf('"sentAt":', at + 1)) {
    into.push(receivedAt - Number.parseInt(text.slice(at + 9, at + 30), 10));
  }
}

function open(baseUrl: string, topology: FloorTopology): Promise<FloorClient> {
  return topology === "sockets" ? openSocket(baseUrl) : openStream(baseUrl, topology);
}

function openSocket(baseUrl: string): Promise<FloorClient> {
  return new Promise((resolve, reject) => {
    const latencies: number[] = [];
    const ws = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/sockets`, { perMessageDeflate: false });
    const timer = setTimeout(() => reject(new Error("floor socket: not opened in time")), OPEN_TIMEOUT_MS);
    ws.on("message", (data: Buffer) => readStamps(data.toString("utf8"), Date.now(), latencies));
    ws.once("message", () => {
      clearTimeout(timer);
      resolve({ latencies, close: () => ws.terminate() });
    });
    ws.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

function openStream(baseUrl: string, topology: "object-sse" | "relay-sse"): Promise<FloorClient> {
  return new Promise((resolve, reject) => {
    const latencies: number[] = [];
    const timer = setTimeout(() => reject(new Error("floor stream: not opened in time")), OPEN_TIMEOUT_MS);
    const outgoing = request(new URL(`/${topology}`, baseUrl), { agent, headers: { accept: "text/event-stream" } }, (response: IncomingMessage) => {
      if (response.statusCode !== 200) {
        clearTimeout(timer);
        reject(new Error(`floor stream refused: ${response.statusCode}`));
        return;
      }
      response.setEncoding("utf8");
      let buffer = "";
      response.on("data", (chunk: string) => {
        const receivedAt = Date.now();
        buffer += chunk;
        const end = buffer.lastIndexOf("\n\n");
        if (end < 0) return;
        readStamps(buffer.slice(0, end), receivedAt, latencies);
        buffer = buffer.slice(end + 2);
      });
      response.once("data", () => {
        clearTimeout(timer);
        resolve({ latencies, close: () => response.destroy() });
      });
    });
    outgoing.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    outgoing.end();
  });
}
