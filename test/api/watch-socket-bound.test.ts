import { runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_WATCH_SOCKETS_PER_SESSION } from "../../schema/watch.ts";
import { connect, upgrade, watchSetup } from "./watch-helpers.ts";

// A session holds at most MAX_WATCH_SOCKETS_PER_SESSION watch sockets at once (its SSE streams'
// relays included), below the platform's 32,768 hibernatable sockets per object: an upgrade (or an
// SSE stream) beyond is 422 LimitExceeded with `details.resource: "watchers"`, before any socket
// exists. Ten thousand sockets are not opened in a test: the object's count of them is raised.

describe("watch sockets per session", () => {
  it("an upgrade or an SSE stream beyond the bound is 422 LimitExceeded; below it, one connects", async () => {
    const setup = await watchSetup("wsbound");
    const path = `${setup.sessionPath}/lanes/main/watch`;
    await runInDurableObject(setup.stub, (_instance: object, state) => {
      const own = state.getWebSockets.bind(state);
      Reflect.set(state, "getWebSockets", (tag?: string) => (tag === "watch" ? [...own(tag), ...Array.from({ length: MAX_WATCH_SOCKETS_PER_SESSION }, () => own(tag)[0])] : own(tag)));
    });
    try {
      const refused = await upgrade(path, { authorization: `Bearer ${setup.key}` });
      expect(refused.status).toBe(422);
      expect(await refused.json()).toMatchObject({ error: { code: "LimitExceeded", details: { resource: "watchers", limit: MAX_WATCH_SOCKETS_PER_SESSION } } });
      const stream = await exports.default.fetch(`http://api.test${setup.sessionPath}/lanes/main/events`, { headers: { authorization: `Bearer ${setup.key}`, accept: "text/event-stream" } });
      expect(stream.status).toBe(422);
    } finally {
      await runInDurableObject(setup.stub, (_instance: object, state) => {
        Reflect.deleteProperty(state, "getWebSockets");
      });
    }
    const client = await connect(path, setup.key);
    expect(client.response.status).toBe(101);
    client.ws.close();
  });
});
