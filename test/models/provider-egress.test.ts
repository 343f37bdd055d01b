import type { FetchFunction } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import type { ModelsDeployment } from "../../models/deployment.ts";
import { MAX_PROVIDER_ERROR_CHARS } from "../../harness/execution/provider-failure.ts";
import { expectTripwireUntouched, tripwirePort } from "../api/egress-helpers.ts";
import { OPENAI_POLL_AFTER_MS } from "../../models/deferred/openai-background.ts";
import type { TenantProviderGrant } from "../../models/tenant-models.ts";
import { manualClock, ofType, settledRecord, unwrap } from "../runtime/drive-helpers.ts";
import { completionText } from "./chat-completions-wire.ts";
import { openaiWire } from "./deferred-wires.ts";
import { noDeployment, TENANT_KEY, withProviderRig } from "./provider-rig.ts";
import { errorAnswer, wireFetch } from "./wire.ts";

// The Models port's outbound requests (issue 30 items 7 and 8) with LOCAL_DEV off and on, which
// the REST tests cannot switch (the pool runs with it on): a tenant base URL the egress policy
// refuses is not contacted, whatever stored it; a redirect is never followed; a provider's error
// text is bounded in the record.

const OPENAI = { provider: "openai", modelId: "gpt-5-mini" } as const;
const localDev: ModelsDeployment = { ...noDeployment, localDev: true };

async function runOnce(options: { baseUrl?: string; deployment?: ModelsDeployment; fetch?: FetchFunction }) {
  return withProviderRig(
    async (rig) => {
      const lane = await rig.harness.lane("main");
      const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hello" }));
      unwrap(await lane.drive({ operationId }));
      return lane.getResult(operationId);
    },
    {
      model: OPENAI,
      // Without an injected fetch the request would go out through the platform's own fetch.
      fetch: options.fetch ?? ((input, init) => fetch(input, init)),
      deployment: options.deployment ?? noDeployment,
      grant: { key: { apiKey: TENANT_KEY, ...(options.baseUrl !== undefined && { baseUrl: options.baseUrl }) }, deploymentKeys: false },
    },
  );
}

describe("provider requests and the egress policy", { timeout: 30_000 }, () => {
  it("LOCAL_DEV off: a loopback http base URL stored in local development is not contacted; the run fails provider_error", async () => {
    const record = await runOnce({ baseUrl: `http://127.0.0.1:${tripwirePort()}/v1` });
    expect(record).toMatchObject({
      status: "failed",
      error: { code: "provider_error", message: "Provider openai was not contacted: baseUrl may not point at a loopback address: 127.0.0.1 (127.0.0.0/8)" },
    });
    await expectTripwireUntouched();
  });

  it("LOCAL_DEV on: https to loopback and http to a private address stay refused", async () => {
    for (const [baseUrl, words] of [
      [`https://localhost:${tripwirePort()}/v1`, "a loopback address: localhost (localhost); in local development only plain http may reach loopback"],
      ["http://169.254.169.254/v1", "a link-local address: 169.254.169.254 (169.254.0.0/16)"],
    ] as const) {
      const record = await runOnce({ baseUrl, deployment: localDev });
      expect(record).toMatchObject({ status: "failed", error: { code: "provider_error", message: `Provider openai was not contacted: baseUrl may not point at ${words}` } });
    }
    await expectTripwireUntouched();
  });

  it("a redirect is answered to the run, never followed: one request, sent with redirect manual", async () => {
    const modes: (string | undefined)[] = [];
    const wire = wireFetch([{ status: 302, headers: { location: "http://169.254.169.254/latest/meta-data" }, chunks: ["moved"] }]);
    const record = await runOnce({
      fetch: (input, init) => {
        modes.push(init?.redirect);
        return wire.fetch(input, init);
      },
    });
    expect(record).toMatchObject({
      status: "failed",
      error: { code: "provider_error", message: "Provider openai answered with a redirect (HTTP 302), which provider requests never follow; set the provider's final address as its baseUrl" },
    });
    expect(wire.seen).toHaveLength(1);
    expect(modes).toEqual(["manual"]);
  });

  it("a deferred poll answered with a redirect fails the run at once (deferred_error saying so) instead of polling on", async () => {
    const clock = manualClock();
    const wire = wireFetch([openaiWire.created(), { status: 307, headers: { location: "http://169.254.169.254/latest/meta-data" }, chunks: ["moved"] }]);
    const record = await withProviderRig(
      async ({ harness }) => {
        await harness.updateSettings({ streamOptions: { deferred: true } });
        const lane = await harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hello" }));
        unwrap(await lane.drive({ operationId }));
        clock.advance(OPENAI_POLL_AFTER_MS + 60_000);
        return settledRecord(await lane.drive({ operationId, pollDeferred: true }));
      },
      { model: { provider: "openai", modelId: "gpt-5" }, fetch: wire.fetch, clock },
    );
    expect(record).toMatchObject({
      status: "failed",
      error: { code: "deferred_error", message: "Provider openai answered with a redirect (HTTP 307), which provider requests never follow; set the provider's final address as its baseUrl" },
    });
    expect(wire.seen).toHaveLength(2);
  });

  it("a compaction's summary request answered with a redirect fails it provider_error at once, like a run's request, with retries left", async () => {
    const wire = wireFetch([{ chunks: completionText(["a", "long", "enough", "answer", "to", "summarize", "later"]) }, { status: 307, headers: { location: "http://169.254.169.254/latest/meta-data" }, chunks: ["moved"] }]);
    const record = await withProviderRig(
      async ({ harness }) => {
        await harness.updateSettings({ retry: { maxRetries: 3, baseDelayMs: 1 }, compaction: { keepRecentTokens: 1 } });
        const lane = await harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hello, this is the first question" }));
        unwrap(await lane.drive({ operationId }));
        const compaction = unwrap(await lane.accept({ kind: "compaction" }));
        unwrap(await lane.drive({ operationId: compaction.operationId, waitForRetry: true }));
        return lane.getResult(compaction.operationId);
      },
      { model: { provider: "groq", modelId: "llama-3.3-70b-versatile" }, fetch: wire.fetch },
    );
    expect(record).toMatchObject({
      status: "failed",
      error: { code: "provider_error", message: "Provider groq answered with a redirect (HTTP 307), which provider requests never follow; set the provider's final address as its baseUrl" },
    });
    expect(wire.seen).toHaveLength(2);
  });

  it("a compaction's summary request to a base URL refused meanwhile is not retried, even when the refused host reads like a timeout", async () => {
    const wire = wireFetch([{ chunks: completionText(["a", "long", "enough", "answer", "to", "summarize", "later"]) }]);
    const grant: TenantProviderGrant = { key: { apiKey: TENANT_KEY }, deploymentKeys: false };
    const { record, retries } = await withProviderRig(
      async ({ harness, events }) => {
        await harness.updateSettings({ retry: { maxRetries: 3, baseDelayMs: 1 }, compaction: { keepRecentTokens: 1 } });
        const lane = await harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hello, this is the first question" }));
        unwrap(await lane.drive({ operationId }));
        // The tenant's key now names a base URL the policy refuses (as one stored in local development would be).
        grant.key = { apiKey: TENANT_KEY, baseUrl: "https://api.timeout.internal/v1" };
        const compaction = unwrap(await lane.accept({ kind: "compaction" }));
        unwrap(await lane.drive({ operationId: compaction.operationId, waitForRetry: true }));
        return { record: lane.getResult(compaction.operationId), retries: ofType(events, "retry_scheduled").length };
      },
      { model: { provider: "groq", modelId: "llama-3.3-70b-versatile" }, fetch: wire.fetch, grant },
    );
    expect(record).toMatchObject({
      status: "failed",
      error: { code: "provider_error", message: "Provider groq was not contacted: baseUrl may not point at an internal name: api.timeout.internal (*.internal)" },
    });
    expect(retries).toBe(0);
    expect(wire.seen).toHaveLength(1);
  });

  it(`keeps at most ${MAX_PROVIDER_ERROR_CHARS} characters of a provider's error text`, async () => {
    const wire = wireFetch([errorAnswer(400, `bad request ${"x".repeat(20_000)}`)]);
    const record = await runOnce({ fetch: wire.fetch });
    expect(record?.status).toBe("failed");
    expect(record?.error?.message.length).toBeLessThanOrEqual(MAX_PROVIDER_ERROR_CHARS + 50);
    expect(record?.error?.message).toMatch(/bad request x+… \(\d+ more characters left out\)$/);
    // Bounded once, whatever layers bound it on the way (the port, the stored entry, the record):
    // the count is what the provider's text lost (pi-ai keeps about 4,000 characters of an error
    // body), not the length of the mark a second cut would have measured.
    const [, kept = "", left = "0"] = record?.error?.message.match(/^([\s\S]*)… \((\d+) more characters left out\)$/) ?? [];
    expect(kept).toHaveLength(MAX_PROVIDER_ERROR_CHARS);
    expect(kept).not.toContain("more characters left out");
    expect(Number(left)).toBeGreaterThan(1_000);
  });
});
