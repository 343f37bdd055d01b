import type { TestProject } from "vitest/node";
import "../provided-context.ts";
import { startToolWebhookServer } from "./tool-webhook-server.ts";

// Global setup of the workers pool (runs in Node, before any test): the http tool tests call a
// real webhook over real HTTP, so the server runs here, outside workerd, and the tests learn its
// address through `inject("toolWebhookUrl")`.
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startToolWebhookServer();
  project.provide("toolWebhookUrl", server.url);
  return () => server.close();
}
