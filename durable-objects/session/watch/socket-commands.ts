import type { RunRequest } from "../../../harness/runtime/acceptance.ts";
import { ERROR_STATUS, type ApiError, type RpcResult } from "../../../schema/errors.ts";
import type { WatchCommand, WatchReply } from "../../../schema/watch.ts";
import { fromWire, toWire, type Wire } from "../../../schema/wire.ts";
import { IdempotencyStore, type ReceiptScope } from "../../rpc/idempotency.ts";
import { LEASE_MAX, QuotaLeases } from "../../tenant/quota-leases.ts";
import { reserveAfterHealing } from "../../tenant/stale-operations.ts";
import { sha256Hex } from "../../tenant/tenant-keys.ts";
import type { QueueInput, SessionHost } from "../session-host.ts";
import type { BusyAdmission, BusyStrategy } from "../session-operations.ts";
import type { QueuedPrompt } from "../../../schema/lane-answers.ts";

/** What the commands reach of the session's capabilities: the REST twins' own RPC bodies. */
export interface CommandTargets {
  acceptOperation(lane: string, request: Wire<RunRequest>, receipt?: ReceiptScope): Promise<Wire<RpcResult<BusyAdmission>>>;
  /** `acceptOperation` on the slot the session holds ahead for the lane; null when none is held. */
  acceptOperationOnHeldSlot(lane: string, request: Wire<RunRequest>, receipt?: ReceiptScope): Promise<Wire<RpcResult<BusyAdmission>> | null>;
  acceptWhileBusy(lane: string, request: Wire<RunRequest>, ifBusy: BusyStrategy, receipt?: ReceiptScope): Promise<Wire<RpcResult<BusyAdmission>>>;
  /** A steer or follow-up handed to the running run with no slot; null when no run takes it. */
  handToRunningRun(lane: string, request: Wire<RunRequest>, ifBusy: "steer" | "followUp", receipt?: ReceiptScope): Promise<Wire<RpcResult<QueuedPrompt | null>>>;
  enqueue(lane: string, kind: "steer" | "followUp" | "nextRun", input: Wire<QueueInput>, receipt?: ReceiptScope): Promise<Wire<RpcResult<{ entryId: string }>>>;
  abortCurrent(lane: string, waitMs: number, receipt?: ReceiptScope): Promise<Wire<RpcResult<unknown>>>;
}

type CommandsHost = Pick<SessionHost, "ctx" | "env" | "heldSlots" | "open">;

/** Command ids share the session's idempotency store (as long as its keys are kept) under this prefix. */
const COMMAND_ID_SCOPE = "ws";

/**
 * Commands on a lane socket (spec/API.md "Commands on the lane socket"): `prompt`, `queue` and
 * `abort` frames, answered with a `reply` carrying the status and body the REST twin answers.
 *
 * - Authorized by the socket's own authentication: the front worker marked the socket as one that
 *   may command (a key, or a browser token with the `prompt` scope) with the hash of its key.
 * - The tenant's request quota is spent from a lease this object holds (quota-leases.ts, as the
 *   front worker's isolates do), a repeated id included: no tenant-object call per frame, one per
 *   lease (which also re-verifies the key). A prompt also takes its open-operation slot, like its
 *   REST twin: one the session holds ahead for the lane while half the tenant's quota is free
 *   (held-slots.ts), else reserved then (a refusal healed once, tenant/stale-operations.ts).
 * - The id is kept with what it started (the session's idempotency store, keyed by lane and id):
 *   a repeated id answers the first answer again and does nothing twice. The queue and prompt
 *   effects carry the id as their receipt (rpc/idempotency.ts `once`), so an object killed between
 *   the effect and the remembered reply does not make the effect again when the id is repeated.
 */
export class SocketCommands {
  private readonly leases = new QuotaLeases();

  constructor(
    private readonly host: CommandsHost,
    private readonly targets: CommandTargets,
  ) {}

  async run(ws: WebSocket, lane: string, keyHash: string, command: WatchCommand, send: (ws: WebSocket, reply: WatchReply) => void): Promise<void> {
    const store = new IdempotencyStore(this.host.ctx.storage.sql);
    const key = `${COMMAND_ID_SCOPE}:${lane}:${command.id}`;
    const fingerprint = await sha256Hex(JSON.stringify({ ...command, id: undefined }));
    // Every frame is one request of the quota, a repeated id too (its REST twin's repeat of an
    // Idempotency-Key is paid before it is answered): repeats are never free.
    const refusal = await this.spendRequest(keyHash);
    if (refusal) return send(ws, errorReply(command.id, refusal));
    const claim = store.claim(key, fingerprint);
    if (claim.state === "replay") return send(ws, { type: "reply", id: command.id, status: claim.status, body: JSON.parse(claim.body) });
    if (claim.state === "conflict") return send(ws, errorReply(command.id, { code: "IdempotencyConflict", message: `Command id ${command.id} was used for another command on this lane` }));
    if (claim.state === "in_progress") return send(ws, errorReply(command.id, { code: "IdempotencyInProgress", message: `Command ${command.id} is still being answered`, details: { retryAfterSeconds: claim.retryAfterSeconds } }));
    let reply: WatchReply;
    try {
      reply = await this.execute(lane, command, { key, requestHash: fingerprint });
    } catch (error) {
      store.complete(key, fingerprint, null);
      throw error;
    }
    // A refused command (4xx) may be sent again and tried again; what took effect is remembered.
    store.complete(key, fingerprint, reply.status < 300 ? { status: reply.status, body: JSON.stringify(reply.body) } : null);
    send(ws, reply);
  }

  private async execute(lane: string, command: WatchCommand, receipt: ReceiptScope): Promise<WatchReply> {
    switch (command.type) {
      case "prompt":
        return this.prompt(lane, command, receipt);
      case "queue": {
        const { kind, message, images } = command;
        return replyOf(command.id, 201, await this.targets.enqueue(lane, kind, toWire({ message, ...(images && { images }) }), receipt));
      }
      case "abort":
        return replyOf(command.id, 200, await this.targets.abortCurrent(lane, 0, receipt));
    }
  }

  /**
   * `POST …/operations` (`kind: "prompt"`): on the slot the session holds ahead for the lane
   * (held-slots.ts), kept for the lane's next prompt when the run settles within a second, as an
   * HTTP prompt's is; else (or under a busy strategy) the open-operation slot reserved first and
   * bound to what started.
   */
  private async prompt(lane: string, command: Extract<WatchCommand, { type: "prompt" }>, receipt: ReceiptScope): Promise<WatchReply> {
    const { prompt, images, operationId, deferred, ifBusy } = command;
    const request: RunRequest = { kind: "prompt", prompt, ...(images && { images }), ...(operationId !== undefined && { operationId }), ...(deferred !== undefined && { deferred }) };
    const busyStrategy = ifBusy !== undefined && ifBusy !== "reject";
    // A steer or follow-up a running run takes opens no operation: no slot (REST does the same).
    if (ifBusy === "steer" || ifBusy === "followUp") {
      const handed = fromWire(await this.targets.handToRunningRun(lane, toWire(request), ifBusy, receipt));
      if (!handed.ok) return errorReply(command.id, handed.error);
      if (handed.value !== null) return { type: "reply", id: command.id, status: 202, body: handed.value };
    }
    if (!busyStrategy) {
      const onHeld = await this.targets.acceptOperationOnHeldSlot(lane, toWire(request), receipt);
      if (onHeld !== null) {
        const answer = fromWire(onHeld);
        return answer.ok ? { type: "reply", id: command.id, status: 202, body: answer.value } : errorReply(command.id, answer.error);
      }
    }
    const { storage, session } = this.host.open();
    const tenant = this.host.env.TENANTS.getByName(storage.tenantId);
    // A slot held ahead (held-slots.ts), else one reserved on this command's path.
    const held = this.host.heldSlots.take(lane, Date.now());
    const reserved = held !== undefined ? { ok: true as const, reservationId: held.slot.reservationId } : await tenant.reserveOperation(session.metadata.id, lane);
    // Healed once, as its REST twin's refusal is, before it becomes 429.
    const reservation = reserved.ok ? reserved : await reserveAfterHealing(this.host.env, storage.tenantId, session.metadata.id, lane, reserved.openOperations);
    if (!reservation.ok) {
      return errorReply(command.id, { code: "RateLimited", message: "The tenant's open operations quota is used up; retry in 5 s", details: { quota: "maxOpenOperations", retryAfterSeconds: 5 } });
    }
    let answer: RpcResult<BusyAdmission>;
    try {
      answer = fromWire(busyStrategy ? await this.targets.acceptWhileBusy(lane, toWire(request), ifBusy, receipt) : await this.targets.acceptOperation(lane, toWire(request), receipt));
    } catch (error) {
      await tenant.releaseReservation(reservation.reservationId).catch(() => undefined);
      throw error;
    }
    // Off the reply's path: the slot is the tenant's bookkeeping, and a bind that arrives after the
    // operation's release is remembered by the tenant (tenant-operations.ts); a lost one leaves a
    // reservation that expires by itself.
    if (!answer.ok || "queued" in answer.value) void tenant.releaseReservation(reservation.reservationId).catch(() => undefined);
    else void tenant.bindOperation(reservation.reservationId, answer.value.operationId, { sessionId: session.metadata.id, lane }).catch(() => undefined);
    this.host.heldSlots.want(lane);
    return answer.ok ? { type: "reply", id: command.id, status: 202, body: answer.value } : errorReply(command.id, answer.error);
  }

  /**
   * One request of the tenant's quota, from this object's lease; an empty lease is refilled by one
   * call that also verifies the socket's key (a key revoked meanwhile is refused here).
   */
  private async spendRequest(keyHash: string): Promise<ApiError | undefined> {
    const { storage } = this.host.open();
    const now = Date.now();
    if (this.leases.spend(storage.tenantId, now)) return undefined;
    const granted = await this.host.env.TENANTS.getByName(storage.tenantId).authorizeLease(keyHash, LEASE_MAX, now);
    if (!granted) return { code: "Unauthenticated", message: "The socket's key is no longer valid" };
    if (granted.limited) return { code: "RateLimited", message: `The tenant's request quota is used up; retry in ${granted.retryAfterSeconds} s`, details: { quota: "requestsPerMinute", retryAfterSeconds: granted.retryAfterSeconds } };
    this.leases.hold(storage.tenantId, granted.windowStart, granted.granted);
    return this.leases.spend(storage.tenantId, now) ? undefined : { code: "RateLimited", message: "The tenant's request quota is used up; retry shortly", details: { quota: "requestsPerMinute", retryAfterSeconds: 1 } };
  }
}

function replyOf(id: string, status: number, result: Wire<RpcResult<unknown>>): WatchReply {
  const answer = fromWire(result);
  return answer.ok ? { type: "reply", id, status, body: answer.value } : errorReply(id, answer.error);
}

/** A command's refusal: the error's status and `{ error }` body, as its REST twin answers it. */
export function errorReply(id: string, error: ApiError): WatchReply {
  return { type: "reply", id, status: ERROR_STATUS[error.code], body: { error } };
}

