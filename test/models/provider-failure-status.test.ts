import type { FetchFunction } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import type { ModelIdentity } from "../../schema/lane.ts";
import { ofType, unwrap } from "../runtime/drive-helpers.ts";
import { completionText } from "./chat-completions-wire.ts";
import { withProviderRig } from "./provider-rig.ts";
import { errorAnswer, wireFetch, type WireAnswer } from "./wire.ts";

// How a failed provider request is classified when the provider answered with an HTTP status
// (docs/providers.md "When a request fails"): the status decides, not the provider's wording.

const GROQ = { provider: "groq", modelId: "llama-3.3-70b-versatile" } as const;
/** Three attempts. */
const RETRIES = { retry: { enabled: true, maxRetries: 2, baseDelayMs: 1 } };

async function firstPass(model: ModelIdentity, fetch: FetchFunction) {
  return withProviderRig(
    async (rig) => {
      await rig.harness.updateSettings(RETRIES);
      const lane = await rig.harness.lane("main");
      const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hello" }));
      const outcome = unwrap(await lane.drive({ operationId, waitForRetry: false }));
      return { outcome, record: lane.getResult(operationId), events: rig.events };
    },
    { model, fetch },
  );
}

describe("a 400 is not retried, whatever words its text happens to contain", { timeout: 30_000 }, () => {
  // docs/providers.md: "a refusal retrying cannot change, such as 400 for an invalid request, fails
  // the run assistant_error at once". The port saw the 400, so the text is never read for a
  // transient failure, even when it mentions a timeout, a rate limit or a number such as 500.
  const cases: [string, WireAnswer][] = [
    ["an unknown argument named timeout", errorAnswer(400, "Unrecognized request argument supplied: timeout")],
    ["a message index 500", errorAnswer(400, "Invalid 'messages[500].content': string too long. Expected a string with maximum length 1048576.")],
    ["a parameter named rate_limit", errorAnswer(400, "Invalid value for 'metadata.rate_limit': expected a string.")],
  ];
  it.each(cases)("a 400 naming %s fails assistant_error at once", async (_name, answer) => {
    const wire = wireFetch([answer, { chunks: completionText(["never"]) }, { chunks: completionText(["never"]) }]);
    const result = await firstPass(GROQ, wire.fetch);
    expect(ofType(result.events, "retry_scheduled")).toEqual([]);
    expect(wire.seen).toHaveLength(1);
    expect(result.record).toMatchObject({ status: "failed", error: { code: "assistant_error" } });
  });
});

describe("a 408 is retried: the provider gave up waiting for the request, a timeout", { timeout: 30_000 }, () => {
  it("a 408 whose text names no timeout is retried: the first pass schedules the retry", async () => {
    const wire = wireFetch([errorAnswer(408, "Request took too long."), { chunks: completionText(["answered"]) }]);
    const result = await firstPass(GROQ, wire.fetch);
    // The decisive event, emitted by the first pass itself (when the retry then runs is the rig's timer's).
    expect(ofType(result.events, "retry_scheduled")).toHaveLength(1);
  });
});
