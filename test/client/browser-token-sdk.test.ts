import { exports } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { ApiRequestError, createClient, isApiError, watchLane, type FetchLike } from "../../client/index.ts";
import { newTenant } from "../api/helpers.ts";
import { WorkerdWebSocket } from "./sockets.ts";

// client.sessions.createBrowserToken against the real app: a backend mints with its key; the page's
// client holds only the token, which reaches its lane (REST and watchLane) and nothing else.

const BASE_URL = "http://api.test";
const appFetch: FetchLike = (input, init) => exports.default.fetch(input, init);

describe("createBrowserToken", { timeout: 30_000 }, () => {
  beforeEach(() => {
    WorkerdWebSocket.opened = [];
  });

  it("mints a token a page's client and watchLane use in place of the key, within its scopes", async () => {
    const { key } = await newTenant("sdk_token");
    const backend = createClient({ baseUrl: BASE_URL, key, fetch: appFetch });
    const { id } = await backend.sessions.create();
    await backend.lanes.put(id, "main");
    const minted = await backend.sessions.createBrowserToken(id, { scopes: ["watch", "prompt"], lanes: ["main"], ttlSeconds: 300 });
    expect(minted.token).toMatch(/^bt_/);
    expect(minted.expiresAt).toBeGreaterThan(Date.now());

    const page = createClient({ baseUrl: BASE_URL, key: minted.token, fetch: appFetch });
    const outcome = await page.prompt(id, "main", "from the page");
    expect(outcome.state).toBe("settled");
    const handle = watchLane({ baseUrl: BASE_URL, key: minted.token, sessionId: id, lane: "main", WebSocket: WorkerdWebSocket });
    const replica = await handle.ready;
    expect(replica).toEqual((await page.lanes.snapshot(id, "main")).snapshot);
    expect(WorkerdWebSocket.opened[0]?.protocol).toBe(`bearer.${minted.token}`);
    handle.close();

    const listing = await page.sessions.list().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isApiError(listing, "TokenScope")).toBe(true);
    const minting = await page.sessions.createBrowserToken(id, { scopes: ["watch"] }).catch((error: unknown) => error);
    expect(minting).toBeInstanceOf(ApiRequestError);
    expect(minting).toMatchObject({ status: 403, code: "TokenScope" });
    const bounded = await backend.sessions.createBrowserToken(id, { scopes: ["watch"], ttlSeconds: 7200 }).catch((error: unknown) => error);
    expect(bounded).toMatchObject({ status: 400, code: "ValidationFailed" });
  });
});
