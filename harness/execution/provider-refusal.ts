import type { AssistantMessage, AssistantMessageDiagnostic } from "@earendil-works/pi-ai";

// A provider request the service itself would not make or follow (ARCHITECTURE D17): the request
// URL is one the egress policy refuses (a base URL stored before the policy, or in local
// development), or the provider answered with a redirect, which provider requests never follow
// (the target would receive the request, its body and the tenant's key). The Models port records
// it as one pi-ai diagnostic, like provider-failure.ts; retrying cannot help, so the settlement
// fails the run `provider_error` with the port's message.

export const PROVIDER_REFUSAL_DIAGNOSTIC = "provider_refusal";

export type ProviderRefusal = "redirect" | "unsafe_address";

export function providerRefusalDiagnostic(refusal: ProviderRefusal, timestamp: number): AssistantMessageDiagnostic {
  return { type: PROVIDER_REFUSAL_DIAGNOSTIC, timestamp, details: { refusal } };
}

/** What the port's transport throws for a refused request, so that no caller takes it for a dropped connection. */
export class ProviderRequestRefused extends Error {
  override readonly name = "ProviderRequestRefused";
  constructor(
    readonly refusal: ProviderRefusal,
    message: string,
  ) {
    super(message);
  }
}

/** The refusal the port recorded on `message`, if any. */
export function providerRefusalOf(message: Pick<AssistantMessage, "diagnostics">): ProviderRefusal | undefined {
  const refusal = message.diagnostics?.find((diagnostic) => diagnostic.type === PROVIDER_REFUSAL_DIAGNOSTIC)?.details?.refusal;
  return refusal === "redirect" || refusal === "unsafe_address" ? refusal : undefined;
}
