import { randomUUID } from "node:crypto";
import { beforeAll, expect, inject, it } from "vitest";
import { Api } from "../../test/e2e/client-helpers.ts";
import { bytes, count, ms, ratio, summarize, type BenchLine } from "../report.ts";
import { KeptAliveApi } from "./kept-alive-api.ts";
import { echoSession, promptTurn } from "./our-client.ts";
import type { StorageTally } from "../peer/tally.ts";
import { PeerChatClient } from "./peer-chat-client.ts";
import { SocketTurns } from "./our-socket-turns.ts";
import { largestGrowth, objectDatabaseSizes, rankedGrowth } from "./sqlite-size.ts";
import { ends, promptText, timed } from "./turn-prompts.ts";

// P1 (latency of one scripted turn over the wire) and P3's retained bytes, ours against the Agents
// SDK peer in the same run: WARMUP turns discarded, then TURNS turns on each of four clients, one
// turn of each per round, the order rotating every round, so drift hits all alike.
// Ours: POST …/lanes/main/prompt, answered with the settled record, over Node's fetch and over a
// kept-alive node:http connection (one session each). Peer: one cf_agent_use_chat_request over its
// WebSocket until the `done` frame, which the SDK sends after persisting the answer, over Node's
// WebSocket and over the `ws` package (one agent each). The pairs compare like with like: Node's
// built-in clients on both sides, and the lean clients on both sides.
// Every client talks to the server's runtime (bench/node/runtime-url.ts), not to wrangler dev's
// reload proxy, which no deployment has and which costs an HTTP request far more than a socket
// frame; one more lean pair goes through that proxy, reported beside them.

const WARMUP = 10;
const TURNS = 200;
const ENDS = 10;
const P1_P50_TARGET_MS = 15;

const servers = inject("benchServers");
const api = new Api(servers.ours.runtimeUrl, servers.ours.key);
const keptAlive = new KeptAliveApi(servers.ours.runtimeUrl, servers.ours.key);
const sessionId = `p1-${randomUUID().slice(0, 8)}`;
const keptAliveSessionId = `p1k-${randomUUID().slice(0, 8)}`;
const keptAliveThroughProxy = new KeptAliveApi(servers.ours.baseUrl, servers.ours.key);
const proxiedSessionId = `p1p-${randomUUID().slice(0, 8)}`;
const socketSessionId = `p1s-${randomUUID().slice(0, 8)}`;
let socketClient: SocketTurns;
const peerName = `p1-${randomUUID().slice(0, 8)}`;
const wsPeerName = `p1w-${randomUUID().slice(0, 8)}`;
const proxiedPeerName = `p1p-${randomUUID().slice(0, 8)}`;
/** The peer's tally counts its whole isolate: every agent of this file, each running the same turns. */
const PEER_AGENTS = 3;
let peer: PeerChatClient;
let wsPeer: PeerChatClient;
let proxiedPeer: PeerChatClient;

const peerTally = async (): Promise<StorageTally> => (await fetch(`${servers.peer.runtimeUrl}/agents/peer-chat/${peerName}/tally`)).json();
const peerMessages = async (name: string): Promise<number> => {
  const stats: { messages: number } = await (await fetch(`${servers.peer.runtimeUrl}/agents/peer-chat/${name}/stats`)).json();
  return stats.messages;
};

beforeAll(async () => {
  await echoSession(api, sessionId);
  await echoSession(keptAlive, keptAliveSessionId);
  await echoSession(keptAliveThroughProxy, proxiedSessionId);
  await echoSession(api, socketSessionId);
  socketClient = await SocketTurns.open(servers.ours.runtimeUrl, servers.ours.key, socketSessionId);
  peer = await PeerChatClient.connect(servers.peer.runtimeUrl, peerName, "node");
  wsPeer = await PeerChatClient.connect(servers.peer.runtimeUrl, wsPeerName, "ws");
  proxiedPeer = await PeerChatClient.connect(servers.peer.baseUrl, proxiedPeerName, "ws");
  return async () => {
    keptAlive.close();
    keptAliveThroughProxy.close();
    socketClient.close();
    await Promise.all([peer.close(), wsPeer.close(), proxiedPeer.close()]);
  };
});

it("P1: per-turn latency and P3: retained bytes per turn, ours and the Agents SDK's", async ({ task }) => {
  const peerTurn = async (client: PeerChatClient, text: string) => expect(await client.turn(text)).toBe(text);
  const clients = [
    { turn: (text: string) => promptTurn(api, sessionId, text), samples: [] as number[] },
    { turn: (text: string) => promptTurn(keptAlive, keptAliveSessionId, text), samples: [] as number[] },
    { turn: (text: string) => peerTurn(peer, text), samples: [] as number[] },
    { turn: (text: string) => peerTurn(wsPeer, text), samples: [] as number[] },
    { turn: (text: string) => socketClient.turn(text), samples: [] as number[] },
    { turn: (text: string) => promptTurn(keptAliveThroughProxy, proxiedSessionId, text), samples: [] as number[] },
    { turn: (text: string) => peerTurn(proxiedPeer, text), samples: [] as number[] },
  ];
  for (let turn = 0; turn < WARMUP; turn++) {
    for (const client of clients) await client.turn(promptText(turn));
  }
  const oursBefore = objectDatabaseSizes(servers.ours.persistDir);
  const peerBefore = await peerTally();
  const peerFilesBefore = objectDatabaseSizes(servers.peer.persistDir);
  // Stage probes, in the same rounds so drift hits them like the turns: the HTTP floor (GET
  // /health touches no object) and a prompt's path without its turn (GET …/lanes/main is the
  // tenant's key check and one read-only session call, the two object calls a prompt makes).
  const probes = [
    { run: () => api.expect(200, "GET", "/health"), samples: [] as number[] },
    { run: () => keptAlive.expect(200, "GET", "/health"), samples: [] as number[] },
    { run: () => api.expect(200, "GET", `/v1/sessions/${sessionId}/lanes/main`), samples: [] as number[] },
    { run: () => keptAlive.expect(200, "GET", `/v1/sessions/${keptAliveSessionId}/lanes/main`), samples: [] as number[] },
  ];
  for (let turn = WARMUP; turn < WARMUP + TURNS; turn++) {
    const text = promptText(turn);
    for (let i = 0; i < clients.length; i++) {
      const client = clients[(turn + i) % clients.length];
      if (client) client.samples.push(await timed(() => client.turn(text)));
    }
    const probe = probes[turn % probes.length];
    if (probe) probe.samples.push(await timed(probe.run));
  }
  const [floorFetch, floorKept, callsFetch, callsKept] = probes.map((probe) => probe.samples);
  if (!floorFetch || !floorKept || !callsFetch || !callsKept) throw new Error("four probes");
  const [ours, oursKept, theirs, theirsWs, oursSocket, oursProxied, theirsProxied] = clients.map((client) => client.samples);
  if (!ours || !oursKept || !theirs || !theirsWs || !oursSocket || !oursProxied || !theirsProxied) throw new Error("seven clients");
  // Ours ran four sessions the same number of turns: three over HTTP, which grow alike, and one by
  // socket commands, which grows most (each command's id is kept with its answer, so that a repeat
  // does nothing twice). A simple turn is the HTTP one: the second largest growth.
  const oursAfter = objectDatabaseSizes(servers.ours.persistDir);
  const oursGrowth = rankedGrowth(oursBefore, oursAfter, 2);
  const socketGrowth = largestGrowth(oursBefore, oursAfter);
  const peerGrowth = largestGrowth(peerFilesBefore, objectDatabaseSizes(servers.peer.persistDir));
  const peerAfter = await peerTally();
  // Correctness: every turn of both sides is persisted.
  for (const name of [peerName, wsPeerName, proxiedPeerName]) expect(await peerMessages(name)).toBe(2 * (WARMUP + TURNS));
  for (const id of [sessionId, keptAliveSessionId, socketSessionId, proxiedSessionId]) {
    const entries = await api.expect<{ items: unknown[] }>(200, "GET", `/v1/sessions/${id}/branches/main/entries?limit=1000`);
    expect(entries.items.length).toBe(2 * (WARMUP + TURNS));
  }

  // Every peer turn sends at least its chat message: none counted means the count is broken.
  expect(peerAfter.socketMessages - peerBefore.socketMessages).toBeGreaterThanOrEqual(2 * TURNS);
  const o = summarize(ours);
  const p = summarize(theirs);
  const ok = summarize(oursKept);
  const pw = summarize(theirsWs);
  const os = summarize(oursSocket);
  const op = summarize(oursProxied);
  const pp = summarize(theirsProxied);
  const ff = summarize(floorFetch);
  const fk = summarize(floorKept);
  const cf = summarize(callsFetch);
  const ck = summarize(callsKept);
  const oEnds = ends(ours, ENDS);
  const pEnds = ends(theirs, ENDS);
  const retainedOurs = oursGrowth.growth / TURNS;
  const retainedPeer = peerGrowth.growth / TURNS;
  const peerPerTurn = (field: keyof StorageTally) => (peerAfter[field] - peerBefore[field]) / (PEER_AGENTS * TURNS);
  const what = "latency of one scripted turn over the wire";
  const lines: BenchLine[] = [
    { id: "P1", what, case: `ours: POST …/prompt over Node's fetch, ${TURNS} turns after ${WARMUP}`, median: ms(o.median), p95: ms(o.p95), target: `p50 ≤ ${P1_P50_TARGET_MS} ms`, met: o.median <= P1_P50_TARGET_MS, samples: o.samples },
    { id: "P1", what, case: "peer: AIChatAgent over its WebSocket protocol, Node's WebSocket", median: ms(p.median), p95: ms(p.p95), target: "—", met: undefined, samples: p.samples },
    { id: "P1", what, case: "ratio ours / peer, Node's built-in clients (median; p95)", median: ratio(o.median / p.median), p95: ratio(o.p95 / p.p95), target: "≤ 0.50×", met: o.median / p.median <= 0.5, samples: o.samples },
    { id: "P1", what, case: `ours: POST …/prompt over kept-alive node:http, ${TURNS} turns after ${WARMUP}`, median: ms(ok.median), p95: ms(ok.p95), target: `p50 ≤ ${P1_P50_TARGET_MS} ms`, met: ok.median <= P1_P50_TARGET_MS, samples: ok.samples },
    { id: "P1", what, case: "peer: AIChatAgent over its WebSocket protocol, the ws package", median: ms(pw.median), p95: ms(pw.p95), target: "—", met: undefined, samples: pw.samples },
    { id: "P1", what, case: "ratio ours / peer, lean clients (median; p95)", median: ratio(ok.median / pw.median), p95: ratio(ok.p95 / pw.p95), target: "≤ 0.50×", met: ok.median / pw.median <= 0.5, samples: ok.samples },
    { id: "P1", what, case: `ours: a prompt command on an open lane socket, the ws package, until its run_end, ${TURNS} turns after ${WARMUP}`, median: ms(os.median), p95: ms(os.p95), target: `p50 ≤ ${P1_P50_TARGET_MS} ms`, met: os.median <= P1_P50_TARGET_MS, samples: os.samples },
    { id: "P1", what, case: "ratio ours (socket command) / peer (socket), the ws package both (median; p95)", median: ratio(os.median / pw.median), p95: ratio(os.p95 / pw.p95), target: "≤ 0.40× (streams issue)", met: os.median / pw.median <= 0.4, samples: os.samples },
    { id: "P1", what, case: "through wrangler dev's reload proxy: ours, POST …/prompt over kept-alive node:http", median: ms(op.median), p95: ms(op.p95), target: "reported", met: undefined, samples: op.samples },
    { id: "P1", what, case: "through wrangler dev's reload proxy: peer, the ws package", median: ms(pp.median), p95: ms(pp.p95), target: "reported", met: undefined, samples: pp.samples },
    { id: "P1", what, case: "through wrangler dev's reload proxy: ratio ours / peer, lean clients (median; p95)", median: ratio(op.median / pp.median), p95: ratio(op.p95 / pp.p95), target: "reported", met: undefined, samples: op.samples },
    { id: "P1", what, case: "ours: GET /health (no object; the HTTP floor) over Node's fetch", median: ms(ff.median), p95: ms(ff.p95), target: "—", met: undefined, samples: ff.samples },
    { id: "P1", what, case: "ours: GET /health (no object; the HTTP floor) over kept-alive node:http", median: ms(fk.median), p95: ms(fk.p95), target: "—", met: undefined, samples: fk.samples },
    { id: "P1", what, case: "ours: GET …/lanes/main (key check + one session read, no turn) over Node's fetch", median: ms(cf.median), p95: ms(cf.p95), target: "—", met: undefined, samples: cf.samples },
    { id: "P1", what, case: "ours: GET …/lanes/main (key check + one session read, no turn) over kept-alive node:http", median: ms(ck.median), p95: ms(ck.p95), target: "—", met: undefined, samples: ck.samples },
    { id: "P1", what, case: `ours: turns 1–${ENDS} → last ${ENDS} (median)`, median: `${ms(oEnds.first.median)} → ${ms(oEnds.last.median)}`, p95: ratio(oEnds.last.median / oEnds.first.median), target: "—", met: undefined, samples: 2 * ENDS },
    { id: "P1", what, case: `peer: turns 1–${ENDS} → last ${ENDS} (median)`, median: `${ms(pEnds.first.median)} → ${ms(pEnds.last.median)}`, p95: ratio(pEnds.last.median / pEnds.first.median), target: "—", met: undefined, samples: 2 * ENDS },
  ];
  const retainedWhat = "bytes retained per turn (database growth, same method both sides)";
  const retained: BenchLine[] = [
    { id: "P3", what: retainedWhat, case: `ours: session database over ${TURNS} turns`, median: bytes(retainedOurs), p95: "—", target: "—", met: undefined, samples: TURNS },
    { id: "P3", what: retainedWhat, case: `peer: agent database over ${TURNS} turns`, median: bytes(retainedPeer), p95: "—", target: "—", met: undefined, samples: TURNS },
    { id: "P3", what: retainedWhat, case: "ratio ours / peer", median: ratio(retainedOurs / retainedPeer), p95: "—", target: "≤ 1.00×", met: retainedOurs <= retainedPeer, samples: TURNS },
    { id: "P3", what: retainedWhat, case: `ours by socket commands: session database over ${TURNS} turns (the command ids kept with their answers)`, median: bytes(socketGrowth.growth / TURNS), p95: "—", target: "—", met: undefined, samples: TURNS },
    {
      id: "P3",
      what: "peer: writes per turn (tally of every SQL write and storage put/delete)",
      case: `${count(peerPerTurn("sqlStatements"))} statements, ${count(peerPerTurn("rowsWritten"))} rows; ${count(peerPerTurn("kvWrites"))} KV writes (${bytes(peerPerTurn("kvBytes"))})`,
      median: bytes(peerPerTurn("boundBytes") + peerPerTurn("kvBytes")),
      p95: "—",
      target: "—",
      met: undefined,
      samples: TURNS,
      key: "peer.written",
      value: peerPerTurn("boundBytes") + peerPerTurn("kvBytes"),
    },
    // KV writes are rows of the same database (_cf_KV), so they count as rows written.
    { id: "P3", what: "peer: rows written per turn (SQL rowsWritten + KV writes)", case: `over ${TURNS} turns`, median: count(peerPerTurn("rowsWritten") + peerPerTurn("kvWrites")), p95: "—", target: "—", met: undefined, samples: TURNS, key: "peer.rowsWritten", value: peerPerTurn("rowsWritten") + peerPerTurn("kvWrites") },
  ];
  const reads: BenchLine[] = [
    { id: "P11", what: "peer: SQL rows read per turn (SQLite rowsRead over every statement)", case: `over ${TURNS} turns after ${WARMUP}`, median: count(peerPerTurn("rowsRead")), p95: "—", target: "—", met: undefined, samples: TURNS, key: "peer.rowsRead", value: peerPerTurn("rowsRead") },
  ];
  // P12 (cost): the peer's billed units per turn, and both sides' turn time for the duration
  // estimate (the lean clients' medians: the least client time in the wall time).
  const socketTurns = WARMUP + TURNS;
  const peerCost = (label: string, key: string, value: number, shown = count(value)): BenchLine =>
    ({ id: "P12", what: "peer: billed units per simple turn (one chat message on its socket)", case: label, median: shown, p95: "—", target: "—", met: undefined, samples: TURNS, key: `peer.cost.${key}`, value });
  const cost: BenchLine[] = [
    peerCost(`Workers requests (the socket's upgrade, shared by its ${socketTurns} turns)`, "workersRequests", 1 / socketTurns),
    peerCost(`Durable Object requests other than socket messages: the upgrade / ${socketTurns} + ${count(peerPerTurn("alarms"))} alarm invocations`, "objectRequests", 1 / socketTurns + peerPerTurn("alarms")),
    peerCost("incoming WebSocket messages (billed 20:1)", "webSocketMessages", peerPerTurn("socketMessages")),
    peerCost("SQL rows written (SQLite rowsWritten + KV writes)", "rowsWritten", peerPerTurn("rowsWritten") + peerPerTurn("kvWrites")),
    peerCost("SQL rows read (SQLite rowsRead over every statement)", "rowsRead", peerPerTurn("rowsRead")),
    peerCost("bytes retained (agent database growth)", "retainedBytes", retainedPeer, bytes(retainedPeer)),
    peerCost("turn wall time, the ws package (median)", "turnSeconds", pw.median / 1000, ms(pw.median)),
    { id: "P12", what: "ours: turn wall time for the duration estimate", case: "POST …/prompt over kept-alive node:http (median)", median: ms(ok.median), p95: "—", target: "—", met: undefined, samples: ok.samples, key: "ours.cost.turnSeconds", value: ok.median / 1000 },
  ];
  task.meta.benchLines = [...lines, ...retained, ...reads, ...cost];
  task.meta.benchNotes = [
    {
      id: "P1",
      lines: [
        "Both servers run under `wrangler dev` on loopback with local observability (request tracing) off and wrangler logging at `warn` (no line per request), and are addressed at their runtime's own listener, past wrangler dev's reload proxy (the rows marked \"through wrangler dev's reload proxy\" go through it); seven clients (each on its own session or agent), turns strictly sequential, one per client per round, the order rotating every round.",
        servers.ours.runtimeUrl === servers.ours.baseUrl || servers.peer.runtimeUrl === servers.peer.baseUrl
          ? "A runtime's own listener was not found (it is looked up in Linux's /proc): at least one server was measured through wrangler dev's reload proxy."
          : `Runtimes: ours ${servers.ours.runtimeUrl} (proxy ${servers.ours.baseUrl}), peer ${servers.peer.runtimeUrl} (proxy ${servers.peer.baseUrl}).`,
        `Files: ours ${oursGrowth.file}, peer ${peerGrowth.file}.`,
      ],
    },
  ];
});
