// The soak's knobs (docs/reliability.md "Chaos under load"), read from the environment that
// `npm run soak` (test/soak/soak.mjs) fills from its flags. The seed drives every random choice of
// the workload and of the kill schedule, so a failing run is replayed by passing its seed again
// (the server's own timing still varies, so a replay is close, not identical).

export interface SoakOptions {
  /** Seed of the PRNG; printed first. */
  seed: number;
  /** How many times the whole server process group is SIGKILLed and restarted. */
  kills: number;
  /** Minimum workload time in seconds: the workload runs until every kill happened and at least this long. */
  durationSeconds: number;
  /** Concurrent workload actors (each one lane; two lanes per session). */
  concurrency: number;
  /** Pause before each kill, drawn uniformly in [minGapMs, maxGapMs] after the server answers /health. */
  minGapMs: number;
  maxGapMs: number;
}

const SHORT: Omit<SoakOptions, "seed"> = { kills: 3, durationSeconds: 30, concurrency: 4, minGapMs: 3000, maxGapMs: 8000 };
const FULL: Omit<SoakOptions, "seed"> = { kills: 20, durationSeconds: 120, concurrency: 6, minGapMs: 3000, maxGapMs: 12000 };

function numberFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return value;
}

export function soakOptions(env: NodeJS.ProcessEnv = process.env): SoakOptions {
  const base = env.SOAK_SHORT === "1" ? SHORT : FULL;
  const options: SoakOptions = {
    seed: numberFrom(env, "SOAK_SEED", Math.floor(Math.random() * 2 ** 31)),
    kills: numberFrom(env, "SOAK_KILLS", base.kills),
    durationSeconds: numberFrom(env, "SOAK_DURATION", base.durationSeconds),
    concurrency: Math.max(1, numberFrom(env, "SOAK_CONCURRENCY", base.concurrency)),
    minGapMs: numberFrom(env, "SOAK_MIN_GAP_MS", base.minGapMs),
    maxGapMs: numberFrom(env, "SOAK_MAX_GAP_MS", base.maxGapMs),
  };
  if (options.maxGapMs < options.minGapMs) throw new Error("SOAK_MAX_GAP_MS must be at least SOAK_MIN_GAP_MS");
  return options;
}
