import type { ExecutableTool } from "../../harness/execution/tools.ts";
import { step } from "../../harness/execution/tools.ts";

export const MAX_WAIT_SECONDS = 300;
/** How often a wait reports progress (live) and stores it (a checkpoint). */
const TICK_MS = 1000;

/**
 * `wait`: sleeps, reporting progress every second and checkpointing it. Safe to replay: the start
 * time is a memo, so a wait resumed after a crash sleeps only what is left of it.
 */
export function waitTool(description: string | undefined, clock: () => number): ExecutableTool {
  return {
    kind: "executable",
    declaration: {
      name: "wait",
      kind: "builtin",
      description: description ?? `Waits the given number of seconds (at most ${MAX_WAIT_SECONDS}), then returns.`,
      parameters: {
        type: "object",
        properties: { seconds: { type: "number", minimum: 0, maximum: MAX_WAIT_SECONDS } },
        required: ["seconds"],
        additionalProperties: false,
      },
      replay: "safe",
    },
    execute: async (args, { signal, onUpdate, invocation }) => {
      const seconds = typeof args.seconds === "number" ? args.seconds : 0;
      const startedAt = await step(invocation, "startedAt", async () => clock());
      const endsAt = (typeof startedAt === "number" ? startedAt : clock()) + seconds * 1000;
      for (let now = clock(); now < endsAt; now = clock()) {
        await sleep(Math.min(TICK_MS, endsAt - now), signal);
        const waited = Math.min(seconds, Math.round((clock() - (endsAt - seconds * 1000)) / 1000));
        onUpdate({ content: [{ type: "text", text: `Waited ${waited} of ${seconds} seconds` }], details: { waited } }, { checkpoint: true });
      }
      return { content: [{ type: "text", text: `Waited ${seconds} seconds` }], details: { waited: seconds } };
    },
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
