import type { InboxItem } from "../../schema/lane.ts";
import { operationIdOfKey, operationKey } from "../session/builtin-addresses.ts";
import type { ReadOpenOperation, StoredOpenOperation } from "./operation-codec.ts";
import type { DurableLaneState } from "./types.ts";

// The lane state as stored (`pi.lane.state/{lane}`). It holds the lane's open operation
// (operation-codec.ts), so acceptance, every transition and the settlement rewrite it (QUALITY P3:
// bytes written per turn): its own fields are short too. `l` is the last operation's id, packed
// like an operation's key (builtin-addresses operationKey), left out while there is none; `q` the
// inbox, left out while empty; `r` the pending runs' ids, packed alike, left out while there are
// none; `o` the open operation. Lane states an earlier build wrote (and a new lane's, which
// creation writes in full) keep the long names and read the same.

/** The lane state as the lane command writes it. */
export interface StoredLaneState {
  l?: string;
  q?: InboxItem[];
  r?: string[];
  o?: StoredOpenOperation;
}

/** Any lane state as stored, short or long, as a reader types it. */
export interface ReadLaneState {
  l?: string;
  q?: InboxItem[];
  r?: string[];
  o?: ReadOpenOperation;
  lastOperationId?: string | null;
  inbox?: InboxItem[];
  /** The earliest form named its current operation. */
  currentOperationId?: string | null;
}

export function storedLaneState(state: DurableLaneState, open: StoredOpenOperation | undefined): StoredLaneState {
  const { lastOperationId, inbox, pending = [] } = state;
  return {
    ...(lastOperationId !== null && { l: operationKey(lastOperationId) }),
    ...(inbox.length > 0 && { q: inbox }),
    ...(pending.length > 0 && { r: pending.map(operationKey) }),
    ...(open && { o: open }),
  };
}

/** The durable fields of a stored lane state, whichever form it has, and the operation it holds. */
export function readLaneState(stored: ReadLaneState): DurableLaneState & { open?: ReadOpenOperation } {
  const lastOperationId = stored.l !== undefined ? operationIdOfKey(stored.l) : (stored.lastOperationId ?? null);
  return {
    lastOperationId,
    inbox: stored.q ?? stored.inbox ?? [],
    pending: (stored.r ?? []).map(operationIdOfKey),
    ...(stored.currentOperationId !== undefined && { currentOperationId: stored.currentOperationId }),
    ...(stored.o && { open: stored.o }),
  };
}
