import * as v from "valibot";
import { HarnessSettingsSchema, type HarnessSettings } from "../../schema/settings.ts";
import { invalidInput } from "../rpc/rpc-errors.ts";

/**
 * Settings merged from a patch must still be settings: a patch is valid on its own, but a header
 * map merged by name over several PATCHes can outgrow its bound (400 ValidationFailed naming the
 * field, nothing written).
 */
export function assertValidSettings(settings: HarnessSettings): void {
  const parsed = v.safeParse(HarnessSettingsSchema, settings);
  if (parsed.success) return;
  const [issue] = parsed.issues;
  const path = v.getDotPath(issue);
  throw invalidInput(path === null ? "settings" : `settings.${path}`, issue.message);
}
