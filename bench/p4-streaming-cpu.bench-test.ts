import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import type { SessionObject } from "../durable-objects/session/session-object.ts";
import { appendScriptSteps } from "../models/scripted/script-source.ts";
import { completedTurn, openBenchEngine, SCRIPT, settle } from "./engine-rig.ts";
import { ratio, summarize, type BenchLine } from "./report.ts";
import { createBenchSession } from "./seed.ts";

// Streaming cost per event (engine hardening): the engine's work per provider event must not grow
// with the response length. A real AgentHarness streams `scripted/script` text steps of SHORT and
// LONG words with chunkMs 0 (one delta per word, no waits), so the pass time is the engine's and
// the scripted provider's own CPU; per-event cost = pass time / deltas. Whole copies of the growing
// partial per event (the old behaviour) made the long case cost several times more per event.

const SHORT = 8_000;
const LONG = 32_000;
const RUNS = 15;

const words = (n: number): string => Array.from({ length: n }, (_, i) => `w${i % 100}`).join(" ");

it("P4 streaming CPU per event, short vs long response", async ({ task }) => {
  const stub = await createBenchSession("stream-cpu");
  const perEvent = await runInDurableObject(stub, async (_instance: SessionObject, state) => {
    const engine = await openBenchEngine(state, SCRIPT);
    const lane = await engine.harness.lane("main");
    const measured: Record<"short" | "long", number[]> = { short: [], long: [] };
    // Warm-up, then alternate so both cases see the same machine conditions.
    for (let run = 0; run <= RUNS; run++) {
      for (const [label, n] of [["short", SHORT], ["long", LONG]] as const) {
        // Usage is set small: the bench is about deltas, not about the output limit.
        await appendScriptSteps(engine.session, [{ text: words(n), chunkMs: 0, usage: { input: 1000, output: 1000 } }]);
        const started = performance.now();
        const record = await completedTurn(lane, `say ${n} words`);
        const elapsed = performance.now() - started;
        await settle();
        expect(record.status).toBe("completed");
        if (run > 0) measured[label].push((elapsed * 1000) / n);
      }
    }
    return measured;
  });
  const short = summarize(perEvent.short);
  const long = summarize(perEvent.long);
  const growth = long.median / short.median;
  const us = (value: number): string => `${value.toFixed(2)} µs`;
  const line = (fields: Omit<BenchLine, "id">): BenchLine => ({ id: "P4", ...fields });
  task.meta.benchLines = [
    line({ what: "engine + scripted provider CPU per stream event", case: `${SHORT.toLocaleString("en")} deltas`, median: us(short.median), p95: us(short.p95), target: "—", met: undefined, samples: short.samples }),
    line({ what: "engine + scripted provider CPU per stream event", case: `${LONG.toLocaleString("en")} deltas`, median: us(long.median), p95: us(long.p95), target: "—", met: undefined, samples: long.samples }),
    line({ what: "per-event cost, long / short response (medians)", case: `${LONG / 1000}k vs ${SHORT / 1000}k deltas`, median: ratio(growth), p95: "—", target: "≤ 1.5×", met: growth <= 1.5, samples: long.samples }),
  ];
});
