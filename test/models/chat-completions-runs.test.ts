import { describe, expect, it } from "vitest";
import type { HarnessEvent } from "../../schema/lane.ts";
import type { AssistantMessage } from "../../schema/messages.ts";
import { briefs, manualClock, ofType, settledRecord, unwrap } from "../runtime/drive-helpers.ts";
import { completionText, completionToolCall } from "./chat-completions-wire.ts";
import { TENANT_KEY, withProviderRig } from "./provider-rig.ts";
import { errorAnswer, wireFetch, type WireAnswer } from "./wire.ts";

// Runs against pi-ai's OpenAI Chat Completions implementation (Groq's catalog entry; every
// OpenAI-compatible host shares the wire), driven by the real engine over real storage, with the
// provider's host replaced by wire fixtures: streaming, thinking, tool-call deltas, usage and cost
// in the ledger, and every failure class of QUALITY R8.

const GROQ = { provider: "groq", modelId: "llama-3.3-70b-versatile" } as const;

async function run(answers: WireAnswer[], options: { clock?: ReturnType<typeof manualClock>; prompt?: string; steps?: (lane: string) => void } = {}) {
  const wire = wireFetch(answers);
  const clock = options.clock;
  const outcome = await withProviderRig(
    async (rig) => {
      const lane = await rig.harness.lane("main");
      const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: options.prompt ?? "hello" }));
      const outcomes = [unwrap(await lane.drive({ operationId }))];
      while (clock && outcomes.at(-1)?.kind === "waiting") {
        const last = outcomes.at(-1);
        if (last?.kind !== "waiting" || last.reason !== "retry") break;
        clock.advance(last.notBefore - clock.now());
        outcomes.push(unwrap(await lane.drive({ operationId })));
      }
      const record = lane.getResult(operationId);
      return { outcomes, record, briefs: briefs(lane), events: rig.events, usage: rig.session.getStats().usage, entries: lane.state };
    },
    { model: GROQ, fetch: wire.fetch, ...(clock && { clock }) },
  );
  return { ...outcome, seen: wire.seen, remaining: wire.remaining() };
}

// The first request loads pi-ai's lazily imported SDK module, which takes seconds under load.
function assistantEnd(events: readonly HarnessEvent[]): AssistantMessage | undefined {
  for (const event of ofType(events, "message_end")) if (event.message.role === "assistant") return event.message;
  return undefined;
}

describe("a run on an OpenAI-compatible host (Chat Completions)", { timeout: 30_000 }, () => {
  it("streams text deltas, records usage and cost in the ledger, and sends the tenant's key", async () => {
    const result = await run([{ chunks: completionText(["Hello", "from", "the", "fixture"], { usage: [1000, 2000] }) }]);
    expect(result.record?.status).toBe("completed");
    expect(result.briefs).toEqual(["user: hello", "assistant(stop): Hello from the fixture"]);
    expect(ofType(result.events, "message_update").length).toBeGreaterThan(0);
    expect(result.usage).toMatchObject({ input: 1000, output: 2000, totalTokens: 3000 });
    // Groq's catalog price for this model: input 0.59 $/M, output 0.79 $/M.
    expect(result.usage.cost.total).toBeGreaterThan(0);
    expect(result.usage.cost.input).toBeCloseTo((1000 / 1e6) * 0.59, 8);
    expect(result.seen).toHaveLength(1);
    expect(result.seen[0]?.url).toBe("https://api.groq.com/openai/v1/chat/completions");
    expect(result.seen[0]?.headers.authorization).toBe(`Bearer ${TENANT_KEY}`);
    expect(result.seen[0]?.body).toMatchObject({ model: "llama-3.3-70b-versatile", stream: true, messages: [{ role: "user", content: "hello" }] });
  });

  it("keeps the thinking the provider streams", async () => {
    const result = await run([{ chunks: completionText(["42"], { thinking: "six times seven" }) }]);
    expect(result.record?.status).toBe("completed");
    const message = assistantEnd(result.events);
    expect(message?.content.map((block) => block.type)).toEqual(["thinking", "text"]);
    expect(message?.content[0]).toMatchObject({ type: "thinking", thinking: "six times seven" });
  });

  it("assembles a tool call from argument deltas", async () => {
    const result = await run([{ chunks: completionToolCall("get_weather", ['{"ci', 'ty": "Pa', 'ris"}']) }]);
    expect(assistantEnd(result.events)?.content.find((block) => block.type === "toolCall")).toMatchObject({ name: "get_weather", arguments: { city: "Paris" } });
    expect(result.briefs[1]).toBe("assistant(toolUse): [call get_weather]");
  });
});

describe("provider failures, classified", { timeout: 30_000 }, () => {
  it("429 with Retry-After: a durable retry wait of the provider's delay, then success", async () => {
    const clock = manualClock();
    const t0 = clock.now();
    const result = await run([errorAnswer(429, "Rate limit reached", { "retry-after": "7" }), { chunks: completionText(["ok"]) }], { clock });
    expect(result.outcomes[0]).toMatchObject({ kind: "waiting", reason: "retry", notBefore: t0 + 7000 });
    expect(ofType(result.events, "retry_scheduled")).toMatchObject([{ attempt: 2, delayMs: 7000 }]);
    expect(result.record?.status).toBe("completed");
    expect(result.briefs.at(-1)).toBe("assistant(stop): ok");
    expect(result.remaining).toBe(0);
  });

  it("500: retried after the policy's backoff", async () => {
    const clock = manualClock();
    const result = await run([errorAnswer(500, "Internal server error"), { chunks: completionText(["recovered"]) }], { clock });
    expect(ofType(result.events, "retry_scheduled")).toMatchObject([{ attempt: 2, delayMs: 1000 }]);
    expect(result.record?.status).toBe("completed");
  });

  it("401: fails at once as provider_auth, naming the provider and never the key", async () => {
    const result = await run([errorAnswer(401, `Incorrect API key provided: ${TENANT_KEY.slice(0, 8)}****${TENANT_KEY.slice(-4)}`), { chunks: completionText(["never"]) }]);
    expect(result.record).toMatchObject({ status: "failed", error: { code: "provider_auth" } });
    const message = result.record?.error?.message ?? "";
    expect(message).toContain("groq");
    expect(message).not.toContain(TENANT_KEY.slice(-4));
    expect(ofType(result.events, "retry_scheduled")).toEqual([]);
    expect(result.remaining).toBe(1);
  });

  it("a context-overflow answer with nothing to summarize: the run fails context_overflow", async () => {
    const result = await run([errorAnswer(400, "This model's maximum context length is 131072 tokens. However, your messages resulted in 200000 tokens.")]);
    expect(result.record).toMatchObject({ status: "failed", error: { code: "context_overflow" } });
  });

  it("a context-overflow answer after earlier turns: one overflow compaction through the provider, then the turn is asked again", async () => {
    const wire = wireFetch([
      { chunks: completionText(["first", "answer"], { usage: [10, 2] }) },
      errorAnswer(400, "This model's maximum context length is 131072 tokens. However, your messages resulted in 200000 tokens."),
      { chunks: completionText(["SUMMARY"], { usage: [50, 5] }) },
      { chunks: completionText(["fits", "now"], { usage: [20, 2] }) },
    ]);
    const result = await withProviderRig(
      async (rig) => {
        await rig.harness.updateSettings({ compaction: { enabled: true, reserveTokens: 16384, keepRecentTokens: 2 } });
        const lane = await rig.harness.lane("main");
        unwrap(await lane.prompt("an earlier question"));
        const record = settledRecord(await lane.drive({ operationId: unwrap(await lane.accept({ kind: "prompt", prompt: "the big one" })).operationId }));
        return { record, briefs: briefs(lane), starts: ofType(rig.events, "compaction_start") };
      },
      { model: GROQ, fetch: wire.fetch },
    );
    expect(result.record.status).toBe("completed");
    expect(result.starts).toMatchObject([{ reason: "overflow" }]);
    expect(result.briefs.at(-1)).toBe("assistant(stop): fits now");
    expect(result.briefs).toContain("compaction");
    // The summary request went to the provider with the summarizer's prompt, apart from the lane.
    expect(JSON.stringify(wire.seen[2]?.body)).toContain("[User]: an earlier question");
    expect(wire.remaining()).toBe(0);
  });

  it("a stream cut after 40% of the reply: the partial settles as an error and the retry recovers", async () => {
    const clock = manualClock();
    const words = Array.from({ length: 10 }, (_, index) => `w${index}`);
    const full = completionText(words);
    const result = await run([{ chunks: full, cutAfter: Math.ceil(full.length * 0.4) }, { chunks: completionText(["whole", "answer"]) }], { clock });
    expect(result.briefs[1]).toMatch(/^assistant\(error\): w0 w1/);
    expect(ofType(result.events, "retry_scheduled")).toHaveLength(1);
    expect(result.record?.status).toBe("completed");
    expect(result.briefs.at(-1)).toBe("assistant(stop): whole answer");
  });

  it("a malformed provider event fails the attempt, not the object: the lane runs the next prompt", async () => {
    const wire = wireFetch([{ chunks: ["data: {not json\n\n"] }, { chunks: completionText(["fine"]) }]);
    const result = await withProviderRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const first = unwrap(await lane.accept({ kind: "prompt", prompt: "one" }));
        const failed = settledRecord(await lane.drive({ operationId: first.operationId }));
        const second = unwrap(await lane.accept({ kind: "prompt", prompt: "two" }));
        const completed = settledRecord(await lane.drive({ operationId: second.operationId }));
        return { failed, completed, faulted: rig.harness.faulted, briefs: briefs(lane) };
      },
      { model: GROQ, fetch: wire.fetch },
    );
    expect(result.failed).toMatchObject({ status: "failed", error: { code: "assistant_error", message: expect.stringContaining("malformed") } });
    expect(result.faulted).toBe(false);
    expect(result.completed.status).toBe("completed");
    expect(result.briefs.at(-1)).toBe("assistant(stop): fine");
  });
});
