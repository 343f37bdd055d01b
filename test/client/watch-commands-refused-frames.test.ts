import { exports } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { ApiRequestError, createClient, type AgentSessionsClient, type LaneWatch } from "../../client/index.ts";
import { newTenant } from "../api/helpers.ts";
import { WorkerdWebSocket, settled } from "./sockets.ts";

// One command on an open watch (client/README.md "watchLane": prompt, steer, followUp, abort)
// resolves with its REST twin's answer or rejects on its own. A frame the server cannot take as a
// command (docs/api-watch.md: an id of 1–64 characters of A–Z a–z 0–9 _ . : -, at most 256 KiB a
// frame) closes the socket with 1008, which ended the whole watch: the SDK now refuses such a
// command alone, and sends nothing.

const BASE_URL = "http://api.test";

async function openWatch(prefix: string): Promise<{ client: AgentSessionsClient; sessionId: string; handle: LaneWatch }> {
  const { key } = await newTenant(prefix);
  const client = createClient({ baseUrl: BASE_URL, key, fetch: (input, init) => exports.default.fetch(input, init) });
  const { id } = await client.sessions.create();
  await client.lanes.put(id, "main");
  const handle = client.watchLane(id, "main", { WebSocket: WorkerdWebSocket });
  await handle.ready;
  return { client, sessionId: id, handle };
}

describe("commands the server could not take are refused alone; the watch stays open", { timeout: 60_000 }, () => {
  beforeEach(() => {
    WorkerdWebSocket.opened = [];
  });

  it("a command with an id outside the documented alphabet is refused on its own; the watch stays open", async () => {
    const { handle } = await openWatch("rv_cmd_id");
    const refused = await settled(handle.prompt("hello", { id: "turn 1" }));
    // Refused by itself (a TypeError, like a reused id), not by the watch ending.
    expect(refused).toBeInstanceOf(TypeError);
    expect(handle.status()).toBe("open");
    expect(await handle.steer("still watching")).toEqual({ entryId: expect.any(String) });
    handle.close();
  });

  it("a prompt command over the 256 KiB frame bound is refused on its own (send it over REST); the watch stays open", async () => {
    const { handle } = await openWatch("rv_cmd_big");
    const refused = await settled(handle.prompt("x".repeat(300_000)));
    expect(refused).toBeInstanceOf(ApiRequestError);
    expect(refused).toMatchObject({ status: 413, code: "PayloadTooLarge" });
    expect(handle.status()).toBe("open");
    expect(await handle.steer("still watching")).toEqual({ entryId: expect.any(String) });
    handle.close();
  });
});
