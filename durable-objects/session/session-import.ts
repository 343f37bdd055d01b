import { resourcesAddress, settingsAddress } from "../../harness/runtime/settings.ts";
import { laneConfig, sessionMetadata, sessionName } from "../../harness/session/builtin-addresses.ts";
import { IMPORT_ABANDON_MS, type SessionLine } from "../../schema/data-export.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { CreatedSession } from "../../schema/session.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult, RpcError } from "../rpc/rpc-errors.ts";
import { assertCanDefer } from "./deferred-check.ts";
import { assertKnownConfiguration, laneConfigCatalog } from "./lane-config-check.ts";
import type { ForkValue } from "./storage/fork-source.ts";
import { finishForkImport } from "./storage/fork-target.ts";
import { clearImportRows, NO_PROGRESS, parseLine, readImportHeader, readImportState, rollbackTo, stageLine, writeImportState, type ImportState } from "./storage/import-staging.ts";
import { SqlSessionStorage } from "./storage/sql-session-storage.ts";
import { storedId } from "./storage/stored-ids.ts";
import type { Write } from "../../harness/session/storage.ts";
import type { SessionLifecycle } from "./session-lifecycle.ts";
import type { SessionHost } from "./session-host.ts";

/** The object's KV key of the import that made its session (a repeated commit finds it). */
const COMMITTED_KEY = "committedImport";

/** What this module reaches of the host (session-host.ts). */
type ImportHost = Pick<SessionHost, "adopt" | "ctx" | "env" | "models" | "schema">;

export interface ImportInit {
  tenantId: string;
  sessionId: string;
  importId: string;
  /** As for creation: a repeat of the creating request finds what it began (or the session it made). */
  creationToken?: string;
}

export type ImportBegun = { state: "staged"; importId: string; expiresAt: number } | { state: "exists"; session: CreatedSession };

/**
 * Session imports (docs/data.md), staged in the object of the session they make: begun, written
 * a part at a time (each part whole or not at all: a failed one is rolled back to where it
 * began), committed in one last synchronous step that makes the session exist. An import never
 * committed is deleted by the object's alarm 24 h after it began.
 */
export class SessionImport {
  constructor(
    private readonly host: ImportHost,
    private readonly lifecycle: SessionLifecycle,
  ) {}

  async importBegin(init: ImportInit): Promise<Wire<RpcResult<ImportBegun>>> {
    return asResult(async () => {
      const staged = this.staged();
      if (staged) {
        if (init.creationToken !== undefined && staged.creationToken === init.creationToken) return { state: "staged", importId: staged.importId, expiresAt: staged.expiresAt };
        throw new RpcError({ code: "SessionExists", message: `Session ${init.sessionId} is being imported` });
      }
      const repeated = this.lifecycle.repeatedCreation(init);
      if (repeated) return { state: "exists", session: await repeated };
      this.host.schema.create();
      const expiresAt = Date.now() + IMPORT_ABANDON_MS;
      writeImportState(this.host.ctx.storage, { ...init, expiresAt, partsDone: 0, progress: NO_PROGRESS });
      await this.host.ctx.storage.setAlarm(expiresAt);
      return { state: "staged", importId: init.importId, expiresAt };
    });
  }

  /**
   * Opens part `part`: `repeated` when it was written whole already (a retry: nothing to do).
   * A part left open by an interrupted attempt is rolled back and begun again.
   */
  async importPartBegin(importId: string, part: number): Promise<Wire<RpcResult<{ repeated: boolean; attempt: string }>>> {
    return asResult(() => {
      const state = this.current(importId);
      if (part <= state.partsDone) return { repeated: true, attempt: "" };
      if (part !== state.partsDone + 1) {
        throw new RpcError({ code: "ImportPartOutOfOrder", message: `Part ${part} cannot come before part ${state.partsDone + 1}`, details: { expected: state.partsDone + 1 } });
      }
      if (state.open) rollbackTo(this.host.ctx.storage, state.open.before);
      const progress = state.open?.before ?? state.progress;
      const attempt = crypto.randomUUID();
      writeImportState(this.host.ctx.storage, { ...state, progress, open: { part, attempt, before: progress } });
      return { repeated: false, attempt };
    });
  }

  /** Stages a batch of lines of the open part (the front worker splits the stream, this object checks each line). */
  async importLines(importId: string, attempt: string, lines: string[]): Promise<Wire<RpcResult<{ lines: number }>>> {
    return asResult(() => {
      const state = this.current(importId);
      if (state.open?.attempt !== attempt) throw new RpcError({ code: "ImportPartOutOfOrder", message: "Another attempt of this part took over", details: { expected: state.partsDone + 1 } });
      const progress = structuredClone(state.progress);
      try {
        for (const text of lines) {
          progress.lines++;
          stageLine(this.host.ctx.storage, progress, parseLine(text, progress.lines), progress.lines);
        }
      } finally {
        writeImportState(this.host.ctx.storage, { ...state, progress });
      }
      return { lines: lines.length };
    });
  }

  /** Ends the open part: kept whole from now on. */
  async importPartEnd(importId: string, attempt: string): Promise<Wire<RpcResult<{ part: number; lines: number }>>> {
    return asResult(() => {
      const state = this.current(importId);
      if (!state.open || state.open.attempt !== attempt) throw new RpcError({ code: "ImportPartOutOfOrder", message: "Another attempt of this part took over", details: { expected: state.partsDone + 1 } });
      const { open, ...rest } = state;
      const lines = state.progress.lines - open.before.lines;
      // An empty body is a broken upload, not a part: ended, the real part sent again would answer
      // `repeated` and write nothing. Refused, the caller undoes the attempt and the part stays open.
      if (lines === 0) throw new RpcError({ code: "InvalidImport", message: `Part ${open.part} holds no line: a part carries at least one line of the export`, details: { reason: "empty_part" } });
      writeImportState(this.host.ctx.storage, { ...rest, partsDone: open.part });
      return { part: open.part, lines };
    });
  }

  /** Undoes the open part after a failure, so that it can be sent again. */
  async importPartAbort(importId: string, attempt: string): Promise<Wire<RpcResult<{ aborted: boolean }>>> {
    return asResult(() => {
      const state = this.staged();
      if (!state || state.importId !== importId || state.open?.attempt !== attempt) return { aborted: false };
      rollbackTo(this.host.ctx.storage, state.open.before);
      const { open, ...rest } = state;
      writeImportState(this.host.ctx.storage, { ...rest, progress: open.before });
      return { aborted: true };
    });
  }

  /** Deletes a staged import (a one-request import that failed, or the alarm after 24 h). */
  async importDiscard(importId: string): Promise<Wire<RpcResult<{ discarded: boolean }>>> {
    return asResult(async () => {
      const state = this.staged();
      if (!state || state.importId !== importId) return { discarded: false };
      await this.discard();
      return { discarded: true };
    });
  }

  /**
   * Checks what only the whole stream can tell (the end line, tips and lanes on entries, models
   * the tenant may use, tools), seals new secrets for http tools, then makes the session exist in
   * one synchronous step.
   */
  async importCommit(importId: string): Promise<Wire<RpcResult<CreatedSession>>> {
    return asResult(async () => {
      // A repeat of a commit that succeeded (its answer lost): the session it made, without secrets.
      if (!this.staged() && this.host.ctx.storage.kv.get<string>(COMMITTED_KEY) === importId) return this.lifecycle.sessionView();
      const state = this.current(importId);
      if (state.open) throw new RpcError({ code: "ImportPartOutOfOrder", message: `Part ${state.open.part} is still being written`, details: { expected: state.open.part } });
      const header = readImportHeader(this.host.ctx.storage);
      if (!header || !state.progress.ended) throw new RpcError({ code: "InvalidImport", message: "The stream is incomplete: it needs a session header first and an end line last", details: { reason: "incomplete" } });
      this.assertTips(header);
      await this.assertLanes(state.tenantId, header);
      const tools = await this.lifecycle.initialTools(state.sessionId, header.tools);
      // Synchronous from here: the state read again, the session made, the import's rows removed.
      const now = this.current(importId);
      if (now.open) throw new RpcError({ code: "ImportPartOutOfOrder", message: `Part ${now.open.part} began while the import was committing`, details: { expected: now.open.part } });
      // Each value its own seq after the entries (chunks are keyed by seq); tips and idle lane states follow.
      let seq = now.progress.maxSeq;
      const next = (): number => ++seq;
      const session = this.sessionValues(header, tools.writes, next);
      const branches = this.branches(header, next);
      const progress = { maxSeq: seq, messages: now.progress.messages };
      const storage = this.host.ctx.storage;
      storage.transactionSync(() => {
        clearImportRows(storage);
        finishForkImport(storage, progress, { sourceSessionId: null, session, branches }, { sessionId: state.sessionId, tenantId: state.tenantId, createdAt: Date.now() });
      });
      this.lifecycle.rememberCreation(state.creationToken);
      storage.kv.put(COMMITTED_KEY, importId);
      await storage.deleteAlarm();
      const opened = SqlSessionStorage.open(storage);
      if (!opened) throw new Error("Invariant: a committed import holds a session");
      this.host.adopt(opened);
      const view = await this.lifecycle.sessionView();
      return Object.keys(tools.secrets).length > 0 ? { ...view, toolSecrets: tools.secrets } : view;
    });
  }

  /** The alarm of an object that stages an import: deletes it once abandoned. True when this object stages one. */
  async alarm(): Promise<boolean> {
    const state = this.staged();
    if (!state) return false;
    if (Date.now() >= state.expiresAt) await this.discard();
    else await this.host.ctx.storage.setAlarm(state.expiresAt);
    return true;
  }

  private async discard(): Promise<void> {
    await this.host.ctx.storage.deleteAlarm();
    await this.host.ctx.storage.deleteAll();
    this.host.schema.forget();
  }

  /** The staged import, if this object holds one (and no session). */
  private staged(): ImportState | undefined {
    return this.host.schema.exists ? readImportState(this.host.ctx.storage) : undefined;
  }

  private current(importId: string): ImportState {
    const state = this.staged();
    if (!state || state.importId !== importId) throw new RpcError({ code: "ImportNotFound", message: "Import not found" });
    return state;
  }

  private assertTips(header: SessionLine): void {
    for (const [name, tipId] of Object.entries(header.branches)) {
      if (tipId !== null && this.host.ctx.storage.sql.exec("SELECT 1 FROM entries WHERE id = ?", storedId(tipId)).toArray().length === 0) {
        throw new RpcError({ code: "InvalidImport", message: `Branch "${name}" points at entry ${tipId}, which the stream does not hold`, details: { reason: "unknown_tip", branch: name } });
      }
    }
    for (const lane of header.lanes) {
      if (!Object.hasOwn(header.branches, lane.name)) throw new RpcError({ code: "InvalidImport", message: `Lane "${lane.name}" has no branch of its name`, details: { reason: "lane_without_branch", lane: lane.name } });
    }
  }

  /** As creation checks a lane and the default model: models this tenant may use now, active tools the session defines. */
  private async assertLanes(tenantId: string, header: SessionLine): Promise<void> {
    const { defaultModel } = header.settings;
    if (header.lanes.length === 0 && defaultModel === null) return;
    const tenant = await this.host.models.settings(tenantId);
    const known = new Set(Object.keys(header.tools));
    const catalog = laneConfigCatalog({ scripted: this.host.env.SCRIPTED_MODELS === "on", usableProviders: tenant.usableProviders }, () => known);
    // The session's default model too, as `settings.defaultModel` is checked at creation.
    if (defaultModel !== null) assertKnownConfiguration({ model: defaultModel }, catalog);
    for (const lane of header.lanes) assertKnownConfiguration({ model: lane.model, activeTools: lane.activeToolNames }, catalog);
    assertCanDefer(header.settings.streamOptions.deferred, header.lanes.map((lane) => ({ lane: lane.name, model: lane.model })));
  }

  private sessionValues(header: SessionLine, toolWrites: Write[], next: () => number): ForkValue[] {
    const value = (namespace: string, key: string, json: unknown): ForkValue => ({ namespace, key, seq: next(), json: JSON.stringify(json) });
    return [
      ...(header.name !== null ? [value(sessionName.namespace, sessionName.key, header.name)] : []),
      ...(Object.keys(header.metadata).length > 0 ? [value(sessionMetadata.namespace, sessionMetadata.key, header.metadata)] : []),
      value(settingsAddress.namespace, settingsAddress.key, header.settings),
      value(resourcesAddress.namespace, resourcesAddress.key, header.resources),
      ...toolWrites.flatMap((write) => (write.kind === "value" && write.op === "set" ? [value(write.namespace, write.key, write.value)] : [])),
    ];
  }

  private branches(header: SessionLine, next: () => number): { name: string; tipId: string | null; laneConfig?: ForkValue }[] {
    const lanes = new Map(header.lanes.map(({ name, ...configuration }) => [name, configuration]));
    return Object.entries(header.branches).map(([name, tipId]) => {
      const configuration = lanes.get(name);
      return { name, tipId, ...(configuration && { laneConfig: { namespace: laneConfig(name).namespace, key: name, seq: next(), json: JSON.stringify(configuration) } }) };
    });
  }
}
