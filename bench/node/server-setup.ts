import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { Api, createTenant, readAdminToken } from "../../test/e2e/client-helpers.ts";
import { startOurs, startPeer, startSseFloor, type RunningServer } from "./servers.ts";

/** What the server rows get from the global setup (provide/inject). */
export interface BenchServers {
  ours: { baseUrl: string; runtimeUrl: string; persistDir: string; pgid: number; key: string; tenantId: string };
  peer: { baseUrl: string; runtimeUrl: string; persistDir: string; pgid: number };
  /** P14's floor (bench/sse-floor/): the bare topologies, beside ours in the same run. */
  sseFloor: { baseUrl: string };
}

declare module "vitest" {
  interface ProvidedContext {
    benchServers: BenchServers;
  }
}

/**
 * Global setup of the server rows: starts ours (`npm start`), the peer and P14's floor, one after
 * the other, creates the bench tenant through the admin API and raises its quotas as an operator
 * would (the defaults, 1,200 requests a minute and 50 open operations, are below what P8 and P7
 * send), and stops every server after the run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const servers: RunningServer[] = [];
  const peerDir = mkdtempSync(join(tmpdir(), "das-bench-peer-"));
  const floorDir = mkdtempSync(join(tmpdir(), "das-bench-sse-floor-"));
  try {
    const ours = await startOurs();
    servers.push(ours);
    const peer = await startPeer(peerDir);
    servers.push(peer);
    const sseFloor = await startSseFloor(floorDir);
    servers.push(sseFloor);
    const admin = new Api(ours.baseUrl, readAdminToken());
    const { tenantId, key } = await createTenant(admin, "bench");
    await admin.expect(200, "PATCH", `/v1/admin/tenants/${tenantId}/quotas`, { body: { requestsPerMinute: 1_000_000, maxOpenOperations: 10_000 } });
    project.provide("benchServers", {
      ours: { baseUrl: ours.baseUrl, runtimeUrl: ours.runtimeUrl, persistDir: ours.persistDir, pgid: ours.pgid, key, tenantId },
      peer: { baseUrl: peer.baseUrl, runtimeUrl: peer.runtimeUrl, persistDir: peer.persistDir, pgid: peer.pgid },
      sseFloor: { baseUrl: sseFloor.baseUrl },
    });
  } catch (error) {
    for (const server of servers) await server.stop();
    for (const dir of [peerDir, floorDir]) rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return async () => {
    for (const server of servers) await server.stop();
    for (const dir of [peerDir, floorDir]) rmSync(dir, { recursive: true, force: true });
  };
}
