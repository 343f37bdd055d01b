import type { RpcResult } from "../../schema/errors.ts";
import type { HarnessSettings, PromptTemplate, Skill } from "../../schema/settings.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult, parseWire } from "../rpc/rpc-errors.ts";
import { assertCanDefer } from "./deferred-check.ts";
import { assertValidSettings } from "./settings-check.ts";
import type { SessionHost } from "./session-host.ts";

/** What this module reaches of the host (session-host.ts). */
type SettingsHost = Pick<SessionHost, "harness">;

/** The session's settings and resources (ARCHITECTURE D6): read, merged under a patch, set one resource at a time. */
export class SessionSettings {
  constructor(private readonly host: SettingsHost) {}

  async settings(): Promise<Wire<RpcResult<HarnessSettings>>> {
    return asResult(async () => (await this.host.harness()).settings());
  }

  /** A `defaultModel` in the patch was checked against the tenant's models by the caller (the edge). */
  async updateSettings(patch: Wire<HarnessSettingsPatch>): Promise<Wire<RpcResult<HarnessSettings>>> {
    return asResult(async () => {
      const harness = await this.host.harness();
      const settings = parseWire(patch);
      // Both checks run on the line against the settings as merged, so no other change slips in
      // between a check and the write (D4).
      return harness.updateSettings(settings, (next) => {
        assertValidSettings(next);
        // Turning deferred answers on for the session asks every lane's model (422, nothing written).
        const lanes = harness.lanes().flatMap(({ name }) => {
          const lane = harness.getLane(name);
          return lane ? [{ lane: name, model: lane.getModel() }] : [];
        });
        assertCanDefer(settings.streamOptions?.deferred ?? undefined, lanes);
      });
    });
  }

  /** Sets (or, with null, removes) one skill or prompt template of the session's resources (D6). */
  async setResource(kind: "skills" | "promptTemplates", name: string, body: Wire<Skill | PromptTemplate | null>): Promise<Wire<RpcResult<{ name: string }>>> {
    return asResult(async () => {
      const harness = await this.host.harness();
      const next = parseWire(body);
      const current = harness.resources();
      const entries: Record<string, Skill | PromptTemplate> = { ...current[kind] };
      if (next === null) delete entries[name];
      else entries[name] = next;
      await harness.setResources({ ...current, [kind]: entries });
      return { name };
    });
  }
}
