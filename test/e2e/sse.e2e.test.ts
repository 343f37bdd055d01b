import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LaneSnapshot } from "../../schema/lane.ts";
import type { LaneWatchMessage } from "../../schema/watch.ts";
import { sseReader, type SseItem } from "../helpers/sse-reader.ts";
import { Api, appendSteps, createTenant, fold, readAdminToken, scriptedSession, settled, startRun, words } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// docs/api-watch.md "Streaming over HTTP (SSE)" against `npm start` with Node's fetch: read a lane's
// event stream over HTTP, drop it mid-run, resume it with Last-Event-ID; nothing is lost or
// repeated and the fold equals GET …/snapshot.

const messageOf = (item: SseItem): LaneWatchMessage => JSON.parse(item.data);
const isRunEnd = (runId: string) => (item: SseItem) => {
  const message = item.event === "event" ? messageOf(item) : undefined;
  return message?.type === "event" && message.event.type === "run_end" && message.event.runId === runId;
};
const eventsOf = (items: SseItem[]) => items.flatMap((item) => {
  const message = item.event === "event" ? messageOf(item) : undefined;
  return message?.type === "event" ? [{ id: item.id ?? "", seq: message.seq, event: message.event }] : [];
});

describe("lane events over SSE against npm start", () => {
  let server: DevServer;
  let api: Api;
  let key: string;
  beforeAll(async () => {
    server = await startDevServer();
    const tenant = await createTenant(new Api(server.baseUrl, readAdminToken()), "sse");
    api = tenant.api;
    key = tenant.key;
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
  });

  const open = async (sid: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${server.baseUrl}/v1/sessions/${sid}/lanes/main/events`, { headers: { authorization: `Bearer ${key}`, accept: "text/event-stream", ...headers } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    if (!response.body) throw new Error("no body");
    return sseReader(response.body);
  };

  it("streams a run, resumes after a dropped connection with exactly the missed events, and folds to GET …/snapshot", async () => {
    const sid = "sse_e2e";
    await scriptedSession(api, sid);
    await appendSteps(api, sid, [{ text: words(40), chunkMs: 40 }]);
    const stream = await open(sid);
    const first = await stream.next();
    const start = first?.event === "snapshot" ? messageOf(first) : undefined;
    if (start?.type !== "snapshot") throw new Error(`Expected a snapshot first, got ${JSON.stringify(first).slice(0, 200)}`);
    const runId = await startRun(api, sid, "talk for a while");
    const before = eventsOf(await stream.until((item) => eventsOf([item])[0]?.event.type === "message_update"));
    await stream.cancel();

    const resumed = await open(sid, { "last-event-id": before.at(-1)?.id ?? "" });
    const after = eventsOf(await resumed.until(isRunEnd(runId)));
    await resumed.cancel();
    await settled(api, sid, runId);
    const rest = await api.expect<{ seq: number; snapshot: LaneSnapshot }>(200, "GET", `/v1/sessions/${sid}/lanes/main/snapshot`);

    const seqs = [...before, ...after].map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(after[0]?.seq).toBeGreaterThan(before.at(-1)?.seq ?? 0);
    expect(fold(start.snapshot, [...before, ...after].map((e) => e.event))).toEqual(rest.snapshot);
  }, 60_000);
});
