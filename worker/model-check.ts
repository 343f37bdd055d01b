import { laneConfigCatalog, modelProblem } from "../durable-objects/session/lane-config-check.ts";
import { modelsDeployment, usableProviders } from "../models/deployment.ts";
import type { ModelIdentity } from "../schema/lane.ts";
import { tenantStub } from "./env.ts";
import { HttpFailure, replyValue } from "./http-error.ts";

/**
 * Refuses a default model the tenant cannot use now (422 UnknownModel), by the same catalog a
 * lane's configuration is checked against. Asked before anything of the request is written.
 */
export async function assertTenantCanUse(env: Env, tenantId: string, model: ModelIdentity): Promise<void> {
  const holdings = replyValue(await tenantStub(env, tenantId).providerSettings());
  const deployment = modelsDeployment(env);
  const problem = modelProblem(model, laneConfigCatalog({ scripted: deployment.scripted, usableProviders: usableProviders(deployment, holdings) }));
  if (problem) throw new HttpFailure(problem);
}
