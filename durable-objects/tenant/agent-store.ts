import { AGENT_PAGE_BYTES_MAX, MAX_AGENT_VERSION_BYTES, MAX_AGENT_VERSIONS, MAX_AGENTS, MAX_AGENTS_CREATED, type Agent, type AgentDefinition, type PinnedAgentDefinition } from "../../schema/agents.ts";
import { utf8Length } from "../../schema/utf8.ts";
import { RpcError } from "../rpc/rpc-errors.ts";
import { pinDefinition, recordTenantRefs } from "./agent-pins.ts";
import { boundedPage, decodeTimeCursor, encodeTimeCursor, type Page } from "./time-cursor.ts";

type AgentRow = { agent_id: string; created_at: number; latest_version: number; deleted_at: number | null };
type VersionRow = { agent_id: string; agent_created_at: number; deleted_at: number | null; version: number; version_at: number; definition: string };

/** What appending a version did: the new version, or nothing because another version came first. */
export type AppendResult = { agent: Agent } | { conflict: { latestVersion: number } };

const VERSION_COLUMNS = "a.agent_id, a.created_at AS agent_created_at, a.deleted_at, v.version, v.created_at AS version_at, v.definition";

/**
 * The tenant's agents (spec/API.md "Agents"): one row per agent and one immutable row per version,
 * the version's definition as JSON text, with the revisions of the tenant tools and MCP servers it
 * names pinned (agent-pins.ts). Bounds are checked in the writing turn: live agents per tenant,
 * versions per agent, bytes per version. Each method is one synchronous SQL turn.
 */
export class AgentStore {
  constructor(private readonly sql: SqlStorage) {}

  /** Version 1 of a new agent. An id that exists, or existed (deleted), is 409 AgentExists. */
  create(agentId: string, definition: AgentDefinition, now: number): Agent {
    const pinned = pinDefinition(this.sql, definition);
    const text = boundedJson(pinned);
    const existing = this.row(agentId);
    if (existing) {
      const deleted = existing.deleted_at !== null;
      throw new RpcError({
        code: "AgentExists",
        message: deleted ? `Agent ${agentId} was deleted; its id is not reused (its versions stay readable)` : `Agent ${agentId} already exists; PATCH /v1/agents/${agentId} makes its next version`,
        details: { agentId, deleted },
      });
    }
    const { live, all } = this.sql.exec<{ live: number; all: number }>('SELECT COUNT(*) FILTER (WHERE deleted_at IS NULL) AS live, COUNT(*) AS "all" FROM agents').one();
    if (live >= MAX_AGENTS) {
      throw new RpcError({ code: "LimitExceeded", message: `A tenant may hold at most ${MAX_AGENTS} agents; delete one first`, details: { resource: "agents", limit: MAX_AGENTS } });
    }
    if (all >= MAX_AGENTS_CREATED) {
      throw new RpcError({
        code: "LimitExceeded",
        message: `A tenant may create at most ${MAX_AGENTS_CREATED} agents in all (a deleted agent's versions stay readable); make a new version of an agent instead`,
        details: { resource: "agents_created", limit: MAX_AGENTS_CREATED },
      });
    }
    this.sql.exec("INSERT INTO agents (agent_id, created_at, latest_version) VALUES (?, ?, 1)", agentId, now);
    this.sql.exec("INSERT INTO agent_versions (agent_id, version, created_at, definition) VALUES (?, 1, ?, ?)", agentId, now, text);
    recordTenantRefs(this.sql, agentId, pinned);
    return agentView({ agent_id: agentId, agent_created_at: now, deleted_at: null, version: 1, version_at: now, definition: text });
  }

  /** The latest version of a live agent. */
  latest(agentId: string): Agent {
    const row = this.sql
      .exec<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM agents a JOIN agent_versions v ON v.agent_id = a.agent_id AND v.version = a.latest_version WHERE a.agent_id = ? AND a.deleted_at IS NULL`, agentId)
      .toArray()[0];
    if (!row) throw agentNotFound(agentId);
    return agentView(row);
  }

  /** One version, also of a deleted agent (its versions stay readable). */
  version(agentId: string, version: number): Agent {
    const row = this.sql
      .exec<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM agents a JOIN agent_versions v ON v.agent_id = a.agent_id WHERE a.agent_id = ? AND v.version = ?`, agentId, version)
      .toArray()[0];
    if (row) return agentView(row);
    if (!this.row(agentId)) throw agentNotFound(agentId);
    throw new RpcError({ code: "AgentNotFound", message: `Agent ${agentId} has no version ${version}`, details: { agentId, version } });
  }

  /** The latest version of each live agent, in creation order. */
  list(limit: number, cursor: string | undefined): Page<Agent> {
    const after = decodeTimeCursor("agent", cursor);
    const rows = this.sql.exec<VersionRow>(
      `SELECT ${VERSION_COLUMNS} FROM agents a JOIN agent_versions v ON v.agent_id = a.agent_id AND v.version = a.latest_version
       WHERE a.deleted_at IS NULL AND (a.created_at, a.agent_id) > (?, ?) ORDER BY a.created_at, a.agent_id LIMIT ?`,
      after.at,
      after.id,
      limit + 1,
    );
    return versionPage(rows, limit, (row) => encodeTimeCursor("agent", row.agent_created_at, row.agent_id));
  }

  /** Every version of an agent (deleted or not), oldest first. */
  versions(agentId: string, limit: number, cursor: string | undefined): Page<Agent> {
    const after = decodeTimeCursor("agent-version", cursor);
    if (!this.row(agentId)) throw agentNotFound(agentId);
    const rows = this.sql.exec<VersionRow>(
      `SELECT ${VERSION_COLUMNS} FROM agents a JOIN agent_versions v ON v.agent_id = a.agent_id
       WHERE a.agent_id = ? AND v.version > ? ORDER BY v.version LIMIT ?`,
      agentId,
      after.at,
      limit + 1,
    );
    return versionPage(rows, limit, (row) => encodeTimeCursor("agent-version", row.version, row.agent_id));
  }

  /**
   * The next version, made from `basedOn`: when another version was made since (the caller merged
   * its patch over an older one), nothing is written and the caller merges again.
   */
  append(agentId: string, basedOn: number, definition: AgentDefinition, now: number): AppendResult {
    const pinned = pinDefinition(this.sql, definition);
    const text = boundedJson(pinned);
    const row = this.row(agentId);
    if (!row || row.deleted_at !== null) throw agentNotFound(agentId);
    if (row.latest_version !== basedOn) return { conflict: { latestVersion: row.latest_version } };
    if (row.latest_version >= MAX_AGENT_VERSIONS) {
      throw new RpcError({
        code: "LimitExceeded",
        message: `An agent may have at most ${MAX_AGENT_VERSIONS} versions; create a new agent for further changes`,
        details: { resource: "agent_versions", limit: MAX_AGENT_VERSIONS, agentId },
      });
    }
    const version = row.latest_version + 1;
    this.sql.exec("INSERT INTO agent_versions (agent_id, version, created_at, definition) VALUES (?, ?, ?, ?)", agentId, version, now, text);
    this.sql.exec("UPDATE agents SET latest_version = ? WHERE agent_id = ?", version, agentId);
    recordTenantRefs(this.sql, agentId, pinned);
    return { agent: agentView({ agent_id: agentId, agent_created_at: row.created_at, deleted_at: null, version, version_at: now, definition: text }) };
  }

  /** Deletes a live agent: it leaves the listing and its latest read; its versions stay. */
  delete(agentId: string, now: number): void {
    const row = this.row(agentId);
    if (!row || row.deleted_at !== null) throw agentNotFound(agentId);
    this.sql.exec("UPDATE agents SET deleted_at = ? WHERE agent_id = ?", now, agentId);
    recordTenantRefs(this.sql, agentId, undefined);
  }

  private row(agentId: string): AgentRow | undefined {
    return this.sql.exec<AgentRow>("SELECT agent_id, created_at, latest_version, deleted_at FROM agents WHERE agent_id = ?", agentId).toArray()[0];
  }
}

function agentNotFound(agentId: string): RpcError {
  return new RpcError({ code: "AgentNotFound", message: `No agent ${agentId}`, details: { agentId } });
}

/** The definition's JSON text, refused (422 LimitExceeded, nothing written) beyond MAX_AGENT_VERSION_BYTES. */
function boundedJson(definition: PinnedAgentDefinition): string {
  const text = JSON.stringify(definition);
  const bytes = utf8Length(text);
  if (bytes > MAX_AGENT_VERSION_BYTES) {
    throw new RpcError({
      code: "LimitExceeded",
      message: `An agent version is at most ${MAX_AGENT_VERSION_BYTES} bytes of JSON; this one is ${bytes}`,
      details: { resource: "agent_version_bytes", limit: MAX_AGENT_VERSION_BYTES, bytes },
    });
  }
  return text;
}

function agentView(row: VersionRow): Agent {
  const definition: PinnedAgentDefinition = JSON.parse(row.definition);
  return {
    id: row.agent_id,
    version: row.version,
    createdAt: row.agent_created_at,
    ...(row.version > 1 && { updatedAt: row.version_at }),
    ...(row.deleted_at !== null && { deletedAt: row.deleted_at }),
    ...definition,
  };
}

/** A page of at most `limit` versions that ends before it would pass AGENT_PAGE_BYTES_MAX bytes of definitions (time-cursor.ts boundedPage). */
function versionPage(rows: Iterable<VersionRow>, limit: number, position: (row: VersionRow) => string): Page<Agent> {
  return boundedPage(rows, { limit, budget: AGENT_PAGE_BYTES_MAX }, (row) => utf8Length(row.definition), agentView, position);
}
