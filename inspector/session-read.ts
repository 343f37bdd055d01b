import type { AgentSessionsClient } from "../client/client.ts";
import type { Page } from "../client/types.ts";
import type { Session } from "../schema/session.ts";

/** Pages after the Session's embedded first one are read this many at a time (the API's most). */
const LISTING_PAGE = 1000;

/**
 * A session with all its lanes and branches. `GET /v1/sessions/{sid}` embeds only the first 50 of
 * each (docs/api-sessions.md): a session with more continues them from `lanesNextCursor` /
 * `branchesNextCursor` with `GET …/lanes?cursor=` and `GET …/branches?cursor=`, else the lanes
 * beyond could not be watched and the branches beyond would not be tagged in the tree.
 */
export async function readWholeSession(client: AgentSessionsClient, sessionId: string): Promise<Session> {
  const session = await client.sessions.get(sessionId);
  const [lanes, branches] = await Promise.all([
    rest(session.lanesNextCursor, (cursor) => client.lanes.list(sessionId, { cursor, limit: LISTING_PAGE })),
    rest(session.branchesNextCursor, (cursor) => client.branches.list(sessionId, { cursor, limit: LISTING_PAGE })),
  ]);
  return {
    ...session,
    lanes: [...session.lanes, ...lanes],
    lanesNextCursor: null,
    branches: [...session.branches, ...branches],
    branchesNextCursor: null,
  };
}

/** The items of a listing from `cursor` (exclusive) to its end; none when `cursor` is null. */
async function rest<T>(cursor: string | null, read: (cursor: string) => Promise<Page<T>>): Promise<T[]> {
  const items: T[] = [];
  for (let next = cursor; next !== null; ) {
    const page = await read(next);
    items.push(...page.items);
    next = page.nextCursor;
  }
  return items;
}
