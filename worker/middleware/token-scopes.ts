import type { Context } from "hono";
import type { TokenScope } from "../../schema/browser-tokens.ts";
import { fail, type HttpFailure } from "../http-error.ts";
import type { Method } from "../openapi/catalog-types.ts";
import { readBoundedText } from "../validate.ts";
import type { BrowserTokenClaims } from "./browser-tokens.ts";

/** One route a browser token may call, in the catalog's form (worker/openapi/catalog-*.ts). */
export interface TokenRoute {
  method: Method;
  path: string;
  scope: TokenScope;
  /** The body's `kind` must be one of these (an operation a token may start). */
  kinds?: readonly string[];
  /** The path parameter naming the lane the token must reach (default `lane`). */
  laneParam?: string;
}

/**
 * Everything a browser token may do (docs/api-tenants.md "Browser tokens"): each route names the
 * scope it needs, and its `{sid}` and `{lane}` must be the token's session and one of its lanes
 * (any lane when the token names none). Any other route answers 403 TokenScope to a token.
 * /openapi.json lists these routes with the `browserToken` scheme from this same table.
 */
export const TOKEN_ROUTES: readonly TokenRoute[] = [
  { method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/watch", scope: "watch" },
  { method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/events", scope: "watch" },
  { method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/snapshot", scope: "watch" },
  { method: "get", path: "/v1/sessions/{sid}/lanes/{lane}", scope: "watch" },
  // A lane's entries older than its snapshot holds (the SDK's olderEntries), read on the branch
  // that bears the lane's name: a token reaches the branch of a lane it reaches.
  { method: "get", path: "/v1/sessions/{sid}/branches/{name}/entries", scope: "watch", laneParam: "name" },
  { method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/prompt", scope: "prompt" },
  { method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/operations", scope: "prompt", kinds: ["prompt"] },
  { method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/queue", scope: "prompt" },
  { method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/abort", scope: "prompt" },
  { method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/operations/{opId}", scope: "prompt" },
  { method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/pending", scope: "prompt" },
  { method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/operations/{opId}/abort", scope: "prompt" },
  { method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/operations/{opId}/tool-results/{toolCallId}", scope: "prompt" },
  { method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/ai-sdk", scope: "prompt" },
  { method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/ai-sdk/messages", scope: "watch" },
  { method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/ai-sdk/{chatId}/stream", scope: "watch" },
];

const MATCHERS = TOKEN_ROUTES.map((route) => ({
  route,
  names: [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? ""),
  pattern: new RegExp(`^${route.path.replace(/\{\w+\}/g, "([^/]+)")}$`),
}));

/** The table's route for a request, with its path parameters decoded as the router decodes them. */
export function tokenRouteOf(method: string, pathname: string): { route: TokenRoute; params: Record<string, string> } | undefined {
  for (const { route, names, pattern } of MATCHERS) {
    if (route.method !== method.toLowerCase()) continue;
    const match = pattern.exec(pathname);
    if (!match) continue;
    try {
      return { route, params: Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(match[i + 1] ?? "")])) };
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * 403 TokenScope unless the token may make this request; checked before the minting key is
 * verified or anything is touched. Whether another session exists is never revealed: any session
 * but the token's own is refused alike.
 */
export async function tokenScopeRefusal(c: Context, claims: BrowserTokenClaims): Promise<HttpFailure | undefined> {
  const found = tokenRouteOf(c.req.method, new URL(c.req.url).pathname);
  if (!found) return fail("TokenScope", "A browser token cannot call this route; use a tenant key");
  const { route, params } = found;
  if (params.sid !== claims.s) return fail("TokenScope", "This browser token is for another session");
  const lane = params[route.laneParam ?? "lane"] ?? "";
  if (claims.l && !claims.l.includes(lane)) return fail("TokenScope", `This browser token does not reach lane ${lane}`, { lane });
  if (!claims.p.includes(route.scope)) return fail("TokenScope", `This browser token lacks the ${route.scope} scope`, { scope: route.scope });
  if (route.kinds) {
    const kind = await bodyKind(c);
    if (kind !== undefined && !route.kinds.includes(kind)) return fail("TokenScope", `A browser token cannot start ${kind} operations`, { kind });
  }
  return undefined;
}

/** The body's `kind` when it is a JSON object with a string kind; anything else is left to the route's validation (400). */
async function bodyKind(c: Context): Promise<string | undefined> {
  let body: unknown;
  try {
    // The route's own bounded read: the route reads the same text again without reading the body twice.
    body = JSON.parse(await readBoundedText(c));
  } catch {
    return undefined;
  }
  if (typeof body !== "object" || body === null || !("kind" in body)) return undefined;
  return typeof body.kind === "string" ? body.kind : undefined;
}
