import type { TestProject } from "vitest/node";
import "../provided-context.ts";
import { startMcpTestServer } from "./mcp-test-server.ts";

// Global setup of the workers pool (runs in Node, before any test): the MCP tests talk to a real
// MCP server (the official SDK's) over real HTTP, so it runs here, outside workerd, and the tests
// learn its address through `inject("mcpServerUrl")`.
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startMcpTestServer();
  project.provide("mcpServerUrl", server.url);
  return () => server.close();
}
