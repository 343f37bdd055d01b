import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Rng } from "../api/fuzz-generators.ts";
import { listenOnLoopback, readBody, type LoopbackServer } from "../node/loopback-server.ts";

// The tenant's webhook endpoint under the soak: a local receiver that refuses a seeded share of
// events' first attempts, so that redelivery (docs/webhooks.md "Retries": another attempt 30 s
// later, then 60 s, with the same event id) runs under the kills too. For each new event id it
// draws how that event fares: answered at once (most), its first attempt answered 503, its first
// two attempts answered 503, or its first attempt left unanswered past the service's 10-second
// timeout (then closed). Every attempt is recorded with the answer given.

/** Shares of events whose first attempt(s) fail (the rest are answered 204 at once). */
const FAIL_FIRST = 0.1;
const FAIL_TWICE = 0.02;
const TIME_OUT_FIRST = 0.015;
/** Longer than the service waits for an answer (10 s). */
const HOLD_MS = 12_000;

export interface FlakyDelivery {
  eventId: string | null;
  attempt: number;
  /** What the receiver did with this attempt: 204, 503, or "timeout". */
  answer: 204 | 503 | "timeout";
  rawBody: string;
}

export interface FlakyReceiver extends LoopbackServer {
  deliveries(): FlakyDelivery[];
}

type Plan = { failures: number; timeout: boolean };

export async function startFlakyReceiver(rng: Rng): Promise<FlakyReceiver> {
  const received: FlakyDelivery[] = [];
  const plans = new Map<string, Plan>();
  const held = new Set<ServerResponse>();

  function planFor(eventId: string): Plan {
    let plan = plans.get(eventId);
    if (!plan) {
      const roll = rng.next();
      plan = roll < TIME_OUT_FIRST ? { failures: 1, timeout: true } : roll < TIME_OUT_FIRST + FAIL_TWICE ? { failures: 2, timeout: false } : roll < TIME_OUT_FIRST + FAIL_TWICE + FAIL_FIRST ? { failures: 1, timeout: false } : { failures: 0, timeout: false };
      plans.set(eventId, plan);
    }
    return plan;
  }

  function receive(request: IncomingMessage, response: ServerResponse, raw: string): void {
    const header = request.headers["webhook-id"];
    const eventId = (Array.isArray(header) ? header[0] : header) ?? null;
    const attempt = received.filter((delivery) => delivery.eventId === eventId).length + 1;
    const plan = eventId === null ? { failures: 0, timeout: false } : planFor(eventId);
    const answer = attempt > plan.failures ? 204 : plan.timeout ? "timeout" : 503;
    received.push({ eventId, attempt, answer, rawBody: raw });
    if (answer === "timeout") {
      held.add(response);
      setTimeout(() => {
        held.delete(response);
        response.destroy();
      }, HOLD_MS).unref();
      return;
    }
    if (answer === 503) response.writeHead(503, { "content-type": "text/plain" }).end("not now");
    else response.writeHead(204).end();
  }

  const server = createServer((request, response) => {
    readBody(request).then(
      (raw) => {
        if (request.method === "POST") receive(request, response, raw);
        else response.writeHead(404).end();
      },
      () => response.destroy(),
    );
  });
  const listening = await listenOnLoopback(server, held);
  return { ...listening, deliveries: () => [...received] };
}
