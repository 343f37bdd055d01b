import { SessionWatch } from "./session-watch.ts";

export type {
  BranchInfo,
  LaneConfigPatch,
  NewBranchEntry,
  QueueInput,
  SessionInfo,
  SessionInit,
} from "./session-host.ts";

/**
 * One session per object, named `${tenantId}:${sessionId}` (ARCHITECTURE D2): a thin shell whose
 * layers are hosting (session/session-host.ts), session data RPC (session-data.ts) and lane
 * RPC (session-lanes.ts). Expected failures come back as tagged values, never as throws.
 */
export class SessionObject extends SessionWatch {}
