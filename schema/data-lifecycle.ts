import * as v from "valibot";

/** `DELETE /v1/sessions?metadata.<key>=<value>`: how many sessions matched and are deleted in the background. */
export const DeleteSessionsAnswerSchema = v.object({ matched: v.number() });
export type DeleteSessionsAnswer = v.InferOutput<typeof DeleteSessionsAnswerSchema>;

/** A tenant's deletion as the admin follows it (`GET /v1/admin/tenants/{tenantId}`). */
export const TenantDeletionSchema = v.object({
  /** When `DELETE /v1/admin/tenants/{tenantId}` was first accepted. */
  startedAt: v.number(),
  /** Sessions the tenant had when the deletion began (and any created by a request in flight then). */
  sessionsTotal: v.number(),
  sessionsDeleted: v.number(),
  sessionsRemaining: v.number(),
});

/** `GET /v1/admin/tenants/{tenantId}`, and the answer of its DELETE (202). */
export const TenantDetailSchema = v.object({
  id: v.string(),
  name: v.string(),
  createdAt: v.number(),
  status: v.picklist(["active", "deleting"]),
  deletion: v.optional(TenantDeletionSchema),
});
export type TenantDetail = v.InferOutput<typeof TenantDetailSchema>;
