import { MAX_TENANT_MCP_SERVERS, MAX_TENANT_TOOL_NAMES, MAX_TENANT_TOOL_REVISIONS, MAX_TENANT_TOOLS, TENANT_TOOL_PAGE_BYTES_MAX } from "../../schema/tenant-tools.ts";
import type { StoredToolDefinition } from "../../tools/definitions.ts";
import type { StoredMcpServer } from "../../tools/mcp-definitions.ts";
import { utf8Length } from "../../schema/utf8.ts";
import { RpcError } from "../rpc/rpc-errors.ts";
import { boundedPage, decodeTimeCursor, encodeTimeCursor, type Page } from "./time-cursor.ts";

/** `tool`: tenant tools (StoredToolDefinition); `mcp`: tenant MCP servers (StoredMcpServer). */
export type RevisionKind = "tool" | "mcp";

/** One revision of a tenant tool or MCP server, with the times the API shows. */
export interface Revision<T> {
  name: string;
  revision: number;
  createdAt: number;
  updatedAt: number;
  value: T;
}

/** The JSON text of one revision (an MCP server's cached tool list included): below SQLite's 2 MB row limit. */
export const MAX_TENANT_REVISION_BYTES = 1536 * 1024;

interface KindRules {
  kind: RevisionKind;
  /** Live names one tenant may hold. */
  maxLive: number;
  /** For messages: "tenant tools", "tenant MCP servers". */
  noun: string;
  notFound: (name: string) => RpcError;
}

type NameRow = { name: string; created_at: number; latest_revision: number; deleted_at: number | null };
type RevisionRow = { name: string; name_created_at: number; revision: number; revision_at: number; definition: string };

const REVISION_COLUMNS = "t.name, t.created_at AS name_created_at, r.revision, r.created_at AS revision_at, r.definition";

/**
 * Tenant tools and MCP servers as immutable revisions (spec/API.md "Tenant tools and MCP
 * servers"). One row per name and one per revision; a revision stays when its name is deleted, so
 * an agent version that pinned it still yields copies. Each method is one synchronous SQL turn:
 * whatever a write depends on is read in the same turn, bounds included.
 */
export class TenantRevisions<T> {
  constructor(
    private readonly sql: SqlStorage,
    private readonly rules: KindRules,
  ) {}

  /** The latest revision of a live name. */
  latest(name: string): Revision<T> | undefined {
    const row = this.sql
      .exec<RevisionRow>(
        `SELECT ${REVISION_COLUMNS} FROM tenant_tools t JOIN tenant_tool_revisions r ON r.kind = t.kind AND r.name = t.name AND r.revision = t.latest_revision
         WHERE t.kind = ? AND t.name = ? AND t.deleted_at IS NULL`,
        this.rules.kind,
        name,
      )
      .toArray()[0];
    return row && revisionOf<T>(row);
  }

  /** The latest revision of a live name, or its 404. */
  require(name: string): Revision<T> {
    const latest = this.latest(name);
    if (!latest) throw this.rules.notFound(name);
    return latest;
  }

  /** One revision's stored value, also of a deleted name (an agent version may have pinned it). */
  revision(name: string, revision: number): T | undefined {
    const row = this.sql.exec<{ definition: string }>("SELECT definition FROM tenant_tool_revisions WHERE kind = ? AND name = ? AND revision = ?", this.rules.kind, name, revision).toArray()[0];
    return row && JSON.parse(row.definition);
  }

  /** The latest revision of each live name, in creation order; a page ends before TENANT_TOOL_PAGE_BYTES_MAX bytes. */
  list(limit: number, cursor: string | undefined): Page<Revision<T>> {
    const after = decodeTimeCursor(this.rules.kind, cursor);
    const rows = this.sql.exec<RevisionRow>(
      `SELECT ${REVISION_COLUMNS} FROM tenant_tools t JOIN tenant_tool_revisions r ON r.kind = t.kind AND r.name = t.name AND r.revision = t.latest_revision
       WHERE t.kind = ? AND t.deleted_at IS NULL AND (t.created_at, t.name) > (?, ?) ORDER BY t.created_at, t.name LIMIT ?`,
      this.rules.kind,
      after.at,
      after.id,
      limit + 1,
    );
    const position = (row: RevisionRow) => encodeTimeCursor(this.rules.kind, row.name_created_at, row.name);
    return boundedPage(rows, { limit, budget: TENANT_TOOL_PAGE_BYTES_MAX }, (row) => utf8Length(row.definition), (row) => revisionOf<T>(row), position);
  }

  /**
   * The next revision of `name`, made by `make` from the latest live one (undefined when the name
   * is new or was deleted: then it is created again, its revision numbers continuing). Bounds are
   * checked before anything is written.
   */
  put(name: string, make: (latest: T | undefined) => T, now: number): { stored: Revision<T>; created: boolean } {
    const row = this.row(name);
    const live = row !== undefined && row.deleted_at === null;
    const value = make(live ? this.latest(name)?.value : undefined);
    const text = boundedJson(value, name);
    if (!live) this.assertRoom(row === undefined);
    const revision = (row?.latest_revision ?? 0) + 1;
    if (revision > MAX_TENANT_TOOL_REVISIONS) {
      throw new RpcError({
        code: "LimitExceeded",
        message: `${name} may have at most ${MAX_TENANT_TOOL_REVISIONS} revisions; use a new name for further changes`,
        details: { resource: `${resourceOf(this.rules.kind)}_revisions`, limit: MAX_TENANT_TOOL_REVISIONS, name },
      });
    }
    const createdAt = live ? row.created_at : now;
    this.sql.exec(
      `INSERT INTO tenant_tools (kind, name, created_at, latest_revision, deleted_at) VALUES (?, ?, ?, ?, NULL)
       ON CONFLICT (kind, name) DO UPDATE SET created_at = excluded.created_at, latest_revision = excluded.latest_revision, deleted_at = NULL`,
      this.rules.kind,
      name,
      createdAt,
      revision,
    );
    this.sql.exec("INSERT INTO tenant_tool_revisions (kind, name, revision, created_at, definition) VALUES (?, ?, ?, ?, ?)", this.rules.kind, name, revision, now, text);
    return { stored: { name, revision, createdAt, updatedAt: now, value }, created: !live };
  }

  /**
   * Rewrites the latest revision in place, when it is still `revision` of a live name (a status
   * that changes nothing a session may call, such as when discovery last ran); false otherwise.
   */
  restate(name: string, revision: number, value: T): boolean {
    const row = this.row(name);
    if (!row || row.deleted_at !== null || row.latest_revision !== revision) return false;
    this.sql.exec("UPDATE tenant_tool_revisions SET definition = ? WHERE kind = ? AND name = ? AND revision = ?", boundedJson(value, name), this.rules.kind, name, revision);
    return true;
  }

  /** Deletes a live name, refused (409 ToolInUse) while the latest version of a live agent names it. */
  delete(name: string, now: number): void {
    const row = this.row(name);
    if (!row || row.deleted_at !== null) throw this.rules.notFound(name);
    const agents = this.sql.exec<{ agent_id: string }>("SELECT agent_id FROM agent_tenant_refs WHERE kind = ? AND name = ? ORDER BY agent_id", this.rules.kind, name).toArray().map((ref) => ref.agent_id);
    if (agents.length > 0) {
      throw new RpcError({
        code: "ToolInUse",
        message: `${name} is named by the latest version of agents ${agents.join(", ")}; PATCH them not to name it (or delete them) first`,
        details: { agents },
      });
    }
    this.sql.exec("UPDATE tenant_tools SET deleted_at = ? WHERE kind = ? AND name = ?", now, this.rules.kind, name);
  }

  /**
   * Refuses (422 LimitExceeded) a name that would pass the live bound, or a `newName` (never
   * created before) beyond MAX_TENANT_TOOL_NAMES, which bounds what deleted names keep.
   */
  assertRoom(newName: boolean): void {
    const { live, all } = this.sql
      .exec<{ live: number; all: number }>("SELECT COUNT(*) FILTER (WHERE deleted_at IS NULL) AS live, COUNT(*) AS \"all\" FROM tenant_tools WHERE kind = ?", this.rules.kind)
      .one();
    if (live >= this.rules.maxLive) {
      throw new RpcError({ code: "LimitExceeded", message: `A tenant may hold at most ${this.rules.maxLive} ${this.rules.noun}; delete one first`, details: { resource: resourceOf(this.rules.kind), limit: this.rules.maxLive } });
    }
    if (newName && all >= MAX_TENANT_TOOL_NAMES) {
      throw new RpcError({
        code: "LimitExceeded",
        message: `A tenant may create at most ${MAX_TENANT_TOOL_NAMES} ${this.rules.noun} names in all (deleted ones keep their revisions); reuse a deleted name`,
        details: { resource: `${resourceOf(this.rules.kind)}_created`, limit: MAX_TENANT_TOOL_NAMES },
      });
    }
  }

  /** Whether the name was ever created (live or deleted). */
  existed(name: string): boolean {
    return this.row(name) !== undefined;
  }

  private row(name: string): NameRow | undefined {
    return this.sql.exec<NameRow>("SELECT name, created_at, latest_revision, deleted_at FROM tenant_tools WHERE kind = ? AND name = ?", this.rules.kind, name).toArray()[0];
  }
}

function resourceOf(kind: RevisionKind): string {
  return kind === "tool" ? "tenant_tools" : "tenant_mcp_servers";
}

function boundedJson(value: unknown, name: string): string {
  const text = JSON.stringify(value);
  const bytes = utf8Length(text);
  if (bytes > MAX_TENANT_REVISION_BYTES) {
    throw new RpcError({
      code: "LimitExceeded",
      message: `A revision of ${name} is at most ${MAX_TENANT_REVISION_BYTES} bytes of JSON; this one is ${bytes}`,
      details: { resource: "tenant_revision_bytes", limit: MAX_TENANT_REVISION_BYTES, bytes },
    });
  }
  return text;
}

function revisionOf<T>(row: RevisionRow): Revision<T> {
  return { name: row.name, revision: row.revision, createdAt: row.name_created_at, updatedAt: row.revision_at, value: JSON.parse(row.definition) };
}

/** The tenant's tools (`PUT /v1/tools/{name}`): stored definitions, an http tool's secret sealed under tenantToolSecretContext. */
export function tenantToolStore(sql: SqlStorage): TenantRevisions<StoredToolDefinition> {
  return new TenantRevisions(sql, {
    kind: "tool",
    maxLive: MAX_TENANT_TOOLS,
    noun: "tenant tools",
    notFound: (name) => new RpcError({ code: "ToolNotFound", message: `No tenant tool ${name}`, details: { tool: name } }),
  });
}

/** The tenant's MCP servers (`PUT /v1/mcp-servers/{name}`): headers sealed under tenantMcpCredentialContext. */
export function tenantMcpStore(sql: SqlStorage): TenantRevisions<StoredMcpServer> {
  return new TenantRevisions(sql, {
    kind: "mcp",
    maxLive: MAX_TENANT_MCP_SERVERS,
    noun: "tenant MCP servers",
    notFound: (name) => new RpcError({ code: "McpServerNotFound", message: `No tenant MCP server ${name}`, details: { server: name } }),
  });
}
