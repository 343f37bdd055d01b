import * as v from "valibot";
import type { AgentHarness } from "../../harness/runtime/harness.ts";
import { IdSchema } from "../../schema/api.ts";
import { ERROR_STATUS, type ApiError, type RpcResult } from "../../schema/errors.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { MAX_WATCH_CLIENT_MESSAGE_CHARS, MAX_WATCH_COMMAND_BYTES, MAX_WATCH_SOCKETS_PER_SESSION, WATCH_CLOSE, WatchClientMessageSchema, WatchCommandIdSchema, WatchCommandSchema } from "../../schema/watch.ts";
import { parseStreamId } from "../../schema/watch-resume.ts";
import { utf8Length } from "../../schema/utf8.ts";
import { describeIssue } from "../../schema/validation-messages.ts";
import { errorReply, SocketCommands, type CommandTargets } from "./watch/socket-commands.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult, expectedError, RpcError } from "../rpc/rpc-errors.ts";
import { platformFailure } from "../rpc/platform-errors.ts";
import { close, WatchHub, watchTags, type WatchTarget } from "./watch/watch-hub.ts";
import type { SessionHost } from "./session-host.ts";

/**
 * Headers the front worker sets on the upgrade it forwards after authenticating it (D17); it
 * overwrites whatever the client sent under these names, so the object may trust them.
 */
export const WATCH_HEADERS = { kind: "x-watch-kind", lane: "x-watch-lane", keyId: "x-watch-key-id", batch: "x-watch-batch", resume: "x-watch-resume", commands: "x-watch-commands", format: "x-watch-format", tokenExpires: "x-watch-token-expires" } as const;

/** What this module reaches of the host (session-host.ts). */
type WatchHost = Pick<SessionHost, "ctx" | "env" | "harness" | "heldSlots" | "open">;

/**
 * Lane and session watch streams over hibernatable WebSockets (spec/API.md "Watch protocol",
 * ARCHITECTURE D13, D14.13): the upgrade forwarded by the front worker, client messages, close and
 * error. The fan-out and the event counter live in watch/watch-hub.ts.
 */
export class SessionWatch {
  private readonly hub: WatchHub;
  private readonly commands: SocketCommands;
  /**
   * Each socket's commands run one after another, in the order sent: a prompt waiting on its
   * slot is not overtaken by the abort sent after it (the stop button pressed right after send).
   */
  private readonly commandChains = new WeakMap<WebSocket, Promise<void>>();

  constructor(
    private readonly host: WatchHost,
    targets: CommandTargets,
  ) {
    // Cheap, no storage: answered by the runtime without waking the object.
    host.ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    this.hub = new WatchHub(host.ctx);
    this.commands = new SocketCommands(host, targets);
  }

  /** Every hosted harness feeds the sockets (the host calls this before any caller gets the harness). */
  harnessCreated(harness: AgentHarness): void {
    this.hub.attach(harness);
  }

  /** How far apart a lane's live updates go out: wider for large audiences (watch/watch-hub.ts). */
  liveUpdateIntervalMs(lane: string): number {
    return this.hub.liveUpdateIntervalMs(lane);
  }

  /**
   * A lane snapshot with its seq in the watch protocol's per-session event counter (for
   * `GET …/lanes/{lane}/snapshot`): the events after it carry larger seqs.
   */
  async laneSnapshotAt(name: string): Promise<Wire<RpcResult<{ seq: number; snapshot: LaneSnapshot }>>> {
    return asResult(async () => {
      const harness = await this.host.harness();
      const lane = harness.getLane(name);
      if (!lane) throw new RpcError({ code: "UnknownLane", message: `Lane "${name}" does not exist` });
      return this.hub.snapshot(harness, (m) => lane.captureSnapshot(m));
    });
  }

  /** Only WebSocket upgrades forwarded by the front worker come here. */
  async fetch(request: Request): Promise<Response> {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return errorResponse({ code: "UpgradeRequired", message: "Expected a WebSocket upgrade" });
    }
    const target = watchTarget(request.headers);
    const keyId = request.headers.get(WATCH_HEADERS.keyId);
    if (!target || !keyId) return errorResponse({ code: "ValidationFailed", message: "Invalid watch target" });
    let harness: AgentHarness;
    try {
      harness = await this.host.harness();
    } catch (error) {
      const tagged = expectedError(error);
      if (tagged) return errorResponse(tagged);
      throw error;
    }
    if (target.kind === "lane" && !harness.getLane(target.lane)) {
      return errorResponse({ code: "UnknownLane", message: `Lane "${target.lane}" does not exist` });
    }
    if (this.host.ctx.getWebSockets("watch").length >= MAX_WATCH_SOCKETS_PER_SESSION) {
      return errorResponse({
        code: "LimitExceeded",
        message: `A session holds at most ${MAX_WATCH_SOCKETS_PER_SESSION} watch sockets and streams at once`,
        details: { resource: "watchers", limit: MAX_WATCH_SOCKETS_PER_SESSION },
      });
    }
    // Accepted, tagged and attached synchronously (agents#321): no await until the socket is whole.
    this.hub.prepare(harness);
    const pair = new WebSocketPair();
    const client = pair[0];
    const server = pair[1];
    this.host.ctx.acceptWebSocket(server, watchTags(target));
    // `x-watch-resume` marks the front worker's SSE relay: `new`, or the id to resume after.
    const resume = request.headers.get(WATCH_HEADERS.resume);
    // `x-watch-format: sse`: a relay that passes the stream through, written as SSE here (watch-hub.ts).
    const relay = resume === null ? undefined : { resume: parseStreamId(resume), sse: request.headers.get(WATCH_HEADERS.format) === "sse" };
    const commandsKeyHash = target.kind === "lane" && relay === undefined ? (request.headers.get(WATCH_HEADERS.commands) ?? undefined) : undefined;
    // A browser token's expiry (ms): nothing is sent to the socket, nor taken from it, after it.
    const tokenExpires = Number(request.headers.get(WATCH_HEADERS.tokenExpires) ?? Number.NaN);
    const tokenExpiresAt = Number.isSafeInteger(tokenExpires) && tokenExpires > 0 ? tokenExpires : undefined;
    this.hub.join(server, target, keyId, harness, { batch: request.headers.get(WATCH_HEADERS.batch) === "true", ...(relay && { relay }), commandsKeyHash, tokenExpiresAt });
    const refusal = await this.registerWatch(keyId);
    if (refusal) {
      this.hub.forget(server);
      close(server, WATCH_CLOSE.policy, refusal.message);
      return errorResponse(refusal);
    }
    return new Response(null, { status: 101, webSocket: client });
  }

  /**
   * Revocation reaches open sockets (D17 "revocation is immediate"): the TenantObject calls this
   * for every session where the key registered a watch. Cheap: no session or harness is opened.
   */
  async closeWatchesOfKey(keyId: string): Promise<number> {
    return this.hub.closeKey(keyId);
  }

  /**
   * Registers the accepted socket's key with the TenantObject, which refuses a key revoked by now.
   * Registering after the accept closes the race with a concurrent revocation: a revocation
   * ordered before the registration is seen by it (refused here); one ordered after it finds the
   * registration and closes the already accepted socket (closeWatchesOfKey). Awaited, so a socket
   * the tenant does not know of is never handed out; a failed call refuses the upgrade (503).
   */
  private async registerWatch(keyId: string): Promise<ApiError | undefined> {
    const { session, storage } = this.host.open();
    try {
      const { active } = await this.host.env.TENANTS.getByName(storage.tenantId).registerWatch(keyId, session.metadata.id);
      return active ? undefined : { code: "Unauthenticated", message: "The API key was revoked" };
    } catch {
      return { code: "Overloaded", message: "The watch could not be registered; retry" };
    }
  }

  /**
   * Client messages: `{"type":"resnapshot"}` and `{"type":"ack","bytes":n}` ("ping" is answered by
   * the runtime). Every message but an acknowledgement that moves the window on (watch-flow.ts)
   * counts against the socket's rate before anything else is done: only a text short enough for an
   * acknowledgement is read for that first, so a malformed, oversized or binary message still counts.
   */
  async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const ack = acknowledgedBytes(message);
    if (!this.hub.admit(ws, ack)) return;
    if (ack !== undefined) return this.hub.acknowledge(ws, ack);
    if (typeof message !== "string") return this.refuse(ws, WATCH_CLOSE.binary, "Binary messages are not supported");
    if (message === "ping") return ws.send("pong");
    // Characters first (a UTF-16 unit is at least one byte); the bytes only where they may exceed.
    if (message.length > MAX_WATCH_COMMAND_BYTES || (message.length * 3 > MAX_WATCH_COMMAND_BYTES && utf8Length(message) > MAX_WATCH_COMMAND_BYTES)) {
      return this.refuse(ws, WATCH_CLOSE.policy, "Message too large");
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(message);
    } catch {
      return this.refuse(ws, WATCH_CLOSE.policy, "Messages are JSON");
    }
    const commandId = commandIdOf(parsed);
    if (commandId !== undefined) return this.command(ws, commandId, parsed);
    if (message.length > MAX_WATCH_CLIENT_MESSAGE_CHARS) return this.refuse(ws, WATCH_CLOSE.policy, "Message too large");
    if (!v.is(WatchClientMessageSchema, parsed)) {
      return this.refuse(ws, WATCH_CLOSE.policy, 'Unknown message; expected {"type":"resnapshot"} or {"type":"ack","bytes":n}');
    }
    if (parsed.type === "ack") return this.hub.acknowledge(ws, parsed.bytes);
    let harness: AgentHarness;
    try {
      harness = await this.host.harness();
    } catch (error) {
      return this.refuse(ws, WATCH_CLOSE.internal, expectedError(error)?.message ?? "The session is unavailable");
    }
    this.hub.resnapshot(ws, harness);
  }

  /** A command frame, run after the socket's earlier commands (`commandChains`). */
  private command(ws: WebSocket, id: string, parsed: unknown): Promise<void> {
    const next = (this.commandChains.get(ws) ?? Promise.resolve()).then(() => this.runCommand(ws, id, parsed));
    this.commandChains.set(ws, next);
    return next;
  }

  /**
   * A command frame (`prompt`, `queue`, `abort` with an `id`): on a lane socket that may send
   * commands, run (watch/socket-commands.ts); otherwise, or malformed, a `reply` with the refusal.
   */
  private async runCommand(ws: WebSocket, id: string, parsed: unknown): Promise<void> {
    const commander = this.hub.commander(ws);
    if (!commander) return this.refuse(ws, WATCH_CLOSE.internal, "Unknown watch state");
    const refuse = (error: ApiError): void => this.hub.reply(ws, errorReply(id, error));
    if (commander.target.kind !== "lane") return refuse({ code: "ValidationFailed", message: "Commands are sent on a lane's watch socket" });
    if (commander.commandsKeyHash === undefined) return refuse({ code: "TokenScope", message: "This socket's browser token lacks the prompt scope", details: { scope: "prompt" } });
    const checked = v.safeParse(WatchCommandSchema, parsed);
    if (!checked.success) {
      // In the words of the REST twin's 400 (worker/validate.ts): the frame's fields are its body's.
      const issues = checked.issues.slice(0, 10).map((issue) => describeIssue(issue, "body"));
      return refuse({ code: "ValidationFailed", message: issues[0] ?? "body: invalid", details: { issues } });
    }
    try {
      // A reply to a socket that closed meanwhile is dropped: the command's effect stands, and a repeat of its id answers it.
      await this.commands.run(ws, commander.target.lane, commander.commandsKeyHash, checked.output, (socket, reply) => this.hub.reply(socket, reply));
    } catch (error) {
      // A transient platform failure is 503 Overloaded, as its REST twin answers it; only a bug is Internal.
      refuse(expectedError(error) ?? platformFailure(error) ?? { code: "Internal", message: "The command failed; its id may be sent again" });
    }
  }

  private refuse(ws: WebSocket, code: number, reason: string): void {
    this.hub.forget(ws);
    close(ws, code, reason);
  }

  async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    this.hub.forget(ws);
    // Complete the closing handshake (clients otherwise see 1006); reserved codes have no peer.
    if (code !== 1005 && code !== 1006 && code !== 1015) close(ws, code, reason);
  }

  async webSocketError(ws: WebSocket): Promise<void> {
    this.hub.forget(ws);
  }
}

/** The bytes a message acknowledges when it is a well-formed `{"type":"ack","bytes":n}`, else undefined. */
function acknowledgedBytes(message: string | ArrayBuffer): number | undefined {
  if (typeof message !== "string" || message.length > MAX_WATCH_CLIENT_MESSAGE_CHARS) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    return undefined;
  }
  return v.is(WatchClientMessageSchema, parsed) && parsed.type === "ack" ? parsed.bytes : undefined;
}

/** The id of a frame that is a command (`prompt`, `queue` or `abort` with a string `id`), else undefined. */
function commandIdOf(parsed: unknown): string | undefined {
  if (typeof parsed !== "object" || parsed === null || !("type" in parsed) || !("id" in parsed)) return undefined;
  const { type, id } = parsed;
  return (type === "prompt" || type === "queue" || type === "abort") && typeof id === "string" && v.is(WatchCommandIdSchema, id) ? id : undefined;
}

function watchTarget(headers: Headers): WatchTarget | undefined {
  const kind = headers.get(WATCH_HEADERS.kind);
  if (kind === "session") return { kind: "session" };
  const lane = headers.get(WATCH_HEADERS.lane);
  if (kind === "lane" && v.is(IdSchema, lane)) return { kind: "lane", lane };
  return undefined;
}

function errorResponse(error: ApiError): Response {
  return Response.json({ error }, { status: ERROR_STATUS[error.code] });
}
