import { randomUUID } from "node:crypto";
import { expect, inject, it } from "vitest";
import { Api, appendSteps, settled, words } from "../../test/e2e/client-helpers.ts";
import { ms, summarize, type BenchLine } from "../report.ts";
import { pool, timed } from "./turn-prompts.ts";

// P9: WRITERS writers enqueue into one running lane at once (half steer, half followUp), ROUNDS
// times, each round on a fresh session whose run streams a long scripted answer (so every item
// arrives while it runs). Measured: the latency of each `POST …/queue` (201). Checked: the lane's
// queue, read right after the last admission, holds every item once; after the run settles every
// item is on the branch exactly once, and the items of each kind are placed in their admission
// order (the queue's order).

const WRITERS = 50;
const ROUNDS = 3;
/** ~1,500 words streamed one per 5 ms: several seconds of run for the writers to land in. */
const LONG_STEP = { text: words(1500), chunkMs: 5 };

type Entry = { id: string; type: string; message?: { role: string; content: unknown } };
type QueuedItem = { entryId: string; kind: string };

const servers = inject("benchServers");
const api = new Api(servers.ours.baseUrl, servers.ours.key);

async function round(index: number): Promise<number[]> {
  const sid = `p9-${index}-${randomUUID().slice(0, 6)}`;
  await api.expect(201, "POST", "/v1/sessions", { body: { id: sid } });
  await api.expect(201, "PUT", `/v1/sessions/${sid}/lanes/main`, { body: { model: { provider: "scripted", modelId: "script" } } });
  // The long answer, then short answers for the turns the steered and follow-up input starts.
  await appendSteps(api, sid, [LONG_STEP, ...Array.from({ length: 8 }, () => ({ text: "ok" }))]);
  const { operationId } = await api.expect<{ operationId: string }>(202, "POST", `/v1/sessions/${sid}/lanes/main/operations`, { body: { kind: "prompt", prompt: "start" } });
  const admitted: { entryId: string; kind: string; text: string }[] = [];
  const latencies = await pool(
    Array.from({ length: WRITERS }, (_, writer) => async () => {
      const kind = writer % 2 === 0 ? "steer" : "followUp";
      const text = `writer ${writer} ${kind}`;
      return timed(async () => {
        const { entryId } = await api.expect<{ entryId: string }>(201, "POST", `/v1/sessions/${sid}/lanes/main/queue`, { body: { kind, message: text } });
        admitted.push({ entryId, kind, text });
      });
    }),
    WRITERS,
  );
  const lane = await api.expect<{ queues: QueuedItem[]; current: unknown }>(200, "GET", `/v1/sessions/${sid}/lanes/main`);
  expect(lane.current, "the run was still running when every item was admitted").not.toBeNull();
  const queued = lane.queues.map((item) => item.entryId);
  expect([...queued].sort()).toEqual(admitted.map((item) => item.entryId).sort());
  const record = await settled(api, sid, operationId, 120_000);
  expect(record.status).toBe("completed");
  const path = await api.expect<{ items: Entry[] }>(200, "GET", `/v1/sessions/${sid}/branches/main/entries?order=asc&limit=500`);
  const texts = path.items.map((entry) => JSON.stringify(entry.message?.content ?? null));
  const placedAt = (text: string) => texts.flatMap((content, at) => (content.includes(text) ? [at] : []));
  for (const kind of ["steer", "followUp"]) {
    const inAdmissionOrder = queued.map((entryId) => admitted.find((item) => item.entryId === entryId)).filter((item) => item?.kind === kind);
    const positions = inAdmissionOrder.map((item) => placedAt(`"${item?.text}"`));
    // Exactly once each, and in the queue's order.
    expect(positions.every((at) => at.length === 1)).toBe(true);
    const flat = positions.map((at) => at[0] ?? -1);
    expect(flat).toEqual([...flat].sort((a, b) => a - b));
  }
  return latencies;
}

it(`P9: ${WRITERS} writers enqueue steer/followUp into one running lane (${ROUNDS} rounds)`, async ({ task }) => {
  const latencies: number[] = [];
  for (let index = 0; index < ROUNDS; index++) latencies.push(...(await round(index)));
  const summary = summarize(latencies);
  const lines: BenchLine[] = [
    {
      id: "P9",
      what: `${WRITERS} writers enqueueing into one running lane`,
      case: `POST …/queue latency; every item placed once, in admission order (${ROUNDS} rounds)`,
      median: ms(summary.median),
      p95: ms(summary.p95),
      target: "p95 reported; exactly once, in order",
      met: true,
      samples: summary.samples,
    },
  ];
  task.meta.benchLines = lines;
});
