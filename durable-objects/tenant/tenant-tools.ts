import type { RpcResult } from "../../schema/errors.ts";
import type { TenantToolInput, TenantToolReply, TenantToolView } from "../../schema/tenant-tools.ts";
import type { Wire } from "../../schema/wire.ts";
import { sealSecret, secretBoxKey, secretHint } from "../../secrets/secret-box.ts";
import { toolView, type StoredToolDefinition } from "../../tools/definitions.ts";
import { tenantToolSecretContext } from "../../tools/tenant-copies.ts";
import { asResult, parseWire } from "../rpc/rpc-errors.ts";
import { newToolSecret, storedToolDefinition, withSecretOf } from "../session/tool-definition-input.ts";
import { toolSecretOpens } from "../rpc/stored-secrets.ts";
import type { TenantHost } from "./tenant-host.ts";
import { tenantToolStore, type Revision } from "./tenant-revisions.ts";
import type { Page } from "./time-cursor.ts";

/** What this module reaches of the host (tenant-host.ts). */
type TenantToolsHost = Pick<TenantHost, "sql" | "env" | "requireTenant" | "requireActiveTenant" | "assertStorageRoom">;

/**
 * The tenant's own tools (spec/API.md "Tenant tools and MCP servers"): http and client tools
 * defined once for every session made from the tenant's agents, each PUT a new revision. A
 * definition is checked as a session checks it (tool-definition-input.ts) and an http tool's
 * secret is generated when it is created, answered once, and kept sealed under the tenant's
 * context by every later revision.
 */
export class TenantTools {
  constructor(private readonly host: TenantToolsHost) {}

  async listTenantTools(limit: number, cursor: string | undefined): Promise<Wire<RpcResult<Page<TenantToolView>>>> {
    return asResult(() => {
      this.host.requireTenant();
      const page = tenantToolStore(this.host.sql).list(limit, cursor);
      return { items: page.items.map(tenantToolView), nextCursor: page.nextCursor };
    });
  }

  async getTenantTool(name: string): Promise<Wire<RpcResult<TenantToolView>>> {
    return asResult(() => {
      this.host.requireTenant();
      return tenantToolView(tenantToolStore(this.host.sql).require(name));
    });
  }

  async putTenantTool(name: string, input: Wire<TenantToolInput>): Promise<Wire<RpcResult<TenantToolReply>>> {
    return asResult(async () => {
      const tenant = this.host.requireActiveTenant();
      const definition = parseWire(input);
      const { env } = this.host;
      // Checked and sealed first: the read of the latest revision and the write of the next then
      // happen in one synchronous turn, with no await another request could slip into.
      const candidate = await storedToolDefinition(name, definition, { sessionId: "", secretsKey: env.SECRETS_KEY, allowLoopback: env.LOCAL_DEV === "on" }, undefined, "");
      const fresh = candidate.kind === "http" ? newToolSecret() : undefined;
      const withFresh = fresh === undefined ? candidate : { ...candidate, ...(await sealedSecret(env.SECRETS_KEY, tenant.id, name, fresh)) };
      // The latest revision's seal when it no longer opens (SECRETS_KEY changed since): not kept.
      const held = tenantToolStore(this.host.sql).latest(name)?.value;
      const heldSeal = held?.kind === "http" ? held.sealedSecret : undefined;
      const unreadable = heldSeal !== undefined && !(await toolSecretOpens(env.SECRETS_KEY, heldSeal, tenantToolSecretContext(tenant.id, name))) ? heldSeal : undefined;
      let secret: string | undefined;
      // The writing turn: a deletion begun during the awaits above refuses it.
      this.host.requireActiveTenant();
      this.host.assertStorageRoom();
      const { stored, created } = tenantToolStore(this.host.sql).put(
        name,
        (latest) => {
          // A later revision of an http tool keeps its secret; a new tool (or one that was a client
          // tool, or one whose secret no longer opens) gets the fresh one.
          if (latest?.kind === "http" && candidate.kind === "http" && latest.sealedSecret !== unreadable) return withSecretOf(candidate, latest);
          secret = fresh;
          return withFresh;
        },
        Date.now(),
      );
      return { ...tenantToolView(stored), created, ...(secret !== undefined && { secret }) };
    });
  }

  async deleteTenantTool(name: string): Promise<Wire<RpcResult<{ deleted: true }>>> {
    return asResult(() => {
      this.host.requireTenant();
      tenantToolStore(this.host.sql).delete(name, Date.now());
      return { deleted: true as const };
    });
  }
}

async function sealedSecret(secretsKey: string, tenantId: string, name: string, secret: string): Promise<Pick<StoredToolDefinition, "sealedSecret" | "secretHint">> {
  const key = await secretBoxKey(secretsKey, "tool-secret");
  return { sealedSecret: await sealSecret(key, secret, tenantToolSecretContext(tenantId, name)), secretHint: secretHint(secret) };
}

function tenantToolView(stored: Revision<StoredToolDefinition>): TenantToolView {
  return { ...toolView(stored.name, stored.value), revision: stored.revision, createdAt: stored.createdAt, updatedAt: stored.updatedAt };
}
