import type { ExecutableTool, ResolvedTool, ToolExecuteContext, ToolOutput, ToolsPort } from "../../harness/execution/tools.ts";
import { list, value } from "../../harness/session/addresses.ts";
import type { Session } from "../../harness/session/session.ts";
import type { JsonObject } from "../../schema/json.ts";
import type { ToolExecutionMode } from "../../schema/settings.ts";
import { createToolRegistry } from "../../tools/registry.ts";

// Tools for engine tests: the session's own registry (builtin/client definitions in `pi.tools`)
// plus test tools implemented here. Every execution of a test tool appends to the session list
// `test/executions`, so "executed at most once" is checked against durable storage, across kills.

export const executions = list<JsonObject>("test", "executions");

export type TestBehaviour = (args: JsonObject, context: ToolExecuteContext) => Promise<ToolOutput>;

export interface TestToolSpec {
  replay?: "never" | "safe";
  executionMode?: ToolExecutionMode;
  parameters?: JsonObject;
  run: TestBehaviour;
}

const ANY_OBJECT: JsonObject = { type: "object" };

export function testTools(specs: Record<string, TestToolSpec>): (session: Session) => ToolsPort {
  return (session) => {
    const registry = createToolRegistry({ session });
    const tools = new Map<string, ExecutableTool>(
      Object.entries(specs).map(([name, spec]) => [
        name,
        {
          kind: "executable",
          declaration: {
            name,
            kind: "test",
            description: `test tool ${name}`,
            parameters: spec.parameters ?? ANY_OBJECT,
            replay: spec.replay ?? "never",
            ...(spec.executionMode && { executionMode: spec.executionMode }),
          },
          execute: async (args, context) => {
            await session.appendList(executions, { tool: name, invocationId: context.invocation.invocationId, toolCallId: context.toolCallId });
            return spec.run(args, context);
          },
        },
      ]),
    );
    return { resolve: (name: string): ResolvedTool | undefined => tools.get(name) ?? registry.resolve(name) };
  };
}

export function executionsOf(session: Session): JsonObject[] {
  return session.readList(executions, { limit: 1000 }).map((element) => element.value);
}

export const text = (value: string): ToolOutput => ({ content: [{ type: "text", text: value }] });

/** A promise the test resolves when it wants (a tool "in flight" until then). */
export function gate<T = void>(): { promise: Promise<T>; open(value: T): void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

/** Defines a builtin or client tool in the session, as the API does. */
export async function defineTool(session: Session, name: string, definition: JsonObject): Promise<void> {
  await session.setValue(value<JsonObject>("pi.tools", name), definition);
}
