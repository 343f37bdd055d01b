import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LaneExecutionInfo, LaneSnapshot } from "../../schema/lane.ts";
import type { WatchCommand, WatchReply } from "../../schema/watch.ts";
import {
  Api,
  appendSteps,
  createTenant,
  eventsOf,
  isEvent,
  openLaneWatch,
  pollUntil,
  readAdminToken,
  scriptedSession,
  settled,
  transcriptText,
  words,
  type OperationRecord,
  type Received,
  type WatchClient,
} from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { openRawWebSocket, type RawFrames } from "./raw-websocket.ts";

// docs/api-watch.md "Commands on the socket" against `npm start`, as a client holding a real
// WebSocket uses them: a command sent again with its id after a reconnect (the client cannot know
// whether the first arrived) answers the first reply and does nothing twice; a revoked key's
// socket is closed and runs nothing more; a browser token without the prompt scope may watch but
// not command.

const ReplySchema = v.object({ type: v.literal("reply"), id: v.string(), status: v.number(), body: v.unknown() });
const AcceptedSchema = v.object({ operationId: v.string() });
const EntrySchema = v.object({ entryId: v.string() });

const isReply =
  (id: string) =>
  (message: Received): boolean =>
    message.type === "reply" && message.id === id;

/** Sends one command frame and reads until its reply; `before` is what arrived ahead of it (events it caused among them). */
async function command(client: WatchClient, frame: WatchCommand): Promise<{ reply: WatchReply; before: Received[] }> {
  client.ws.send(JSON.stringify(frame));
  const read = await client.until(isReply(frame.id));
  const reply = read.at(-1);
  if (reply?.type !== "reply") throw new Error(`Expected the reply to ${frame.id}`);
  return { reply, before: read.slice(0, -1) };
}

/** Reads until `match` unless it is among `alreadyRead` (a reply may come before, among or after the events it caused). */
async function untilSeen(client: WatchClient, alreadyRead: Received[], match: (message: Received) => boolean): Promise<Received[]> {
  return alreadyRead.some(match) ? alreadyRead : [...alreadyRead, ...(await client.until(match))];
}

/** The replies among a raw socket's frames. */
function repliesIn(frames: RawFrames): WatchReply[] {
  return frames.texts.flatMap((text) => {
    const parsed = v.safeParse(ReplySchema, JSON.parse(text));
    return parsed.success ? [parsed.output] : [];
  });
}

describe("commands on a lane socket against npm start", () => {
  let server: DevServer;
  let admin: Api;
  let api: Api;
  let key: string;
  let tenantId: string;
  const sockets: WatchClient[] = [];
  beforeAll(async () => {
    server = await startDevServer();
    admin = new Api(server.baseUrl, readAdminToken());
    const tenant = await createTenant(admin, "sockcmd");
    ({ api, key, tenantId } = tenant);
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    for (const socket of sockets) await socket.close();
    await server?.stop();
  });

  /** A lane socket opened with `credential` as the `bearer.<credential>` subprotocol, past its first snapshot. */
  const watch = async (sid: string, credential: string): Promise<{ client: WatchClient; snapshot: LaneSnapshot }> => {
    const client = await openLaneWatch(server.baseUrl, credential, sid, "main");
    sockets.push(client);
    const first = await client.next();
    if (first.type !== "snapshot") throw new Error(`Expected a snapshot first, got ${JSON.stringify(first).slice(0, 200)}`);
    return { client, snapshot: first.snapshot };
  };
  const laneInfo = (sid: string) => api.expect<LaneExecutionInfo>(200, "GET", `/v1/sessions/${sid}/lanes/main`);
  const transcript = async (sid: string) =>
    transcriptText((await api.expect<{ seq: number; snapshot: LaneSnapshot }>(200, "GET", `/v1/sessions/${sid}/lanes/main/snapshot`)).snapshot);
  const operation = (sid: string, operationId: string) =>
    api.expect<{ state: string; result: OperationRecord }>(200, "GET", `/v1/sessions/${sid}/lanes/main/operations/${operationId}`);
  const mintToken = async (sid: string, scopes: string[], minter: Api = api) =>
    (await minter.expect<{ token: string }>(201, "POST", `/v1/sessions/${sid}/tokens`, { body: { scopes, lanes: ["main"] } })).token;

  it("a prompt command sent again by id on a new socket answers its first reply and runs once; the id with another prompt is 422 IdempotencyConflict", async () => {
    const sid = "cmd-prompt";
    await scriptedSession(api, sid);
    // The second step is what a second run would answer: it must never appear.
    await appendSteps(api, sid, [{ text: "the only answer" }, { text: "a second run" }]);
    const frame = { type: "prompt", id: "c1", prompt: "hello over the socket" } as const;

    const { client: first } = await watch(sid, key);
    const sent = await command(first, frame);
    expect(sent.reply).toMatchObject({ type: "reply", id: "c1", status: 202, body: { operationId: expect.any(String), kind: "run", startedAt: expect.any(Number) } });
    const operationId = v.parse(AcceptedSchema, sent.reply.body).operationId;
    const run = eventsOf(await untilSeen(first, sent.before, isEvent("run_end", operationId))).map(({ event }) => event.type);
    expect(run).toContain("run_start");
    expect(run.at(-1)).toBe("run_end");
    await first.close();

    const { client: second, snapshot } = await watch(sid, key);
    expect(transcriptText(snapshot)).toEqual(["user: hello over the socket", "assistant: the only answer"]);
    const replayed = await command(second, frame);
    expect(replayed.reply).toEqual(sent.reply);
    const conflict = await command(second, { ...frame, prompt: "something else" });
    expect(conflict.reply).toMatchObject({ id: "c1", status: 422, body: { error: { code: "IdempotencyConflict" } } });

    // One run: the lane's last operation is still the first, its record the one settled run, and
    // the transcript holds the prompt once with one answer.
    expect(await laneInfo(sid)).toMatchObject({ lastOperationId: operationId, current: null, queues: [] });
    expect(await operation(sid, operationId)).toMatchObject({ state: "settled", result: { operationId, kind: "run", status: "completed" } });
    expect(await transcript(sid)).toEqual(["user: hello over the socket", "assistant: the only answer"]);
  });

  it("a queue command sent again by id after a reconnect answers its first entry and steers the run once", async () => {
    const sid = "cmd-queue";
    await scriptedSession(api, sid);
    await appendSteps(api, sid, [{ text: words(100, "long"), chunkMs: 40 }, { text: "after the steer" }, { text: "never said" }]);

    const { client: first } = await watch(sid, key);
    const started = await command(first, { type: "prompt", id: "p1", prompt: "talk for a while" });
    expect(started.reply.status).toBe(202);
    const operationId = v.parse(AcceptedSchema, started.reply.body).operationId;
    await untilSeen(first, started.before, isEvent("message_update", operationId));
    const steer = { type: "queue", id: "q1", kind: "steer", message: "also mention the weather" } as const;
    const queued = await command(first, steer);
    expect(queued.reply).toMatchObject({ id: "q1", status: 201, body: { entryId: expect.any(String) } });
    await first.close();

    const { client: second } = await watch(sid, key);
    const replayed = await command(second, steer);
    expect(replayed.reply).toEqual(queued.reply);
    expect(v.parse(EntrySchema, replayed.reply.body).entryId).toBe(v.parse(EntrySchema, queued.reply.body).entryId);

    expect(await settled(api, sid, operationId)).toMatchObject({ operationId, status: "completed" });
    expect(await transcript(sid)).toEqual([
      "user: talk for a while",
      `assistant: ${words(100, "long")}`,
      "user: also mention the weather",
      "assistant: after the steer",
    ]);
    // Nothing left queued for a later run either.
    expect(await laneInfo(sid)).toMatchObject({ lastOperationId: operationId, current: null, queues: [] });
  });

  it("an abort command sent again by id after a reconnect answers its first reply and aborts nothing else", async () => {
    const sid = "cmd-abort";
    await scriptedSession(api, sid);
    await appendSteps(api, sid, [{ text: words(200, "slow"), chunkMs: 40 }, { text: words(100, "next"), chunkMs: 40 }]);

    const { client: first } = await watch(sid, key);
    const started = await command(first, { type: "prompt", id: "p1", prompt: "stop me" });
    const aborted = v.parse(AcceptedSchema, started.reply.body).operationId;
    await untilSeen(first, started.before, isEvent("message_update", aborted));
    const abort = { type: "abort", id: "a1" } as const;
    const sent = await command(first, abort);
    expect(sent.reply).toMatchObject({ id: "a1", status: 200, body: { operationId: aborted, newlyRequested: true, steer: [], followUp: [] } });
    expect(await settled(api, sid, aborted)).toMatchObject({ operationId: aborted, status: "aborted" });
    await first.close();

    // A new run is going when the abort arrives again: the repeat answers the first reply and the run goes on.
    const { client: second } = await watch(sid, key);
    const next = await command(second, { type: "prompt", id: "p2", prompt: "carry on" });
    expect(next.reply.status).toBe(202);
    const kept = v.parse(AcceptedSchema, next.reply.body).operationId;
    await untilSeen(second, next.before, isEvent("message_update", kept));
    expect((await command(second, abort)).reply).toEqual(sent.reply);
    expect(await settled(api, sid, kept)).toMatchObject({ operationId: kept, status: "completed" });
    expect((await transcript(sid)).at(-1)).toBe(`assistant: ${words(100, "next")}`);

    // On an idle lane the repeat still answers what the first did, where a new abort is refused.
    expect((await command(second, abort)).reply).toEqual(sent.reply);
    expect((await command(second, { type: "abort", id: "a2" })).reply).toMatchObject({ id: "a2", status: 422, body: { error: { code: "NoActiveOperation" } } });
  });

  /**
   * A second key of the tenant with a lane socket of its own and one of a browser token it minted
   * (raw clients: they see the server's close frame itself, where standard ones report the close
   * only once the TCP connection ends, in wrangler dev about 10 s later). Until the revocation the
   * key's socket commands like any other: its prompt runs (its frames are read at the close).
   */
  const revocable = async (sid: string) => {
    await scriptedSession(api, sid);
    await appendSteps(api, sid, [{ text: "before the revocation" }, { text: "after the revocation" }, { text: "after, once more" }]);
    const second = await admin.expect<{ keyId: string; key: string }>(201, "POST", `/v1/admin/tenants/${tenantId}/keys`, { body: { name: "revoked-later" } });
    const token = await mintToken(sid, ["watch", "prompt"], new Api(server.baseUrl, second.key));
    const path = `/v1/sessions/${sid}/lanes/main/watch`;
    const keySocket = await openRawWebSocket(server.baseUrl, path, second.key);
    const tokenSocket = await openRawWebSocket(server.baseUrl, path, token);
    keySocket.send(JSON.stringify({ type: "prompt", id: "k1", prompt: "before" }));
    const before = await pollUntil("the socket's prompt to settle", () => laneInfo(sid), (info) => info.lastOperationId !== null && info.current === null);
    const revoke = () => admin.expect(204, "DELETE", `/v1/admin/tenants/${tenantId}/keys/${second.keyId}`);
    /** Reads each socket to its close (bounded well beyond the documented "before the revocation answers"). */
    const closes = async () => {
      const frames = { key: await keySocket.readUntilClose(10_000), token: await tokenSocket.readUntilClose(10_000) };
      keySocket.destroy();
      tokenSocket.destroy();
      return frames;
    };
    return { path, key: second.key, token, keySocket, tokenSocket, before, revoke, closes };
  };
  const revokedClose = { code: 1008, reason: "The API key was revoked" };

  it("revoking a key closes its socket and its browser token's with 1008, and neither opens again", async () => {
    const sid = "cmd-revoke";
    const { path, key: revokedKey, token, before, revoke, closes } = await revocable(sid);
    await revoke();
    const frames = await closes();
    expect(frames.key.close).toEqual(revokedClose);
    expect(frames.token.close).toEqual(revokedClose);
    expect(repliesIn(frames.key)).toEqual([expect.objectContaining({ id: "k1", status: 202, body: expect.objectContaining({ operationId: before.lastOperationId }) })]);
    expect(await transcript(sid)).toEqual(["user: before", "assistant: before the revocation"]);
    await expect(openRawWebSocket(server.baseUrl, path, revokedKey)).rejects.toThrow(/Upgrade refused: HTTP\/1\.1 401/);
    await expect(openRawWebSocket(server.baseUrl, path, token)).rejects.toThrow(/Upgrade refused: HTTP\/1\.1 401/);
  });

  it("a command that reaches a revoked key's socket (or its token's) after the revocation answered runs nothing, and is answered 401 if at all", async () => {
    const sid = "cmd-revoke-late";
    const { keySocket, tokenSocket, before, revoke, closes } = await revocable(sid);
    await revoke();
    // Sent without reading first, as a client does whose frame crossed the server's close.
    keySocket.send(JSON.stringify({ type: "prompt", id: "k2", prompt: "after" }));
    tokenSocket.send(JSON.stringify({ type: "prompt", id: "t1", prompt: "after, with the token" }));
    const frames = await closes();
    expect(frames.key.close).toEqual(revokedClose);
    expect(frames.token.close).toEqual(revokedClose);
    for (const reply of [...repliesIn(frames.key).filter((reply) => reply.id !== "k1"), ...repliesIn(frames.token)]) expect(reply).toMatchObject({ status: 401 });
    expect(await laneInfo(sid)).toMatchObject({ lastOperationId: before.lastOperationId, current: null, queues: [] });
    expect(await transcript(sid)).toEqual(["user: before", "assistant: before the revocation"]);
  });

  it("a browser token with only the watch scope watches as the bearer.<token> subprotocol, but its commands are refused 403 TokenScope and nothing runs", async () => {
    const sid = "cmd-token";
    await scriptedSession(api, sid);
    await appendSteps(api, sid, [{ text: "with the prompt scope" }]);
    const watchOnly = await mintToken(sid, ["watch"]);
    const { client } = await watch(sid, watchOnly);
    expect(client.ws.protocol).toBe(`bearer.${watchOnly}`);
    const refused: WatchCommand[] = [
      { type: "prompt", id: "w1", prompt: "from the page" },
      { type: "queue", id: "w2", kind: "followUp", message: "and then" },
      { type: "abort", id: "w3" },
    ];
    for (const frame of refused) {
      expect((await command(client, frame)).reply).toMatchObject({ id: frame.id, status: 403, body: { error: { code: "TokenScope" } } });
    }
    expect(await laneInfo(sid)).toMatchObject({ lastOperationId: null, current: null, queues: [] });
    expect(await transcript(sid)).toEqual([]);

    // A token with the prompt scope may: the refused id was not kept, so it runs now.
    const { client: prompter } = await watch(sid, await mintToken(sid, ["watch", "prompt"]));
    const sent = await command(prompter, { type: "prompt", id: "w1", prompt: "from the page" });
    expect(sent.reply.status).toBe(202);
    const operationId = v.parse(AcceptedSchema, sent.reply.body).operationId;
    await untilSeen(prompter, sent.before, isEvent("run_end", operationId));
    expect(await transcript(sid)).toEqual(["user: from the page", "assistant: with the prompt scope"]);
  });
});
