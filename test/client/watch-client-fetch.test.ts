import { exports } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { createClient, type FetchLike, type WatchError } from "../../client/index.ts";
import { newTenant } from "../api/helpers.ts";
import { WorkerdWebSocket } from "./sockets.ts";

// client/README.md: `createClient({ baseUrl, key?, adminToken?, fetch?, headers? })`; the SDK "needs
// `fetch` … elsewhere pass your own (`fetch`, `WebSocket` options)"; `client.watchLane(sid, lane,
// options?)` is listed among the client's methods, and a refused connection "reads the lane once
// over REST (`GET …/lanes/{lane}`, same key)" and "ends with a `WatchError` whose `code`
// (`Unauthenticated`, `SessionNotFound`, `UnknownLane`, …) and `status` are the API's".
//
// A client made with its own `fetch` (a service binding, a proxy, a runtime without a global
// fetch) makes those REST reads of its watches with that fetch; here `globalThis.fetch` cannot
// reach the service, so a watch reading through it would never classify the refusal.

const BASE_URL = "http://api.test";

describe("client.watchLane and the client's own fetch", { timeout: 30_000 }, () => {
  beforeEach(() => {
    WorkerdWebSocket.opened = [];
  });

  it("a watch of an unknown lane, opened from a client with its own fetch, ends with UnknownLane read through that fetch", async () => {
    const { key } = await newTenant("rv_wfetch");
    const calls: string[] = [];
    const fetch: FetchLike = (input, init) => {
      calls.push(`${init?.method ?? "GET"} ${input}`);
      return exports.default.fetch(input, init);
    };
    const client = createClient({ baseUrl: BASE_URL, key, fetch });
    const { id } = await client.sessions.create();
    calls.length = 0;

    const errors: WatchError[] = [];
    const watch = client.watchLane(id, "nope", { WebSocket: WorkerdWebSocket, backoff: { initialMs: 5, maxMs: 10, maxAttempts: 2 }, onError: (error) => errors.push(error) });
    const refusal = await watch.ready.then(
      () => undefined,
      (error: unknown) => error,
    );
    // The lane read that classifies the refused upgrade went through the client's fetch …
    expect(calls).toContain(`GET ${BASE_URL}/v1/sessions/${id}/lanes/nope`);
    // … and the watch ended with the API's code, as documented.
    expect(refusal).toMatchObject({ kind: "ended", code: "UnknownLane", status: 404 });
  });
});
