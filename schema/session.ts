import type { LaneInfo } from "./lane.ts";
import type { HarnessSettings } from "./settings.ts";
import type { SessionStats } from "./usage.ts";

// The public session shapes (spec/API.md "Sessions"), shared by the session object and the SDK.

/** A branch: a named movable tip into the session's tree. */
export interface Branch {
  name: string;
  tipId: string | null;
}

/** A branch in a listing: `lane` says whether a lane is bound to it. */
export interface BranchListing extends Branch {
  lane: boolean;
}

/**
 * The public Session. It embeds the first page of its branches and of its lanes (by name, as many
 * as `GET …/branches` and `GET …/lanes` answer by default); a non-null `branchesNextCursor` /
 * `lanesNextCursor` continues that listing with `?cursor=`.
 */
export interface Session {
  id: string;
  tenantId: string;
  name: string | null;
  createdAt: number;
  parentSessionId?: string;
  stats: SessionStats;
  settings: HarnessSettings;
  branches: BranchListing[];
  branchesNextCursor: string | null;
  lanes: LaneInfo[];
  lanesNextCursor: string | null;
}

/**
 * What `POST /v1/sessions` answers: the Session and, when the creation defined http tools, their
 * signing secrets by tool name — shown this once, never again.
 */
export type CreatedSession = Session & { toolSecrets?: Record<string, string> };
