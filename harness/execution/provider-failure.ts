import type { AssistantMessage, AssistantMessageDiagnostic } from "@earendil-works/pi-ai";

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

/** A provider's requested delay is honoured up to an hour: a longer one is a bug or an outage. */
export const MAX_PROVIDER_RETRY_AFTER_MS = 60 * 60 * 1000;

/** The wait before retrying: the policy's backoff, or the provider's Retry-After when it asks for longer. */
export function retryDelayFor(failure: ProviderFailure | undefined, backoffMs: number): number {
  const requested = failure?.kind === "http" ? Math.min(failure.retryAfterMs ?? 0, MAX_PROVIDER_RETRY_AFTER_MS) : 0;
  return Math.max(backoffMs, requested);
}
