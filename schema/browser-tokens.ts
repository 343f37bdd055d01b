import * as v from "valibot";
import { LaneNameSchema } from "./lane-api.ts";

// Browser tokens (spec/API.md "Streaming over HTTP", "Browser tokens"): short-lived credentials
// for one session, minted by a tenant key, that a page may hold instead of the key.

/** `watch`: read a lane (its watch socket, snapshot, state); `prompt`: start, queue and abort its runs. */
export const TokenScopeSchema = v.picklist(["watch", "prompt"], 'A scope is "watch" or "prompt"');
export type TokenScope = v.InferOutput<typeof TokenScopeSchema>;

export const BROWSER_TOKEN_LIMITS = {
  /** A token lives at most an hour: it is a browser's credential, which the page renews. */
  maxTtlSeconds: 3600,
  defaultTtlSeconds: 900,
  /** Lanes a token may name: each one travels in every request (header, subprotocol or URL). */
  maxLanes: 16,
} as const;

/** `POST /v1/sessions/{sid}/tokens`. Without `lanes`, the token reaches every lane of its session. */
export const CreateBrowserTokenSchema = v.strictObject({
  scopes: v.pipe(v.array(TokenScopeSchema), v.minLength(1, "scopes names at least one scope"), v.maxLength(2, "scopes names at most 2 scopes")),
  lanes: v.optional(
    v.pipe(
      v.array(LaneNameSchema),
      v.minLength(1, "lanes, when given, names at least one lane (leave it out for every lane)"),
      v.maxLength(BROWSER_TOKEN_LIMITS.maxLanes, `lanes names at most ${BROWSER_TOKEN_LIMITS.maxLanes} lanes`),
    ),
  ),
  ttlSeconds: v.optional(
    v.pipe(
      v.number(),
      v.integer("ttlSeconds is a whole number of seconds"),
      v.minValue(1, "ttlSeconds is at least 1"),
      v.maxValue(BROWSER_TOKEN_LIMITS.maxTtlSeconds, `ttlSeconds is at most ${BROWSER_TOKEN_LIMITS.maxTtlSeconds}`),
    ),
  ),
});
export type CreateBrowserToken = v.InferOutput<typeof CreateBrowserTokenSchema>;

/** The token (shown this once, stored nowhere) and when it stops working (ms since the epoch). */
export const BrowserTokenSchema = v.object({ token: v.string(), expiresAt: v.number() });
export type BrowserToken = v.InferOutput<typeof BrowserTokenSchema>;
