import type { AssistantMessage, AssistantMessageDiagnostic } from "@earendil-works/pi-ai";
import { isRetryableAssistantError } from "@earendil-works/pi-ai/utils/retry";
import type { OperationError } from "../../schema/lane.ts";
import { providerRefusalOf } from "./provider-refusal.ts";

// How a failed provider request is classified (QUALITY R8). The Models port (models/) sees the
// HTTP exchange and records what it saw on the failed response as one pi-ai diagnostic; the
// settlement reads it back. The error text alone cannot say this: it is the provider's wording,
// and it does not carry the Retry-After header.

export const PROVIDER_FAILURE_DIAGNOSTIC = "provider_failure";

export type ProviderFailure =
  /** The provider refused the credentials (401/403), or none is configured: retrying cannot help. */
  | { kind: "auth"; provider: string; status?: number }
  /** Any other HTTP failure; `retryAfterMs` is the provider's own requested delay. */
  | { kind: "http"; status: number; retryAfterMs?: number };

export function providerFailureDiagnostic(failure: ProviderFailure, timestamp: number): AssistantMessageDiagnostic {
  return { type: PROVIDER_FAILURE_DIAGNOSTIC, timestamp, details: { ...failure } };
}

/** The failure the port recorded on `message`, if any. */
export function providerFailureOf(message: Pick<AssistantMessage, "diagnostics">): ProviderFailure | undefined {
  const details = message.diagnostics?.find((diagnostic) => diagnostic.type === PROVIDER_FAILURE_DIAGNOSTIC)?.details;
  if (!details) return undefined;
  const { kind, provider, status, retryAfterMs } = details;
  if (kind === "auth" && typeof provider === "string") return { kind, provider, ...(typeof status === "number" && { status }) };
  if (kind === "http" && typeof status === "number") return { kind, status, ...(typeof retryAfterMs === "number" && { retryAfterMs }) };
  return undefined;
}

/**
 * Whether retrying may help. When the provider answered with an HTTP error status, the status
 * alone decides (408, 429 or 5xx, docs/providers.md): the text of any other 4xx is the provider's
 * wording of a refusal, which may happen to mention a timeout, a rate limit or a number such as
 * 500 without being one. Only a failure with no status (a timeout, a cut or refused connection,
 * an error inside a 200 stream) is judged by pi-ai's transient-failure patterns. Never for a
 * request the service itself refused to send or follow (provider-refusal.ts): its text names the
 * refused host, which may happen to read like a transient failure (`…timeout.internal`).
 */
export function isTransientFailure(message: AssistantMessage, failure: ProviderFailure | undefined): boolean {
  if (failure?.kind === "auth" || providerRefusalOf(message) !== undefined) return false;
  if (failure?.kind === "http") return failure.status === 408 || failure.status === 429 || failure.status >= 500;
  return isRetryableAssistantError(message);
}

/**
 * How a run (or a summary) ends when its retries ran out on transient failures: the provider was
 * unavailable, which says nothing about the answer (`assistant_error` is for an answer that could
 * not be used). The last HTTP status, when the last attempt had one, is in the details.
 */
export function providerUnavailable(provider: string, failure: ProviderFailure | undefined, attempts: number, errorText: string): OperationError {
  const status = failure?.kind === "http" ? failure.status : undefined;
  const tried = `${attempts} attempt${attempts === 1 ? "" : "s"}`;
  return {
    code: "provider_unavailable",
    message: `Provider ${provider} did not answer after ${tried}${status === undefined ? "" : ` (last answer: HTTP ${status})`}: ${boundedErrorText(errorText)}`,
    details: { attempts, ...(status !== undefined && { status }) },
  };
}

/**
 * How much of a provider's error text is kept (in the failed response's entry, a retry wait and
 * the run's record): a gateway can answer a whole HTML page, which says no more than its start.
 */
export const MAX_PROVIDER_ERROR_CHARS = 2_000;

/** The mark a bounded text ends with; a text that already carries it is left as it is. */
const LEFT_OUT = /… \(\d+ more characters left out\)$/;

/**
 * `text` cut to MAX_PROVIDER_ERROR_CHARS, saying how much was left out. Idempotent: the port, the
 * stored entry and the record each bound the same text on its way, and cutting a bounded text
 * again would replace the true count with the length of the mark.
 */
export function boundedErrorText(text: string): string {
  if (text.length <= MAX_PROVIDER_ERROR_CHARS) return text;
  const mark = LEFT_OUT.exec(text);
  if (mark && mark.index <= MAX_PROVIDER_ERROR_CHARS) return text;
  // Never split a surrogate pair: the cut text stays valid UTF-16.
  const end = /[\uD800-\uDBFF]/.test(text.charAt(MAX_PROVIDER_ERROR_CHARS - 1)) ? MAX_PROVIDER_ERROR_CHARS - 1 : MAX_PROVIDER_ERROR_CHARS;
  return `${text.slice(0, end)}… (${text.length - end} more characters left out)`;
}

/** A provider's requested delay is honoured up to an hour: a longer one is a bug or an outage. */
export const MAX_PROVIDER_RETRY_AFTER_MS = 60 * 60 * 1000;

/** The wait before retrying: the policy's backoff, or the provider's Retry-After when it asks for longer. */
export function retryDelayFor(failure: ProviderFailure | undefined, backoffMs: number): number {
  const requested = failure?.kind === "http" ? Math.min(failure.retryAfterMs ?? 0, MAX_PROVIDER_RETRY_AFTER_MS) : 0;
  return Math.max(backoffMs, requested);
}
