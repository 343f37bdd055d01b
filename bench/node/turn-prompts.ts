import { summarize, type Summary } from "../report.ts";

/** The prompt of turn `n`, the same for both servers (~150 characters, as in P2/P3). */
export const promptText = (turn: number): string =>
  `Turn ${turn}: please look at the next part of the repository and tell me what changed since the previous step, with a short summary and a list of the files involved.`;

/** Runs `turn` and returns its wall time in ms (Node's monotonic clock). */
export async function timed(turn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await turn();
  return performance.now() - start;
}

/** Summaries of the first and the last `n` samples (growth with history). */
export function ends(samples: readonly number[], n: number): { first: Summary; last: Summary } {
  return { first: summarize(samples.slice(0, n)), last: summarize(samples.slice(-n)) };
}

/** Runs `jobs` with at most `inFlight` at a time; resolves when all are done (the first failure rejects). */
export async function pool<T>(jobs: readonly (() => Promise<T>)[], inFlight: number): Promise<T[]> {
  const results: T[] = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const index = next++;
      const job = jobs[index];
      if (job) results[index] = await job();
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, jobs.length) }, worker));
  return results;
}
