import { expect } from "vitest";
import type { BrowserToken } from "../../schema/browser-tokens.ts";
import { call } from "./helpers.ts";
import { watchSetup } from "./watch-helpers.ts";

/** `POST …/tokens` with a tenant key (or anything else as `token`). */
export function mintRequest(sessionId: string, credential: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return call(`/v1/sessions/${sessionId}/tokens`, { body, token: credential, headers });
}

/** A minted token (201 expected). */
export async function mint(sessionId: string, key: string, body: unknown): Promise<BrowserToken> {
  const response = await mintRequest(sessionId, key, body);
  expect(response.status, await response.clone().text()).toBe(201);
  return response.json();
}

/** A tenant with a session holding `lanes`, created as the watch tests create theirs. */
export const tokenSetup = (prefix: string, lanes: string[] = ["main"]) => watchSetup(prefix, lanes);

/** The answer's status and error code, in one value to compare. */
export async function outcome(response: Response): Promise<{ status: number; code?: string }> {
  if (response.status < 400) return { status: response.status };
  const body = await response.json<{ error?: { code?: string } }>();
  return { status: response.status, ...(body.error?.code !== undefined && { code: body.error.code }) };
}
