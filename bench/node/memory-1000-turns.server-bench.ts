import { randomUUID } from "node:crypto";
import { expect, inject, it } from "vitest";
import { Api } from "../../test/e2e/client-helpers.ts";
import { bytes, ratio, type BenchLine } from "../report.ts";
import { echoSession, promptTurn } from "./our-client.ts";
import { PeerChatClient } from "./peer-chat-client.ts";
import { workerdResidentBytes } from "./servers.ts";
import { promptText } from "./turn-prompts.ts";

// Memory of one object after TURNS turns, ours and the peer's. workerd reports no per-object or
// per-isolate memory, so this reads the resident memory (RSS, Linux /proc) of each server's workerd
// process: after WARMUP turns on a fresh object, then after TURNS more on the same object. The
// growth is what the object's conversation costs in memory (the whole process is measured, so the
// allocator's own slack is in it too: a coarse number, reported only, never judged). Both servers
// get the turns in blocks of BLOCK, alternating.

const WARMUP = 10;
const TURNS = 1000;
const BLOCK = 50;
const MIB = 1024 * 1024;

const servers = inject("benchServers");
const api = new Api(servers.ours.baseUrl, servers.ours.key);

it(`memory of one object after ${TURNS} turns, ours and the Agents SDK's`, async ({ task }) => {
  const sessionId = `mem-${randomUUID().slice(0, 8)}`;
  await echoSession(api, sessionId);
  const peer = await PeerChatClient.connect(servers.peer.baseUrl, `mem-${randomUUID().slice(0, 8)}`);
  try {
    for (let turn = 0; turn < WARMUP; turn++) {
      await promptTurn(api, sessionId, promptText(turn));
      await peer.turn(promptText(turn));
    }
    const before = { ours: workerdResidentBytes(servers.ours.pgid), peer: workerdResidentBytes(servers.peer.pgid) };
    expect(before.ours).toBeGreaterThan(0);
    expect(before.peer).toBeGreaterThan(0);
    for (let start = WARMUP; start < WARMUP + TURNS; start += BLOCK) {
      for (let turn = start; turn < start + BLOCK; turn++) await promptTurn(api, sessionId, promptText(turn));
      for (let turn = start; turn < start + BLOCK; turn++) expect(await peer.turn(promptText(turn))).toBe(promptText(turn));
    }
    const after = { ours: workerdResidentBytes(servers.ours.pgid), peer: workerdResidentBytes(servers.peer.pgid) };
    const growth = { ours: after.ours - before.ours, peer: after.peer - before.peer };
    const what = `memory: workerd resident set, one object, ${TURNS} turns`;
    const mib = (value: number) => `${(value / MIB).toFixed(1)} MiB`;
    const lines: BenchLine[] = [
      { id: "MEM", what, case: `ours: growth (RSS ${mib(before.ours)} → ${mib(after.ours)})`, median: mib(growth.ours), p95: `${bytes(growth.ours / TURNS)}/turn`, target: "reported", met: undefined, samples: TURNS },
      { id: "MEM", what, case: `peer: growth (RSS ${mib(before.peer)} → ${mib(after.peer)})`, median: mib(growth.peer), p95: `${bytes(growth.peer / TURNS)}/turn`, target: "reported", met: undefined, samples: TURNS },
      { id: "MEM", what, case: "ratio ours / peer (growth; RSS after)", median: ratio(growth.ours / growth.peer), p95: ratio(after.ours / after.peer), target: "reported", met: undefined, samples: TURNS },
    ];
    task.meta.benchLines = lines;
  } finally {
    await peer.close();
  }
});
