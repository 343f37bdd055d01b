import { SESSION_LIMITS } from "../../schema/api-sessions.ts";
import { RpcError } from "../rpc/rpc-errors.ts";
import { branchCount, laneCount } from "./storage/branch-inventory.ts";
import type { SqlHost } from "../sql/sql-host.ts";

/** What one creation adds: a branch (POST …/branches, or a lane on a new branch) and/or a lane. */
export interface CreationNeeds {
  branch: boolean;
  lane: boolean;
}

/**
 * The caps of SESSION_LIMITS (ARCHITECTURE D17: every resource a client can grow has a bound),
 * enforced by the object before it calls the engine's creating mutation (`Session.createBranch`,
 * `AgentHarness.lane`), which knows no cap.
 *
 * Race-free within the object: the stored count is read and the slot reserved in one synchronous
 * turn, and the reservation is held until the creating call has settled. A creation that may still
 * commit is therefore always counted, in storage or as a reservation, so concurrent creations can
 * never pass a cap between them (one whose commit landed but whose reservation is not yet released
 * is counted twice for a moment, which can only refuse early at the very edge of the cap). The
 * object runs one instance, so one counter sees every creation.
 *
 * The cap also bounds the engine's restore: a harness opening (restore.ts `inventoryLanes`) reads
 * every branch tip, at most SESSION_LIMITS.branches small rows.
 */
export class CreationSlots {
  /** Slots held by creations that have been issued and not yet settled. */
  private readonly reserved: Record<keyof CreationNeeds, number> = { branch: 0, lane: 0 };

  constructor(private readonly host: SqlHost) {}

  /** Runs `create` holding the slots it needs, or refuses with 422 LimitExceeded without calling it. */
  async within<T>(needs: CreationNeeds, create: () => Promise<T>): Promise<T> {
    if (needs.lane) this.refuseBeyond("lanes", laneCount(this.host) + this.reserved.lane);
    if (needs.branch) this.refuseBeyond("branches", branchCount(this.host) + this.reserved.branch);
    this.hold(needs, 1);
    try {
      return await create();
    } finally {
      this.hold(needs, -1);
    }
  }

  private hold(needs: CreationNeeds, delta: 1 | -1): void {
    if (needs.branch) this.reserved.branch += delta;
    if (needs.lane) this.reserved.lane += delta;
  }

  private refuseBeyond(resource: "branches" | "lanes", held: number): void {
    const limit = SESSION_LIMITS[resource];
    if (held < limit) return;
    throw new RpcError({ code: "LimitExceeded", message: `This session already holds ${limit} ${resource}, the most it may`, details: { resource, limit } });
  }
}
