import { evictDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { createClient, isApiError, type AgentSessionsClient } from "../../client/index.ts";
import { newTenant } from "../api/helpers.ts";
import { WorkerdWebSocket } from "./sockets.ts";

// The SDK's commands on an open watch (docs/api-watch.md "Commands on the socket"): prompt, steer,
// followUp and abort answered by reply frames; a refusal rejects with the API's error; a command
// whose socket is lost is sent again on the next one and done once.

const BASE_URL = "http://api.test";

async function setup(prefix: string): Promise<{ client: AgentSessionsClient; key: string; tenantId: string; sessionId: string }> {
  const { key, tenantId } = await newTenant(prefix);
  const client = createClient({ baseUrl: BASE_URL, key, fetch: (input, init) => exports.default.fetch(input, init) });
  const { id } = await client.sessions.create();
  await client.lanes.put(id, "main");
  return { client, key, tenantId, sessionId: id };
}

describe("watchLane commands", { timeout: 30_000 }, () => {
  beforeEach(() => {
    WorkerdWebSocket.opened = [];
  });

  it("prompts on the open watch, follows the run in the replica, and a busy prompt rejects with LaneBusy", async () => {
    const { client, sessionId } = await setup("sdk_cmd");
    const handle = client.watchLane(sessionId, "main", { WebSocket: WorkerdWebSocket });
    await handle.ready;
    const admission = await handle.prompt("hello from the socket");
    expect(admission).toMatchObject({ operationId: expect.any(String), kind: "run" });
    await expect.poll(() => handle.snapshot()?.lastResult?.operationId, { timeout: 5_000 }).toBe(admission.operationId);
    expect(handle.snapshot()?.transcript).toHaveLength(2);

    const steered = await handle.steer("nothing runs: a steer waits for the next run");
    expect(steered).toMatchObject({ entryId: expect.any(String) });
    const refused = await handle.abort().catch((error: unknown) => error);
    expect(isApiError(refused, "NoActiveOperation")).toBe(true);
    handle.close();
  });

  it("a prompt sent while the socket is being replaced is sent on the new socket, once", async () => {
    const { client, sessionId, tenantId } = await setup("sdk_cmd_again");
    const handle = client.watchLane(sessionId, "main", { WebSocket: WorkerdWebSocket, backoff: { initialMs: 20, maxMs: 50 } });
    await handle.ready;
    // The object restarts: the socket closes and the watch reconnects; the command waits for it.
    await evictDurableObject(env.SESSIONS.getByName(`${tenantId}:${sessionId}`));
    const admission = await handle.prompt("sent across a reconnect", { id: "across-1" });
    await expect.poll(() => handle.snapshot()?.lastResult?.operationId, { timeout: 10_000 }).toBe(admission.operationId);
    const transcript = (await client.lanes.snapshot(sessionId, "main")).snapshot.transcript;
    expect(transcript.filter((entry) => entry.type === "message" && entry.message.role === "user")).toHaveLength(1);
    handle.close();
  });
});
