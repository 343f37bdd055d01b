import type { ExecutableTool } from "../../harness/execution/tools.ts";
import { currentTimeTool } from "./clock.ts";
import { failTool } from "./fail.ts";
import { valuesGetTool, valuesListTool, valuesSetTool, type ApplicationValues } from "./values.ts";
import { waitTool } from "./wait.ts";

export interface BuiltinDependencies {
  clock: () => number;
  values: ApplicationValues;
}

type Factory = (description: string | undefined, dependencies: BuiltinDependencies) => ExecutableTool;

/** The service's own tools, by the name a `builtin` definition must have. */
const BUILTINS: Record<string, Factory> = {
  current_time: (description, { clock }) => currentTimeTool(description, clock),
  values_get: (description, { values }) => valuesGetTool(description, values),
  values_set: (description, { values }) => valuesSetTool(description, values),
  values_list: (description, { values }) => valuesListTool(description, values),
  wait: (description, { clock }) => waitTool(description, clock),
  fail: (description) => failTool(description),
};

export const BUILTIN_TOOL_NAMES: readonly string[] = Object.keys(BUILTINS);

export function builtinTool(name: string, description: string | undefined, dependencies: BuiltinDependencies): ExecutableTool | undefined {
  const factory = Object.hasOwn(BUILTINS, name) ? BUILTINS[name] : undefined;
  return factory?.(description, dependencies);
}
