import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Api, readAdminToken } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// `npm start` on a port another server already holds (an earlier `npm start` still running) exits
// at once with "Address already in use" and exit code 1, before it starts wrangler. Otherwise the
// script's own requests (the health check, the minute cron, --dev-key) would reach the OTHER server
// and take its answers for its own: announce itself up, and mint a key of tenant "dev" there.

describe("npm start -- --dev-key on a port another npm start already serves", () => {
  let other: DevServer | undefined;
  const persistDir = mkdtempSync(join(tmpdir(), "das-port-"));
  let output = "";
  printServerOutputOnFailure(() => [other]);
  afterAll(async () => {
    await other?.stop();
    rmSync(persistDir, { recursive: true, force: true });
  });

  it("exits with the port error and neither announces itself up nor mints a key on the other server", async () => {
    other = await startDevServer();
    const port = new URL(other.baseUrl).port;
    const child = spawn("npm", ["start", "--", "--port", port, "--persist-to", persistDir, "--dev-key"], { detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "true" } });
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
        resolve(null);
      }, 90_000);
      child.once("exit", (exitCode) => {
        clearTimeout(timer);
        resolve(exitCode);
      });
    });
    expect(output).toContain(`Port ${port} on 127.0.0.1: Address already in use`);
    expect(code).toBe(1);
    // wrangler was never started (its banner is its first line).
    expect(output).not.toMatch(/⛅️ wrangler|Ready on/);
    // The other server gained no tenant "dev" from this failed start.
    const dev = await new Api(other.baseUrl, readAdminToken()).request("GET", "/v1/admin/tenants/dev");
    expect({ devTenantOnOtherServer: dev.status, printedKey: /A key of the local tenant "dev"/.test(output), announcedCron: /npm start fires the minute cron/.test(output) }).toEqual({
      devTenantOnOtherServer: 404,
      printedKey: false,
      announcedCron: false,
    });
  }, 180_000);
});
