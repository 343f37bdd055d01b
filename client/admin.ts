import type { KeyInfo, TenantQuotas, TenantQuotasPatch, TenantSummary } from "../schema/api.ts";
import type { TenantDetail } from "../schema/data-lifecycle.ts";
import type { ModelIdentity } from "../schema/lane.ts";
import { path, type CallOptions, type HttpClient } from "./http.ts";
import { paginate } from "./paging.ts";
import type { CreatedKey, Me, ModelCatalogEntry, Page, PageQuery, Tenant } from "./types.ts";

export type { KeyInfo, TenantDetail, TenantQuotas, TenantQuotasPatch, TenantSummary };

/** Tenant and key administration (spec/API.md "Admin"): authenticated with the client's `adminToken`. */
export class AdminApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /** `POST /v1/admin/tenants` → 201 the tenant (409 TenantExists for a taken id). */
  createTenant(body: { id?: string; name?: string } = {}, options: CallOptions = {}): Promise<Tenant> {
    return this.http.json({ ...options, method: "POST", path: "/v1/admin/tenants", body, auth: "admin" });
  }

  /** `GET /v1/admin/tenants?limit&cursor`: one page of tenants, oldest first. */
  listTenants(query: PageQuery = {}, options: CallOptions = {}): Promise<Page<TenantSummary>> {
    return this.http.json({ ...options, method: "GET", path: "/v1/admin/tenants", query: { limit: query.limit, cursor: query.cursor }, auth: "admin" });
  }

  /** Every tenant, page by page: `for await (const tenant of client.admin.allTenants()) …`. */
  allTenants(query: Omit<PageQuery, "cursor"> = {}, options: CallOptions = {}): AsyncGenerator<TenantSummary, void, undefined> {
    return paginate((cursor) => this.listTenants({ ...query, ...(cursor !== undefined && { cursor }) }, options));
  }

  /**
   * `POST /v1/admin/tenants/{tenantId}/keys` → 201 `{ keyId, key }` (the key is shown once). With
   * `idempotencyKey`, a repeat answers 409 `KeySecretNotReplayed` with `details.keyId`: the key
   * exists and its secret is not shown again (revoke it if the secret was lost).
   */
  createKey(tenantId: string, body: { name?: string } = {}, options: CallOptions = {}): Promise<CreatedKey> {
    return this.http.json({ ...options, method: "POST", path: `/v1/admin/tenants${path(tenantId)}/keys`, body, auth: "admin" });
  }

  /**
   * `GET /v1/admin/tenants/{tenantId}/keys?limit&cursor`: one page of the tenant's keys, oldest
   * first, revoked ones included (`revokedAt`); never a secret. `lastUsedAt` is at most a minute old.
   */
  listKeys(tenantId: string, query: PageQuery = {}, options: CallOptions = {}): Promise<Page<KeyInfo>> {
    return this.http.json({ ...options, method: "GET", path: `/v1/admin/tenants${path(tenantId)}/keys`, query: { limit: query.limit, cursor: query.cursor }, auth: "admin" });
  }

  /** Every key of a tenant, page by page. */
  allKeys(tenantId: string, query: Omit<PageQuery, "cursor"> = {}, options: CallOptions = {}): AsyncGenerator<KeyInfo, void, undefined> {
    return paginate((cursor) => this.listKeys(tenantId, { ...query, ...(cursor !== undefined && { cursor }) }, options));
  }

  /** `GET /v1/admin/tenants/{tenantId}/quotas`: the quotas that apply now (defaults included). */
  quotas(tenantId: string, options: CallOptions = {}): Promise<TenantQuotas> {
    return this.http.json({ ...options, method: "GET", path: `/v1/admin/tenants${path(tenantId)}/quotas`, auth: "admin" });
  }

  /** `PATCH /v1/admin/tenants/{tenantId}/quotas`: omitted fields keep their value; answers the quotas after it. */
  setQuotas(tenantId: string, patch: TenantQuotasPatch, options: CallOptions = {}): Promise<TenantQuotas> {
    return this.http.json({ ...options, method: "PATCH", path: `/v1/admin/tenants${path(tenantId)}/quotas`, body: patch, auth: "admin" });
  }

  /**
   * `GET /v1/admin/tenants/{tenantId}`: `{ id, name, createdAt, status }`, with `deletion:
   * { startedAt, sessionsTotal, sessionsDeleted, sessionsRemaining }` while it is being deleted;
   * 404 NotFound once the deletion is complete.
   */
  tenant(tenantId: string, options: CallOptions = {}): Promise<TenantDetail> {
    return this.http.json({ ...options, method: "GET", path: `/v1/admin/tenants${path(tenantId)}`, auth: "admin" });
  }

  /**
   * `DELETE /v1/admin/tenants/{tenantId}` → 202 the tenant, `status: "deleting"`: its keys and
   * sockets are refused at once, its sessions and data deleted in the background (follow `tenant`
   * until 404), and its id stays reserved (docs/data.md "Deleting data"). A repeat answers the progress.
   */
  deleteTenant(tenantId: string, options: CallOptions = {}): Promise<TenantDetail> {
    return this.http.json({ ...options, method: "DELETE", path: `/v1/admin/tenants${path(tenantId)}`, auth: "admin" });
  }

  /** `DELETE /v1/admin/tenants/{tenantId}/keys/{keyId}` → 204; effective immediately. */
  async revokeKey(tenantId: string, keyId: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: `/v1/admin/tenants${path(tenantId)}/keys${path(keyId)}`, auth: "admin" });
  }
}

/** `GET /v1/me`: who the key belongs to. */
export function me(http: HttpClient, options: CallOptions = {}): Promise<Me> {
  return http.json({ ...options, method: "GET", path: "/v1/me" });
}

/** `PUT /v1/me/default-model`: the tenant's default model of new lanes (422 UnknownModel if unusable). */
export function setDefaultModel(http: HttpClient, model: ModelIdentity, options: CallOptions = {}): Promise<ModelIdentity> {
  return http.json({ ...options, method: "PUT", path: "/v1/me/default-model", body: model });
}

/** `DELETE /v1/me/default-model` → 204. */
export async function deleteDefaultModel(http: HttpClient, options: CallOptions = {}): Promise<void> {
  await http.send({ ...options, method: "DELETE", path: "/v1/me/default-model" });
}

/** `GET /v1/models`: the model catalog. */
export function models(http: HttpClient, options: CallOptions = {}): Promise<ModelCatalogEntry[]> {
  return http.json({ ...options, method: "GET", path: "/v1/models" });
}
