import { randomUUID } from "node:crypto";
import { expect, inject, it } from "vitest";
import { Api } from "../../test/e2e/client-helpers.ts";
import { KeptAliveApi } from "./kept-alive-api.ts";
import { count, ratio, type BenchLine } from "../report.ts";
import { echoSession, promptTurn, type TurnApi } from "./our-client.ts";
import { PeerChatClient, type PeerSocket } from "./peer-chat-client.ts";
import { pool, promptText } from "./turn-prompts.ts";

// Throughput. Against the peer: SESSIONS sessions × TURNS turns with IN_FLIGHT turns in flight (a
// pool of IN_FLIGHT clients, each taking a session and playing its turns in order), measured on
// both servers in the order ours, peer, peer, ours (after one uncounted warm-up round on each),
// so drift hits both alike; turns/s over the two rounds of each. Twice, like P1: with Node's
// built-in clients on both sides (fetch; Node's WebSocket), and with the lean ones (node:http over
// kept-alive connections; the `ws` package).
// The clients run on the same two cores as the servers, so what a client costs per turn is taken
// from both servers' throughput; each pair compares like with like. P8 (ours only, as QUALITY.md defines it): P8_SESSIONS sessions × TURNS turns
// all driven at once over HTTP; every turn must complete and every session must hold all its
// entries (no error, no lost turn).
// Like P1's judged rows, every client talks to each server's runtime past wrangler dev's reload
// proxy (bench/node/runtime-url.ts): through it, each HTTP request pays a hop that a socket frame
// and a deployment do not.

const SESSIONS = 20;
const TURNS = 20;
const IN_FLIGHT = 4;
const P8_SESSIONS = 200;

const servers = inject("benchServers");
const api = new Api(servers.ours.runtimeUrl, servers.ours.key);

async function oursRound(label: string, sessions: number, inFlight: number, client: TurnApi = api): Promise<{ turns: number; ms: number; ids: string[] }> {
  const ids = Array.from({ length: sessions }, (_, index) => `${label}-${index}-${randomUUID().slice(0, 6)}`);
  await pool(ids.map((id) => () => echoSession(api, id)), 8);
  const start = performance.now();
  await pool(ids.map((id) => async () => {
    for (let turn = 0; turn < TURNS; turn++) await promptTurn(client, id, promptText(turn));
  }), inFlight);
  return { turns: sessions * TURNS, ms: performance.now() - start, ids };
}

async function peerRound(label: string, socket: PeerSocket = "node"): Promise<{ turns: number; ms: number }> {
  const names = Array.from({ length: SESSIONS }, (_, index) => `${label}-${index}-${randomUUID().slice(0, 6)}`);
  const clients = await Promise.all(names.map((name) => PeerChatClient.connect(servers.peer.runtimeUrl, name, socket)));
  try {
    const start = performance.now();
    await pool(clients.map((client) => async () => {
      for (let turn = 0; turn < TURNS; turn++) expect(await client.turn(promptText(turn))).toBe(promptText(turn));
    }), IN_FLIGHT);
    return { turns: SESSIONS * TURNS, ms: performance.now() - start };
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }
}

it(`throughput: ${SESSIONS} sessions × ${TURNS} turns at ${IN_FLIGHT} in flight, ours and the Agents SDK's; P8: ${P8_SESSIONS} sessions × ${TURNS} turns at once`, async ({ task }) => {
  const rate = (rounds: readonly { turns: number; ms: number }[]) => rounds.reduce((sum, r) => sum + r.turns, 0) / (rounds.reduce((sum, r) => sum + r.ms, 0) / 1000);
  // A warm-up round on each server, not counted (as P1 drops its first turns): in a full run this
  // is the first row to drive either server, so its first round also paid each one's warm-up.
  await oursRound("tw", SESSIONS, IN_FLIGHT);
  await peerRound("tw");
  const ours = [await oursRound("tp-a", SESSIONS, IN_FLIGHT)];
  const theirs = [await peerRound("tp-a"), await peerRound("tp-b")];
  ours.push(await oursRound("tp-b", SESSIONS, IN_FLIGHT));
  const oursRate = rate(ours);
  const peerRate = rate(theirs);
  const lean = new KeptAliveApi(servers.ours.runtimeUrl, servers.ours.key, IN_FLIGHT);
  const oursLean = [await oursRound("tl-a", SESSIONS, IN_FLIGHT, lean)];
  const theirsLean = [await peerRound("tl-a", "ws"), await peerRound("tl-b", "ws")];
  oursLean.push(await oursRound("tl-b", SESSIONS, IN_FLIGHT, lean));
  lean.close();
  const oursLeanRate = rate(oursLean);
  const peerLeanRate = rate(theirsLean);

  const p8 = await oursRound("p8", P8_SESSIONS, P8_SESSIONS);
  // No lost turn: every session holds its 2 entries per turn.
  const held = await pool(p8.ids.map((id) => async () => (await api.expect<{ items: unknown[] }>(200, "GET", `/v1/sessions/${id}/branches/main/entries?limit=100`)).items.length), 16);
  expect(held.every((entries) => entries === 2 * TURNS)).toBe(true);

  const what = `turns/s, ${SESSIONS} sessions × ${TURNS} turns, ${IN_FLIGHT} in flight`;
  const lines: BenchLine[] = [
    { id: "P8", what, case: "ours: Node's fetch (2 rounds)", median: `${count(oursRate)} turns/s`, p95: "—", target: "—", met: undefined, samples: 2 * SESSIONS * TURNS },
    { id: "P8", what, case: "peer: Node's WebSocket (2 rounds)", median: `${count(peerRate)} turns/s`, p95: "—", target: "—", met: undefined, samples: 2 * SESSIONS * TURNS },
    { id: "P8", what, case: "ratio ours / peer, Node's built-in clients (higher is better)", median: ratio(oursRate / peerRate), p95: "—", target: "≥ 2.00×", met: oursRate / peerRate >= 2, samples: 2 * SESSIONS * TURNS },
    { id: "P8", what, case: "ours: node:http, kept-alive (2 rounds)", median: `${count(oursLeanRate)} turns/s`, p95: "—", target: "—", met: undefined, samples: 2 * SESSIONS * TURNS },
    { id: "P8", what, case: "peer: the ws package (2 rounds)", median: `${count(peerLeanRate)} turns/s`, p95: "—", target: "—", met: undefined, samples: 2 * SESSIONS * TURNS },
    { id: "P8", what, case: "ratio ours / peer, lean clients (higher is better)", median: ratio(oursLeanRate / peerLeanRate), p95: "—", target: "≥ 2.00×", met: oursLeanRate / peerLeanRate >= 2, samples: 2 * SESSIONS * TURNS },
    {
      id: "P8",
      what: `throughput, ${P8_SESSIONS} sessions × ${TURNS} turns all at once over HTTP`,
      case: `ours: ${count(p8.turns)} turns in ${(p8.ms / 1000).toFixed(1)} s, no error, none lost`,
      median: `${count(p8.turns / (p8.ms / 1000))} turns/s`,
      p95: "—",
      target: "reported; no error, no lost turn",
      met: held.every((entries) => entries === 2 * TURNS),
      samples: p8.turns,
    },
  ];
  task.meta.benchLines = lines;
});
