import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, createTenant, eventsOf, isEvent, openLaneWatch, readAdminToken } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// Compaction inside a run and navigation with a branch summary against `npm start`, as a client
// sees them: a session whose compaction settings make `scripted/echo` (a 128,000-token window)
// compact after a few hundred tokens, a WebSocket watcher on the lane, then a summarized move back.

type Entry = { id: string; type: string; parentId: string | null; fromId?: string };

describe("compaction inside a run and a summarized navigation over HTTP (npm start)", () => {
  let server: DevServer;
  let api: Api;
  let key: string;
  beforeAll(async () => {
    server = await startDevServer();
    ({ api, key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "inrun"));
    await api.expect(201, "POST", "/v1/sessions", {
      body: { id: "long", settings: { compaction: { enabled: true, reserveTokens: 128_000 - 200, keepRecentTokens: 40 } } },
    });
    await api.expect(201, "PUT", "/v1/sessions/long/lanes/main");
  }, 120_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
  });

  it("a run that crosses the threshold compacts before it ends; the watcher sees the segment inside the run", async () => {
    await api.expect(200, "POST", "/v1/sessions/long/lanes/main/prompt", { body: { prompt: "a short start" } });
    const watch = await openLaneWatch(server.baseUrl, key, "long", "main");
    try {
      await watch.next();
      const record = await api.expect<{ status: string; tipId: string }>(200, "POST", "/v1/sessions/long/lanes/main/prompt", {
        body: { prompt: `a long question: ${"tell me everything about the repository layout. ".repeat(20)}` },
      });
      expect(record.status).toBe("completed");
      const seen = eventsOf(await watch.until(isEvent("run_end"))).map(({ event }) => event);
      const types = seen.map((event) => event.type);
      // The long prompt alone crosses the threshold: the run compacts before asking the model
      // (keeping the prompt), and again after the long answer, before it ends.
      expect(seen.filter((event) => event.type === "compaction_start").map((event) => (event.type === "compaction_start" ? event.reason : ""))).toEqual(["threshold", "threshold"]);
      const answer = types.lastIndexOf("message_start");
      expect(types.indexOf("compaction_end")).toBeLessThan(answer);
      expect(types.lastIndexOf("compaction_start")).toBeGreaterThan(answer);
      expect(types.lastIndexOf("compaction_end")).toBe(types.indexOf("run_end") - 1);
      const path = await api.expect<{ items: Entry[] }>(200, "GET", "/v1/sessions/long/branches/main/entries?order=desc&limit=1");
      expect(path.items[0]).toMatchObject({ type: "compaction", id: record.tipId });
    } finally {
      await watch.close();
    }
  }, 120_000);

  it("navigates back with a summary of the branch it leaves; the watcher is told to resnapshot", async () => {
    const path = await api.expect<{ items: Entry[] }>(200, "GET", "/v1/sessions/long/branches/main/entries?order=asc");
    const firstAnswer = path.items[1];
    if (!firstAnswer) throw new Error("no first answer");
    const watch = await openLaneWatch(server.baseUrl, key, "long", "main");
    try {
      await watch.next();
      const navigated = await api.expect<{ navigation: { status: string; tipId: string } }>(200, "POST", "/v1/sessions/long/lanes/main/navigate", {
        body: { targetId: firstAnswer.id, summarize: true, label: "after the start" },
      });
      expect(navigated.navigation.status).toBe("completed");
      await watch.until(isEvent("navigation_end"));
      const summary = await api.expect<Entry>(200, "GET", `/v1/sessions/long/entries/${navigated.navigation.tipId}`);
      expect(summary).toMatchObject({ type: "branch_summary", parentId: firstAnswer.id });
      expect(await api.expect(200, "GET", `/v1/sessions/long/entries/${firstAnswer.id}/label`)).toEqual({ entryId: firstAnswer.id, label: "after the start" });
    } finally {
      await watch.close();
    }
    const fresh = await openLaneWatch(server.baseUrl, key, "long", "main");
    try {
      const first = await fresh.next();
      expect(first.type === "snapshot" && first.snapshot.transcript.map((entry) => entry.type)).toEqual(["message", "message", "branch_summary"]);
    } finally {
      await fresh.close();
    }
  }, 120_000);
});
