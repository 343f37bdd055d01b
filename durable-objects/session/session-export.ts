import { readResult } from "../../harness/runtime/operation-codec.ts";
import { laneConfig } from "../../harness/session/builtin-addresses.ts";
import { EXPORT_FORMAT, EXPORT_VERSION, type SessionLine } from "../../schema/data-export.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { LaneConfiguration } from "../../schema/lane.ts";
import type { Wire } from "../../schema/wire.ts";
import { toolDefinitionsPrefix } from "../../tools/definitions.ts";
import { asResult, parseWire } from "../rpc/rpc-errors.ts";
import { exportPage, type ExportCursor, type ExportPage } from "./storage/export-pages.ts";
import type { SessionHost } from "./session-host.ts";
import { toolInputOf } from "./tool-definition-input.ts";

/** What this module reaches of the host (session-host.ts). */
type ExportHost = Pick<SessionHost, "ctx" | "harness" | "listBranches" | "openStorage" | "session" | "summary">;

/**
 * `GET …/export` (docs/data.md): the header and the high-water mark in one call, then pages the
 * front worker streams one after another. Only reads; every answer is bounded (export-pages.ts).
 */
export class SessionExport {
  constructor(private readonly host: ExportHost) {}

  async exportBegin(): Promise<Wire<RpcResult<{ header: SessionLine; highWater: number }>>> {
    return asResult(async () => {
      const harness = await this.host.harness();
      // From here on synchronous: the mark and the header are one moment of the session.
      const highWater = this.host.openStorage().nextSeq - 1;
      const summary = this.host.summary();
      const session = this.host.session();
      const tools = Object.fromEntries(session.scanValues(toolDefinitionsPrefix()).map((stored) => [stored.address.key, toolInputOf(stored.value)]));
      const lanes = session.scanValues(laneConfig<LaneConfiguration>("")).map((stored) => ({ name: stored.address.key, ...stored.value }));
      const header: SessionLine = {
        type: "session",
        format: EXPORT_FORMAT,
        version: EXPORT_VERSION,
        id: summary.id,
        name: summary.name,
        createdAt: summary.createdAt,
        metadata: summary.metadata,
        ...(summary.agent !== undefined && { agent: summary.agent }),
        settings: harness.settings(),
        resources: harness.resources(),
        tools,
        branches: Object.fromEntries(this.host.listBranches().map((branch) => [branch.name, branch.tipId])),
        lanes,
      };
      return { header, highWater };
    });
  }

  async exportPage(highWater: number, cursor: Wire<ExportCursor>): Promise<Wire<RpcResult<ExportPage>>> {
    return asResult(() => {
      const storage = this.host.openStorage();
      return exportPage(this.host.ctx.storage, highWater, parseWire(cursor), (operationId) => readResult(storage, operationId));
    });
  }
}
