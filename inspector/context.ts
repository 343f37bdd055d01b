import type { AgentSessionsClient } from "../client/client.ts";
import { isApiError } from "../client/http.ts";

/** What every panel shares: the SDK client of this origin and the page's status line. */
export interface InspectorContext {
  client: AgentSessionsClient;
  /** Shows a short message in the status line (errors are announced to screen readers too). */
  report(message: string, kind?: "info" | "error"): void;
  /** Runs an action of a control, reporting its failure instead of throwing. */
  attempt<T>(what: string, action: () => Promise<T>): Promise<T | undefined>;
}

/** The error code and message of a failed API call, as a person reads it. */
export function describeError(error: unknown): string {
  if (isApiError(error)) return `${error.status} ${error.rawCode}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
