import { randomUUID } from "node:crypto";
import { beforeAll, expect, inject, it } from "vitest";
import { Api } from "../../test/e2e/client-helpers.ts";
import { bytes, count, ms, ratio, summarize, type BenchLine } from "../report.ts";
import { echoSession, promptTurn } from "./our-client.ts";
import type { StorageTally } from "../peer/tally.ts";
import { PeerChatClient } from "./peer-chat-client.ts";
import { largestGrowth, objectDatabaseSizes } from "./sqlite-size.ts";
import { ends, promptText, timed } from "./turn-prompts.ts";

// P1 (latency of one scripted turn over the wire) and P3's retained bytes, ours against the Agents
// SDK peer in the same run: one session each, WARMUP turns discarded, then TURNS turns alternating
// between the two servers (which one goes first alternates too), so drift hits both alike.
// Ours: POST …/lanes/main/prompt, answered with the settled record. Peer: one cf_agent_use_chat_request
// over its WebSocket until the `done` frame, which the SDK sends after persisting the answer.

const WARMUP = 10;
const TURNS = 200;
const ENDS = 10;
const P1_P50_TARGET_MS = 15;

const servers = inject("benchServers");
const api = new Api(servers.ours.baseUrl, servers.ours.key);
const sessionId = `p1-${randomUUID().slice(0, 8)}`;
const peerName = `p1-${randomUUID().slice(0, 8)}`;
let peer: PeerChatClient;

const peerTally = async (): Promise<StorageTally> => (await fetch(`${servers.peer.baseUrl}/agents/peer-chat/${peerName}/tally`)).json();
const peerMessages = async (): Promise<number> => {
  const stats: { messages: number } = await (await fetch(`${servers.peer.baseUrl}/agents/peer-chat/${peerName}/stats`)).json();
  return stats.messages;
};

beforeAll(async () => {
  await echoSession(api, sessionId);
  peer = await PeerChatClient.connect(servers.peer.baseUrl, peerName);
  return () => peer.close();
});

it("P1: per-turn latency and P3: retained bytes per turn, ours and the Agents SDK's", async ({ task }) => {
  for (let turn = 0; turn < WARMUP; turn++) {
    await promptTurn(api, sessionId, promptText(turn));
    await peer.turn(promptText(turn));
  }
  const oursBefore = objectDatabaseSizes(servers.ours.persistDir);
  const peerBefore = await peerTally();
  const peerFilesBefore = objectDatabaseSizes(servers.peer.persistDir);
  const ours: number[] = [];
  const theirs: number[] = [];
  for (let turn = WARMUP; turn < WARMUP + TURNS; turn++) {
    const text = promptText(turn);
    const runOurs = async () => ours.push(await timed(() => promptTurn(api, sessionId, text)));
    const runPeer = async () => {
      let answer = "";
      theirs.push(await timed(async () => (answer = await peer.turn(text))));
      expect(answer).toBe(text);
    };
    if (turn % 2 === 0) {
      await runOurs();
      await runPeer();
    } else {
      await runPeer();
      await runOurs();
    }
  }
  const oursGrowth = largestGrowth(oursBefore, objectDatabaseSizes(servers.ours.persistDir));
  const peerGrowth = largestGrowth(peerFilesBefore, objectDatabaseSizes(servers.peer.persistDir));
  const peerAfter = await peerTally();
  // Correctness: every turn of both sides is persisted.
  expect(await peerMessages()).toBe(2 * (WARMUP + TURNS));
  const entries = await api.expect<{ items: unknown[] }>(200, "GET", `/v1/sessions/${sessionId}/branches/main/entries?limit=1000`);
  expect(entries.items.length).toBe(2 * (WARMUP + TURNS));

  const o = summarize(ours);
  const p = summarize(theirs);
  const oEnds = ends(ours, ENDS);
  const pEnds = ends(theirs, ENDS);
  const retainedOurs = oursGrowth.growth / TURNS;
  const retainedPeer = peerGrowth.growth / TURNS;
  const peerPerTurn = (field: keyof StorageTally) => (peerAfter[field] - peerBefore[field]) / TURNS;
  const what = "latency of one scripted turn over the wire";
  const lines: BenchLine[] = [
    { id: "P1", what, case: `ours: POST …/prompt, ${TURNS} turns after ${WARMUP}`, median: ms(o.median), p95: ms(o.p95), target: `p50 ≤ ${P1_P50_TARGET_MS} ms`, met: o.median <= P1_P50_TARGET_MS, samples: o.samples },
    { id: "P1", what, case: "peer: AIChatAgent over its WebSocket protocol", median: ms(p.median), p95: ms(p.p95), target: "—", met: undefined, samples: p.samples },
    { id: "P1", what, case: "ratio ours / peer (median; p95)", median: ratio(o.median / p.median), p95: ratio(o.p95 / p.p95), target: "≤ 0.50×", met: o.median / p.median <= 0.5, samples: o.samples },
    { id: "P1", what, case: `ours: turns 1–${ENDS} → last ${ENDS} (median)`, median: `${ms(oEnds.first.median)} → ${ms(oEnds.last.median)}`, p95: ratio(oEnds.last.median / oEnds.first.median), target: "—", met: undefined, samples: 2 * ENDS },
    { id: "P1", what, case: `peer: turns 1–${ENDS} → last ${ENDS} (median)`, median: `${ms(pEnds.first.median)} → ${ms(pEnds.last.median)}`, p95: ratio(pEnds.last.median / pEnds.first.median), target: "—", met: undefined, samples: 2 * ENDS },
  ];
  const retainedWhat = "bytes retained per turn (database growth, same method both sides)";
  const retained: BenchLine[] = [
    { id: "P3", what: retainedWhat, case: `ours: session database over ${TURNS} turns`, median: bytes(retainedOurs), p95: "—", target: "—", met: undefined, samples: TURNS },
    { id: "P3", what: retainedWhat, case: `peer: agent database over ${TURNS} turns`, median: bytes(retainedPeer), p95: "—", target: "—", met: undefined, samples: TURNS },
    { id: "P3", what: retainedWhat, case: "ratio ours / peer", median: ratio(retainedOurs / retainedPeer), p95: "—", target: "≤ 1.00×", met: retainedOurs <= retainedPeer, samples: TURNS },
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
  task.meta.benchLines = [...lines, ...retained, ...reads];
  task.meta.benchNotes = [
    {
      id: "P1",
      lines: [
        "Both servers run under `wrangler dev` on loopback with local observability (request tracing) off; one client each, turns strictly sequential and alternating between the servers.",
        `Files: ours ${oursGrowth.file}, peer ${peerGrowth.file}.`,
      ],
    },
  ];
});
