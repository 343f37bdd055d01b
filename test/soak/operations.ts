import { sleep, type SoakClient } from "./cluster.ts";
import type { Ledger } from "./ledger.ts";

// Waiting for an operation as a patient client does: long-poll its view; a pending run answers at
// once, so pause between asks. A suspended deferred run is polled by the service's minute cron
// (docs/api-lanes.md "Deferred runs"; `npm start` fires it every minute): the session holds no
// timer of its own meanwhile, so only the deferred sweep wakes it. Every other suspended run is
// asked to poll now (a permit, as `POST …/resume` documents); the one in between is left to the
// cron (the first, third, … the soak sees), which must resume it across the kills as well.

export type OperationView =
  | { state: "settled"; result: { status: string; error?: { code: string; message: string }; startedAt: number; endedAt: number } }
  | { state: "active"; status: string; at: string; deferred?: unknown }
  | { state: "pending"; position: number };

/** The REST path of one lane. */
export function lanePath(sessionId: string, lane: string): string {
  return `/v1/sessions/${sessionId}/lanes/${lane}`;
}

/** The operation's view once settled, or the last view when `deadline` passed (or `giveUp` said so) first. */
export async function awaitSettled(client: SoakClient, ledger: Ledger, lanePath: string, operationId: string, deadline: number, giveUp: () => boolean = () => false): Promise<OperationView> {
  const path = `${lanePath}/operations/${operationId}`;
  let view = await client.expect<OperationView>(200, "GET", path);
  while (view.state !== "settled" && Date.now() < deadline && !giveUp()) {
    if (view.state === "pending") await sleep(500);
    if (view.state === "active" && view.deferred !== undefined) {
      if (!ledger.suspended.has(operationId)) {
        ledger.suspended.add(operationId);
        if (ledger.suspended.size % 2 === 1) ledger.cronOnly.add(operationId);
      }
      if (!ledger.cronOnly.has(operationId)) await client.send("POST", `${path}/resume`);
    }
    view = await client.expect<OperationView>(200, "GET", `${path}?wait=10`);
  }
  return view;
}
