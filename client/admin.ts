import { path, type CallOptions, type HttpClient } from "./http.ts";
import type { CreatedKey, Me, ModelCatalogEntry, Tenant } from "./types.ts";

/** Tenant and key administration (spec/API.md "Admin"): authenticated with the client's `adminToken`. */
export class AdminApi {
  constructor(private readonly http: HttpClient) {}

  /** `POST /v1/admin/tenants` → 201 the tenant (409 TenantExists for a taken id). */
  createTenant(body: { id?: string; name?: string } = {}, options: CallOptions = {}): Promise<Tenant> {
    return this.http.json({ ...options, method: "POST", path: "/v1/admin/tenants", body, auth: "admin" });
  }

  /** `POST /v1/admin/tenants/{tenantId}/keys` → 201 `{ keyId, key }` (the key is shown once). */
  createKey(tenantId: string, body: { name?: string } = {}, options: CallOptions = {}): Promise<CreatedKey> {
    return this.http.json({ ...options, method: "POST", path: `/v1/admin/tenants${path(tenantId)}/keys`, body, auth: "admin" });
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

/** `GET /v1/models`: the model catalog. */
export function models(http: HttpClient, options: CallOptions = {}): Promise<ModelCatalogEntry[]> {
  return http.json({ ...options, method: "GET", path: "/v1/models" });
}
