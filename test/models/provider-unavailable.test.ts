import type { FetchFunction } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import { MAX_PROVIDER_ERROR_CHARS } from "../../harness/execution/provider-failure.ts";
import type { Entry } from "../../schema/entries.ts";
import { briefs, ofType, transcript, unwrap } from "../runtime/drive-helpers.ts";
import { completionText } from "./chat-completions-wire.ts";
import { withProviderRig } from "./provider-rig.ts";
import { errorAnswer, wireFetch, type WireAnswer } from "./wire.ts";

// Provider failures keep their meaning (QUALITY R8), through pi-ai's real Chat Completions client
// and the engine over real storage, with the provider's host replaced by wire fixtures: a run
// whose retries ran out on transient failures (5xx, a timeout, a connection cut mid-reply) ends
// `provider_unavailable` with the last HTTP status; an answer that cannot be used still ends
// `assistant_error`; the provider's error text kept anywhere is bounded.

const GROQ = { provider: "groq", modelId: "llama-3.3-70b-versatile" } as const;
/** Two attempts, a millisecond apart. */
const ONE_RETRY = { retry: { enabled: true, maxRetries: 1, baseDelayMs: 1 } };

async function failingRun(fetch: FetchFunction) {
  return withProviderRig(
    async (rig) => {
      await rig.harness.updateSettings(ONE_RETRY);
      const lane = await rig.harness.lane("main");
      const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hello" }));
      unwrap(await lane.drive({ operationId, waitForRetry: true }));
      return { record: lane.getResult(operationId), briefs: briefs(lane), entries: transcript(lane), events: rig.events };
    },
    { model: GROQ, fetch },
  );
}

const errorTexts = (entries: readonly Entry[]): string[] =>
  entries.flatMap((entry) => (entry.type === "message" && entry.message.role === "assistant" && entry.message.errorMessage !== undefined ? [entry.message.errorMessage] : []));

/** A fetch that fails every request before any answer, as a timed-out connection does. */
function timingOut(): { fetch: FetchFunction; calls: () => number } {
  let calls = 0;
  const fetch: FetchFunction = async () => {
    calls++;
    throw new DOMException("The operation timed out.", "TimeoutError");
  };
  return { fetch, calls: () => calls };
}

describe("a provider that never answers: provider_unavailable", { timeout: 30_000 }, () => {
  it("5xx on every attempt: the run ends provider_unavailable with the last status", async () => {
    const wire = wireFetch([errorAnswer(502, "Bad gateway"), errorAnswer(503, "Service temporarily unavailable")]);
    const result = await failingRun(wire.fetch);
    expect(wire.remaining()).toBe(0);
    expect(result.record).toMatchObject({ status: "failed", error: { code: "provider_unavailable", details: { status: 503, attempts: 2 } } });
    expect(result.record?.error?.message).toContain("HTTP 503");
    expect(result.record?.error?.message).toContain("groq");
    expect(ofType(result.events, "retry_scheduled")).toHaveLength(1);
  });

  it("a timeout on every attempt: provider_unavailable, with no status (nothing answered)", async () => {
    const timeouts = timingOut();
    const result = await failingRun(timeouts.fetch);
    expect(timeouts.calls()).toBe(2);
    expect(result.record).toMatchObject({ status: "failed", error: { code: "provider_unavailable", details: { attempts: 2 } } });
    expect(result.record?.error?.details).not.toHaveProperty("status");
  });

  it("the connection cut mid-reply on every attempt: provider_unavailable; each partial reply is kept as an error entry", async () => {
    const full = completionText(Array.from({ length: 10 }, (_, index) => `w${index}`));
    const cut: WireAnswer = { chunks: full, cutAfter: Math.ceil(full.length / 2) };
    const result = await failingRun(wireFetch([cut, cut]).fetch);
    expect(result.record).toMatchObject({ status: "failed", error: { code: "provider_unavailable", details: { attempts: 2 } } });
    expect(result.briefs.slice(1).map((brief) => brief.slice(0, "assistant(error): w0".length))).toEqual(["assistant(error): w0", "assistant(error): w0"]);
  });

  it("a malformed answer is still assistant_error: the provider answered, the answer is unusable", async () => {
    const result = await failingRun(wireFetch([{ chunks: ["data: {not json\n\n"] }, { chunks: completionText(["never"]) }]).fetch);
    expect(result.record).toMatchObject({ status: "failed", error: { code: "assistant_error" } });
    expect(ofType(result.events, "retry_scheduled")).toEqual([]);
  });

  it("a huge error page is kept bounded: in the failed entries, the retry event and the record", async () => {
    const page = `<html>${"<p>upstream connect error</p>".repeat(4_000)}</html>`;
    const result = await failingRun(wireFetch([errorAnswer(502, page), errorAnswer(502, page)]).fetch);
    expect(result.record?.error?.code).toBe("provider_unavailable");
    const bound = MAX_PROVIDER_ERROR_CHARS + 200;
    expect(result.record?.error?.message.length).toBeLessThan(bound);
    expect(result.record?.error?.message).toContain("more characters left out");
    const texts = errorTexts(result.entries);
    expect(texts).toHaveLength(2);
    for (const text of texts) expect(text.length).toBeLessThan(bound);
    for (const event of ofType(result.events, "retry_scheduled")) expect(event.errorMessage.length).toBeLessThan(bound);
  });
});
