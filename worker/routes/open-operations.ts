import type { HandedReservation } from "../../durable-objects/session/due-work/settlement-outbox.ts";
import type { Reservation } from "../../durable-objects/tenant/tenant-operations.ts";
import { reserveAfterHealing } from "../../durable-objects/tenant/stale-operations.ts";
import { IdSchema } from "../../schema/api.ts";
import type { RpcResult } from "../../schema/errors.ts";
import { LaneNameSchema } from "../../schema/lane-api.ts";
import type { Wire } from "../../schema/wire.ts";
import { sessionStub, tenantStub, type AppContext } from "../env.ts";
import { fail, replyValue } from "../http-error.ts";
import { admitCaller, beginAdmission, callerOf } from "../middleware/auth.ts";
import { pathParam } from "../validate.ts";

type TenantStub = ReturnType<typeof tenantStub>;

/** A slot the tenant granted, and whether the tenant has webhook endpoints (tenant-operations.ts). */
type GrantedReservation = Extract<Reservation, { ok: true }>;

/** What a refused reservation tells the client to wait before retrying. */
const RETRY_AFTER_SECONDS = 5;

export interface AdmittingScope {
  tenantId: string;
  sessionId: string;
  lane: string;
}

/**
 * The session and lane an accepting route addresses (behind `requireTenantWithReservation`, so the
 * key may not be verified yet: nothing is called here). A bad path is 400, after a bad key's 401.
 */
export async function admittingLane(c: AppContext): Promise<AdmittingScope & { stub: ReturnType<typeof sessionStub> }> {
  const tenantId = c.get("caller")?.tenantId ?? c.get("presentedKey").tenantId;
  try {
    const sessionId = pathParam(c, "sid", IdSchema);
    const lane = pathParam(c, "lane", LaneNameSchema);
    return { tenantId, sessionId, lane, stub: sessionStub(c.env, tenantId, sessionId) };
  } catch (error) {
    await callerOf(c);
    throw error;
  }
}

/**
 * The tenant's concurrent open operations quota around one accept (POST …/operations, …/prompt,
 * …/navigate, …/compact): a slot is reserved before the session is called, in the same tenant
 * call that authenticates the key (one round trip), released when the body or the accept fails,
 * and bound to the accepted operation's id otherwise; the session object releases it when the
 * operation settles. An accept that takes the reservation over (`accept` answers true for the
 * value) needs no bind: the session releases the reservation itself with the settled operation.
 * A refusal is healed once (lost releases) before it becomes 429 RateLimited; a bad body is 400
 * before that, as when the body was read first.
 */
export async function withOpenOperation<B, T>(
  c: AppContext,
  scope: AdmittingScope,
  readBody: () => Promise<B>,
  /** `reservation`: the slot, for an accept that takes it over (the session then releases it). */
  accept: (body: B, reservation: HandedReservation) => Promise<Wire<RpcResult<T>>>,
  /** The operation the accept opened; undefined when it opened none (a prompt handed to a running one). */
  operationIdOf: (value: T) => string | undefined,
  handedOver: (value: T) => boolean = () => false,
): Promise<T> {
  // One stub for every tenant call of this request: each getByName derives the object's id again.
  const tenant = tenantStub(c.env, scope.tenantId);
  const { reservationId, webhooks } = await reserve(c, tenant, scope, readBody);
  let value: T;
  try {
    value = replyValue(await accept(await readBody(), { reservationId, webhooks }));
  } catch (error) {
    // A failed release leaves an unbound reservation, which expires on its own.
    await tenant.releaseReservation(reservationId).catch(() => undefined);
    throw error;
  }
  // The operation is accepted whatever happens here: a failed bind leaves an expiring reservation.
  const operationId = operationIdOf(value);
  if (operationId === undefined) await tenant.releaseReservation(reservationId).catch(() => undefined);
  else if (!handedOver(value)) await tenant.bindOperation(reservationId, operationId, { sessionId: scope.sessionId, lane: scope.lane }).catch(() => undefined);
  return value;
}

/**
 * A steer or follow-up under `ifBusy` (spec "Prompt while busy") opens no operation when a run
 * takes it, so it is first handed to the lane's running run with no slot reserved: a tenant at its
 * open-operations quota still steers its running runs. Undefined when the body asks for no such
 * hand-over, or no run took it (an idle lane, a compaction or a navigation current): the caller
 * then reserves a slot as for any accept. The key is verified before the session is called (on a
 * cold isolate, the one tenant call the reservation would have made), and before a bad body's 400.
 */
export async function handedWithoutSlot<B, T>(
  c: AppContext,
  readBody: () => Promise<B>,
  /** The hand-over a body asks for (its `ifBusy` is steer or followUp), else undefined. */
  handOver: (body: B) => (() => Promise<Wire<RpcResult<T | null>>>) | undefined,
): Promise<T | undefined> {
  let body: B;
  try {
    body = await readBody();
  } catch (error) {
    await callerOf(c);
    throw error;
  }
  const send = handOver(body);
  if (send === undefined) return undefined;
  await callerOf(c);
  return replyValue(await send()) ?? undefined;
}

/**
 * A warm isolate's accept on the slot the session holds ahead for the lane (session/held-slots.ts):
 * the key is trusted here and the request paid from this isolate's lease (worker/middleware/auth.ts),
 * so the tenant object is not called on the request's path at all. Undefined when the isolate is
 * cold or the session holds no slot (`accept` answers null): the caller then reserves as usual
 * (`withOpenOperation`). A bad body is 400 before the session is called.
 */
export async function withHeldSlot<B, T>(c: AppContext, readBody: () => Promise<B>, accept: (body: B) => Promise<Wire<RpcResult<T>> | null>): Promise<T | undefined> {
  if (c.get("caller") === undefined) return undefined;
  const answer = await accept(await readBody());
  return answer === null ? undefined : replyValue(answer);
}

async function reserve<B>(c: AppContext, tenant: TenantStub, scope: AdmittingScope, readBody: () => Promise<B>): Promise<GrantedReservation> {
  const first = await firstReservation(c, tenant, scope);
  if (first.ok) return first;
  await readBody();
  const second = await reserveAfterHealing(c.env, scope.tenantId, scope.sessionId, scope.lane, first.openOperations);
  if (second.ok) return second;
  throw fail("RateLimited", `The tenant's open operations quota is used up; retry in ${RETRY_AFTER_SECONDS} s`, {
    quota: "maxOpenOperations",
    retryAfterSeconds: RETRY_AFTER_SECONDS,
  });
}

/**
 * Checks the key and reserves in one call, leasing request quota in it unless the request was
 * paid from this isolate's lease (a warm isolate, or an Idempotency-Key request authenticated
 * before): a key revoked elsewhere is refused here at once, whatever this isolate trusts.
 */
async function firstReservation(c: AppContext, tenant: TenantStub, scope: AdmittingScope): Promise<Reservation> {
  const presented = c.get("presentedKey");
  const admission = beginAdmission(presented.tenantId, c.get("caller") !== undefined);
  const { authorization, reservation } = await tenant.authorizeAndReserve(presented.hash, scope.sessionId, scope.lane, admission.wanted);
  admitCaller(c, presented, admission, authorization);
  return reservation;
}
