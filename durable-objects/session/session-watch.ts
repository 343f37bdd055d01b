import * as v from "valibot";
import type { AgentHarness } from "../../harness/runtime/harness.ts";
import { IdSchema } from "../../schema/api.ts";
import { ERROR_STATUS, type ApiError, type RpcResult } from "../../schema/errors.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { MAX_WATCH_CLIENT_MESSAGE_CHARS, WatchClientMessageSchema } from "../../schema/watch.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult, expectedError, RpcError } from "../rpc-errors.ts";
import { close, readAttachment, WatchHub, watchTags, type WatchAttachment, type WatchTarget } from "../watch-hub.ts";
import { SessionLaneRpc } from "./session-lane-rpc.ts";

/**
 * Headers the front worker sets on the upgrade it forwards after authenticating it (D17); it
 * overwrites whatever the client sent under these names, so the object may trust them.
 */
export const WATCH_HEADERS = { kind: "x-watch-kind", lane: "x-watch-lane", keyId: "x-watch-key-id" } as const;

/**
 * Lane and session watch streams over hibernatable WebSockets (spec/API.md "Watch protocol",
 * ARCHITECTURE D13, D14.13): the upgrade forwarded by the front worker, client messages, close and
 * error. The fan-out and the event counter live in watch-hub.ts.
 */
export abstract class SessionWatch extends SessionLaneRpc {
  private readonly hub: WatchHub;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // Cheap, no storage: answered by the runtime without waking the object.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    this.hub = new WatchHub(ctx);
  }

  protected override harnessCreated(harness: AgentHarness): void {
    this.hub.attach(harness);
  }

  /**
   * A lane snapshot with its seq in the watch protocol's per-session event counter (for
   * `GET …/lanes/{lane}/snapshot`): the events after it carry larger seqs.
   */
  async laneSnapshotAt(name: string): Promise<Wire<RpcResult<{ seq: number; snapshot: LaneSnapshot }>>> {
    return asResult(async () => {
      const harness = await this.harness();
      const lane = harness.getLane(name);
      if (!lane) throw new RpcError({ code: "UnknownLane", message: `Lane "${name}" does not exist` });
      return this.hub.snapshot(harness, (m) => lane.captureSnapshot(m));
    });
  }

  /** Only WebSocket upgrades forwarded by the front worker come here. */
  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return errorResponse({ code: "UpgradeRequired", message: "Expected a WebSocket upgrade" });
    }
    const target = watchTarget(request.headers);
    if (!target) return errorResponse({ code: "ValidationFailed", message: "Invalid watch target" });
    let harness: AgentHarness;
    try {
      harness = await this.harness();
    } catch (error) {
      const tagged = expectedError(error);
      if (tagged) return errorResponse(tagged);
      throw error;
    }
    if (target.kind === "lane" && !harness.getLane(target.lane)) {
      return errorResponse({ code: "UnknownLane", message: `Lane "${target.lane}" does not exist` });
    }
    // Accepted, tagged and attached synchronously before the 101 (agents#321): no await from here.
    this.hub.prepare(harness);
    const pair = new WebSocketPair();
    const client = pair[0];
    const server = pair[1];
    this.ctx.acceptWebSocket(server, watchTags(target));
    const attachment: WatchAttachment = { v: 1, target, keyId: request.headers.get(WATCH_HEADERS.keyId) ?? "", ready: false };
    server.serializeAttachment(attachment);
    this.hub.join(server, target, harness);
    return new Response(null, { status: 101, webSocket: client });
  }

  /** `{"type":"resnapshot"}` is the only client message ("ping" is answered by the runtime). */
  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    if (typeof message !== "string") return close(ws, 1003, "Binary messages are not supported");
    if (message === "ping") return ws.send("pong");
    if (message.length > MAX_WATCH_CLIENT_MESSAGE_CHARS) return close(ws, 1008, "Message too large");
    let parsed: unknown;
    try {
      parsed = JSON.parse(message);
    } catch {
      return close(ws, 1008, "Messages are JSON");
    }
    if (!v.is(WatchClientMessageSchema, parsed)) return close(ws, 1008, 'Unknown message; expected {"type":"resnapshot"}');
    if (!readAttachment(ws)?.ready) return;
    let harness: AgentHarness;
    try {
      harness = await this.harness();
    } catch (error) {
      this.hub.forget(ws);
      return close(ws, 1011, expectedError(error)?.message ?? "The session is unavailable");
    }
    this.hub.resnapshot(ws, harness);
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    this.hub.forget(ws);
    // Complete the closing handshake (clients otherwise see 1006); reserved codes have no peer.
    if (code !== 1005 && code !== 1006 && code !== 1015) close(ws, code, reason);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    this.hub.forget(ws);
  }
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
