import { describe, expect, it } from "vitest";
import { sse, wireFetch } from "./wire.ts";
import { completionText } from "./chat-completions-wire.ts";
import { briefs, unwrap } from "../runtime/drive-helpers.ts";
import { withProviderRig } from "./provider-rig.ts";

// docs/api-sessions.md: `settings.streamOptions.maxTokens` is "the longest answer to ask for". An
// answer the provider cut at that limit (finish_reason "length", completion_tokens == maxTokens) is
// an answer cut at the output limit the session asked for, not a context overflow: the run keeps
// it (a final answer with stopReason "length") rather than compacting or failing context_overflow.

const GROQ = { provider: "groq", modelId: "llama-3.3-70b-versatile" } as const;
const MAX = 16;

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  data: { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "fixture", choices: [{ index: 0, delta, finish_reason: finish }] },
});

/** An answer cut by the provider at MAX output tokens, as Chat Completions reports it. */
const cutAtLimit = (): string[] =>
  sse(
    chunk({ role: "assistant", content: "" }),
    chunk({ content: "A long answer that the provider stopped at the requested limit" }),
    chunk({}, "length"),
    { data: { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "fixture", choices: [], usage: { prompt_tokens: 30, completion_tokens: MAX, total_tokens: 30 + MAX } } },
    { data: "[DONE]" },
  );

describe("an answer cut at the session's maxTokens", { timeout: 30_000 }, () => {
  it("is kept as the run's answer (stopReason length), not treated as a context overflow", async () => {
    // A second answer is there in case the engine asks again (it should not).
    const wire = wireFetch([{ chunks: cutAtLimit() }, { chunks: completionText(["again"]) }, { chunks: completionText(["again"]) }]);
    const outcome = await withProviderRig(
      async (rig) => {
        await rig.harness.updateSettings({ streamOptions: { maxTokens: MAX } });
        const lane = await rig.harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "Tell me a long story" }));
        unwrap(await lane.drive({ operationId, waitForRetry: true }));
        return { record: lane.getResult(operationId), briefs: briefs(lane), compactions: rig.events.filter((event) => event.type === "compaction_start").length };
      },
      { model: GROQ, fetch: wire.fetch },
    );
    const sent = wire.seen[0]?.body;
    expect(JSON.stringify(sent)).toContain(`"max_completion_tokens":${MAX}`);
    expect(outcome.compactions).toBe(0);
    expect(outcome.record?.error).toBeUndefined();
    expect(outcome.record?.status).toBe("completed");
    expect(wire.seen).toHaveLength(1);
  });

  it("is kept also when the acceptance carries the first request (a caller that drives at once)", async () => {
    const wire = wireFetch([{ chunks: cutAtLimit() }, { chunks: completionText(["again"]) }, { chunks: completionText(["again"]) }]);
    const outcome = await withProviderRig(
      async (rig) => {
        await rig.harness.updateSettings({ streamOptions: { maxTokens: MAX } });
        const lane = await rig.harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "Tell me a long story" }, { drivenAtOnce: true }));
        unwrap(await lane.drive({ operationId, waitForRetry: true }));
        return { record: lane.getResult(operationId), compactions: rig.events.filter((event) => event.type === "compaction_start").length };
      },
      { model: GROQ, fetch: wire.fetch },
    );
    expect(outcome.compactions).toBe(0);
    expect(outcome.record?.error).toBeUndefined();
    expect(outcome.record?.status).toBe("completed");
    expect(wire.seen).toHaveLength(1);
  });
});
