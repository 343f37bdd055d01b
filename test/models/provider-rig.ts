import { runInDurableObject } from "cloudflare:test";
import type { FetchFunction } from "@earendil-works/pi-ai";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { WakeScheduler } from "../../harness/runtime/core.ts";
import { AgentHarness } from "../../harness/runtime/harness.ts";
import type { ModelsDeployment } from "../../models/deployment.ts";
import { createModelRegistry } from "../../models/registry.ts";
import { tenantModels, type TenantProviderGrant } from "../../models/tenant-models.ts";
import type { ModelIdentity } from "../../schema/lane.ts";
import type { HarnessEvent } from "../../schema/lane.ts";
import { createSession } from "../helpers/sessions.ts";
import type { DriveRig, ManualClock } from "../runtime/drive-helpers.ts";

// A harness over a fresh SessionObject's real storage whose Models port is the tenant port of
// production (tenant-models.ts) over pi-ai's real providers, with the HTTP transport replaced by
// wire fixtures (wire.ts). Only the outside world is faked: the provider's host.

export const TENANT_KEY = "sk-tenant-fixture-key-9z8y";

export const noDeployment: ModelsDeployment = { scripted: false, secret: () => undefined, aiBinding: undefined, localDev: false };

export interface ProviderRigOptions {
  model: ModelIdentity;
  fetch: FetchFunction;
  clock?: ManualClock;
  grant?: TenantProviderGrant;
  deployment?: ModelsDeployment;
}

export async function withProviderRig<T>(body: (rig: Omit<DriveRig, "reopen" | "open">) => Promise<T>, options: ProviderRigOptions): Promise<T> {
  const { stub } = await createSession("prv");
  return runInDurableObject(stub, async (object: SessionObject) => {
    const session = object.session();
    const deployment = options.deployment ?? noDeployment;
    const registry = createModelRegistry({ scripted: false, secret: deployment.secret });
    const grant = options.grant ?? { key: { apiKey: TENANT_KEY }, deploymentKeys: false };
    const models = tenantModels(registry, { deployment, grant: async () => grant, fetch: options.fetch });
    const wakes: DriveRig["wakes"] = [];
    const wake: WakeScheduler = {
      due: (lane, operationId, at) => wakes.push({ lane, operationId, at }),
      settled: (lane, operationId) => wakes.push({ lane, operationId, at: "settled" }),
    };
    const { harness } = await AgentHarness.create({ session, models, seed: { model: options.model }, wake, ...(options.clock && { clock: options.clock.now }) });
    const events: HarnessEvent[] = [];
    harness.events.on("*", (event) => {
      events.push(event);
    });
    return body({ session, harness, events, wakes });
  });
}
