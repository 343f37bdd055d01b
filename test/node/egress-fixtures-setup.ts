import type { TestProject } from "vitest/node";
import "../provided-context.ts";
import { startEgressFixtures } from "./egress-fixtures.ts";

// Global setup of the workers pool (runs in Node, before any test): the loopback servers of the
// egress tests (test/node/egress-fixtures.ts), whose addresses the tests learn through `inject`.
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const fixtures = await startEgressFixtures();
  project.provide("egressTripwireUrl", fixtures.tripwireUrl);
  project.provide("egressFixturesUrl", fixtures.fixturesUrl);
  project.provide("egressClosedUrl", fixtures.closedUrl);
  return () => fixtures.close();
}
