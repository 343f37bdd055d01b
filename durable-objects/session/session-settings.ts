import { sessionMetadata } from "../../harness/session/builtin-addresses.ts";
import type { RpcResult } from "../../schema/errors.ts";
import { RESOURCE_LIMITS, resourcesOverLimit, type HarnessSettings, type PromptTemplate, type Skill } from "../../schema/settings.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import type { SessionMetadata, SessionMetadataPatch } from "../../schema/session-metadata.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult, parseWire, RpcError } from "../rpc/rpc-errors.ts";
import { assertCanDefer } from "./deferred-check.ts";
import { metadataPatchWrite } from "./metadata-patch.ts";
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
    return asResult(async () => (await this.settingsAndMetadata(parseWire(patch), undefined)).settings);
  }

  /**
   * `PATCH /v1/sessions/{sid} { settings, metadata }`: both in one commit, each checked on the line
   * (a refusal of either writes neither, whatever a concurrent PATCH did). `seq`: the commit's (the
   * stored metadata's when nothing changed), by which the tenant's index keeps the newest metadata.
   */
  async updateSettingsAndMetadata(
    patch: Wire<HarnessSettingsPatch>,
    metadataPatch: SessionMetadataPatch,
  ): Promise<Wire<RpcResult<{ settings: HarnessSettings; metadata: SessionMetadata; seq: number }>>> {
    return asResult(async () => {
      const { settings, seq, metadata } = await this.settingsAndMetadata(parseWire(patch), metadataPatch);
      return { settings, seq: seq ?? metadata?.seq ?? 0, metadata: metadata?.value ?? {} };
    });
  }

  private async settingsAndMetadata(
    settings: HarnessSettingsPatch,
    metadataPatch: SessionMetadataPatch | undefined,
  ): Promise<{ settings: HarnessSettings; seq: number | undefined; metadata: { value: SessionMetadata; seq: number } | undefined }> {
    const harness = await this.host.harness();
    let metadata: { value: SessionMetadata; seq: number } | undefined;
    // Both checks run on the line against the settings as merged, so no other change slips in
    // between a check and the write (D4).
    const updated = await harness.updateSettingsWith(settings, {
      accept: (next) => {
        assertValidSettings(next);
        // Turning deferred answers on for the session asks every lane's model (422, nothing written).
        const lanes = harness.lanes().flatMap(({ name }) => {
          const lane = harness.getLane(name);
          return lane ? [{ lane: name, model: lane.getModel() }] : [];
        });
        assertCanDefer(settings.streamOptions?.deferred ?? undefined, lanes);
      },
      writes: (m) => {
        if (metadataPatch === undefined) return [];
        const patched = metadataPatchWrite(m, metadataPatch);
        metadata = { value: patched.metadata, seq: m.getValue(sessionMetadata)?.seq ?? 0 };
        return patched.writes;
      },
    });
    return { ...updated, metadata };
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
      const resources = { ...current, [kind]: entries };
      // Checked on what the session would hold: an export carries it on one line an import takes back.
      const over = next === null ? undefined : resourcesOverLimit(resources);
      if (over !== undefined) throw new RpcError({ code: "LimitExceeded", message: `A session holds ${over}`, details: { resource: kind, limit: RESOURCE_LIMITS.perKind, bytes: RESOURCE_LIMITS.bytes } });
      await harness.setResources(resources);
      return { name };
    });
  }
}
