import { sleep, type SoakClient } from "./cluster.ts";

// Waiting for an operation as a patient client does: long-poll its view; a pending run answers at
// once, so pause between asks; a deferred run waits for its poll, so ask it to poll now (a permit,
// as `POST …/resume` documents) rather than wait for the minute cron.

export type OperationView =
  | { state: "settled"; result: { status: string; error?: { code: string } } }
  | { state: "active"; status: string; at: string; deferred?: unknown }
  | { state: "pending"; position: number };

/** The operation's view once settled, or the last view when `deadline` passed first. */
export async function awaitSettled(client: SoakClient, lanePath: string, operationId: string, deadline: number): Promise<OperationView> {
  const path = `${lanePath}/operations/${operationId}`;
  let view = await client.expect<OperationView>(200, "GET", path);
  while (view.state !== "settled" && Date.now() < deadline) {
    if (view.state === "pending") await sleep(500);
    if (view.state === "active" && view.deferred !== undefined) await client.send("POST", `${path}/resume`);
    view = await client.expect<OperationView>(200, "GET", `${path}?wait=10`);
  }
  return view;
}
