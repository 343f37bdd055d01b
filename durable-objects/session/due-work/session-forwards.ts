import { readResult } from "../../../harness/runtime/operation-codec.ts";
import type { DueWork } from "./due-work.ts";
import type { HeldSlots } from "../held-slots.ts";
import type { SqlSessionStorage } from "../storage/sql-session-storage.ts";
import { DeferredRegistrar } from "./deferred-registrations.ts";
import { SettlementForwarder } from "./settlement-outbox.ts";

/** What the session object's forwards read from it, every time (the session may be deleted meanwhile). */
export interface ForwardsHost {
  env: Env;
  dueWork: DueWork;
  /** The lanes' held open-operation slots: a forward also asks for the next ones (held-slots.ts). */
  heldSlots: HeldSlots;
  /** Whether the object holds a session schema now. */
  holdsSession(): boolean;
  /** The open session's storage, else the stored one, else undefined. */
  storage(): SqlSessionStorage | undefined;
}

/**
 * Settled operations and usage-ledger rows to the tenant object, in one call: it frees the
 * operations' open-operation slots (tenant/tenant-operations.ts), enqueues their webhooks and adds the
 * usage, idempotently by operation id, event id and ledger seq (settlement-outbox.ts, usage-outbox.ts),
 * and grants the slots the session's lanes want held for their next prompts (held-slots.ts).
 */
export function settlementForwarder(host: ForwardsHost): SettlementForwarder {
  const { dueWork } = host;
  return new SettlementForwarder({
    outbox: () => (host.holdsSession() ? dueWork.outbox : undefined),
    result: (operationId) => {
      const storage = host.storage();
      return storage && readResult(storage, operationId);
    },
    usage: {
      pending: (limit) => {
        const storage = host.storage();
        return storage && dueWork.usage.pending(storage, limit);
      },
      // Only for the ledger it was read from: a session deleted and created again meanwhile starts its own.
      acknowledge: (usage) => {
        if (host.storage()?.metadata.createdAt === usage.epoch) dueWork.usage.acknowledge(usage);
      },
      postpone: (delayMs) => {
        if (host.holdsSession()) dueWork.usage.postpone(delayMs);
      },
    },
    send: async (operations, usage) => {
      const storage = host.storage();
      if (!storage) return;
      const lanes = host.heldSlots.toAsk();
      const { slots } = await host.env.TENANTS.getByName(storage.tenantId)
        .operationsSettled(storage.metadata.id, operations, usage, lanes)
        .catch((error: unknown) => {
          host.heldSlots.notGranted(lanes);
          throw error;
        });
      host.heldSlots.granted(lanes, slots, Date.now());
    },
    rearm: () => {
      if (host.holdsSession()) dueWork.rearm();
    },
  });
}

/**
 * Suspended runs to their DeferredIndex shard (the cron polls them) and to the tenant object
 * (`operation.suspended` webhooks); settled ones leave the shard (deferred-registrations.ts). All
 * apply a repeated forward once.
 */
export function deferredRegistrar(host: ForwardsHost): DeferredRegistrar {
  const { dueWork } = host;
  return new DeferredRegistrar({
    registrations: () => (host.holdsSession() ? dueWork.registrations : undefined),
    sessionName: () => {
      const storage = host.storage();
      return storage && `${storage.tenantId}:${storage.metadata.id}`;
    },
    send: async (shard, runs, removed) => {
      const storage = host.storage();
      if (!storage) return;
      const index = host.env.DEFERRED_INDEX.getByName(shard);
      const suspended = runs.map((run) => ({ operationId: run.operationId, lane: run.lane, pollAt: run.dueAt }));
      await Promise.all([
        runs.length > 0 && index.register(runs),
        runs.length > 0 && host.env.TENANTS.getByName(storage.tenantId).operationsSuspended(storage.metadata.id, suspended),
        removed.length > 0 && index.unregister(`${storage.tenantId}:${storage.metadata.id}`, removed),
      ]);
    },
    rearm: () => {
      if (host.holdsSession()) dueWork.rearm();
    },
  });
}
