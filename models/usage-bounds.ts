import type { AssistantMessage, AssistantMessageEvent, AssistantMessageEventStream, MutableModels, Usage } from "@earendil-works/pi-ai";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";
import { MAX_USAGE_COST, MAX_USAGE_TOKENS } from "../schema/usage.ts";

// Usage from any provider is data from outside: a provider (or a script) can report `1e308` or
// `NaN` tokens, and two such requests make the ledger's sums `Infinity`, which serializes as
// `null` and breaks every total downstream. So each request's usage is brought into bounds where
// it enters: token counts are non-negative integers up to MAX_USAGE_TOKENS, cost numbers
// non-negative up to MAX_USAGE_COST (both documented in schema/usage.ts).

const tokens = (n: number): number => (Number.isNaN(n) ? 0 : Math.min(MAX_USAGE_TOKENS, Math.max(0, Math.round(n))));
const money = (n: number): number => (Number.isNaN(n) ? 0 : Math.min(MAX_USAGE_COST, Math.max(0, n)));

const validTokens = (n: number | undefined): boolean => n === undefined || (Number.isSafeInteger(n) && n >= 0 && n <= MAX_USAGE_TOKENS);
const validMoney = (n: number): boolean => Number.isFinite(n) && n >= 0 && n <= MAX_USAGE_COST;

/** Whether `usage` is already within bounds (integer token counts, finite numbers, non-negative, bounded). */
export function validUsage(usage: Usage): boolean {
  const { input, output, cacheRead, cacheWrite, cacheWrite1h, reasoning, totalTokens, cost } = usage;
  return (
    [input, output, cacheRead, cacheWrite, cacheWrite1h, reasoning, totalTokens].every(validTokens) &&
    [cost.input, cost.output, cost.cacheRead, cost.cacheWrite, cost.total].every(validMoney)
  );
}

/**
 * The usage brought into bounds: NaN is 0, negatives 0, fractions of tokens rounded, and anything
 * above a bound (`Infinity` included) the bound. Optional fields stay absent when absent.
 */
export function sanitizeUsage(usage: Usage): Usage {
  const clean: Usage = {
    ...usage,
    input: tokens(usage.input),
    output: tokens(usage.output),
    cacheRead: tokens(usage.cacheRead),
    cacheWrite: tokens(usage.cacheWrite),
    totalTokens: tokens(usage.totalTokens),
    cost: {
      ...usage.cost,
      input: money(usage.cost.input),
      output: money(usage.cost.output),
      cacheRead: money(usage.cost.cacheRead),
      cacheWrite: money(usage.cost.cacheWrite),
      total: money(usage.cost.total),
    },
  };
  if (usage.cacheWrite1h !== undefined) clean.cacheWrite1h = tokens(usage.cacheWrite1h);
  if (usage.reasoning !== undefined) clean.reasoning = tokens(usage.reasoning);
  return clean;
}

function sanitizeMessage(message: AssistantMessage): AssistantMessage {
  return validUsage(message.usage) ? message : { ...message, usage: sanitizeUsage(message.usage) };
}

function sanitizeEvent(event: AssistantMessageEvent): AssistantMessageEvent {
  if (event.type === "done") return { ...event, message: sanitizeMessage(event.message) };
  if (event.type === "error") return { ...event, error: sanitizeMessage(event.error) };
  return event;
}

/** The same response, its final message (the `done` or `error` event, and `result()`) within bounds. */
export function boundedStream(source: AssistantMessageEventStream): AssistantMessageEventStream {
  const bounded = createAssistantMessageEventStream();
  void (async () => {
    try {
      for await (const event of source) bounded.push(sanitizeEvent(event));
    } finally {
      bounded.end();
    }
  })();
  return bounded;
}

/**
 * The registry with every response's usage bounded (the Models port boundary, ARCHITECTURE D9):
 * `streamSimple` and `streamDeferred` (the two ways a response reaches the engine) answer bounded
 * streams; every other member is the registry's own.
 */
export function withBoundedUsage(models: MutableModels): MutableModels {
  return new Proxy(models, {
    get(target, property, receiver) {
      if (property === "streamSimple") {
        return (...args: Parameters<MutableModels["streamSimple"]>) => boundedStream(target.streamSimple(...args));
      }
      if (property === "streamDeferred") {
        return (...args: Parameters<MutableModels["streamDeferred"]>) => boundedStream(target.streamDeferred(...args));
      }
      const member: unknown = Reflect.get(target, property, receiver);
      return typeof member === "function" ? member.bind(target) : member;
    },
  });
}
