import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Api, pollUntil, readAdminToken } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// `npm start -- --dev-key` prints a key of the local tenant "dev" only when the service gave it
// one; otherwise it says why. A deleted tenant's id stays reserved (docs/data.md: creating it
// again answers 409 TenantExists), so after tenant "dev" was deleted no start on that state
// directory can mint its key: it says so, and names the way out (`--dev-tenant <id>`, which mints a
// key of another local tenant, or a fresh state directory). It never prints `export KEY=undefined`.

describe("npm start -- --dev-key after the local tenant dev was deleted", () => {
  const persistDir = mkdtempSync(join(tmpdir(), "das-devkey-"));
  const servers: DevServer[] = [];
  printServerOutputOnFailure(() => servers);
  afterAll(async () => {
    for (const server of servers) await server.stop();
    rmSync(persistDir, { recursive: true, force: true });
  });

  it("says the tenant was deleted instead of printing a key, and --dev-tenant mints a key of another tenant", async () => {
    const first = await startDevServer({ persistDir, extraArgs: ["--dev-key"] });
    servers.push(first);
    await pollUntil("the first dev key", async () => first.output(), (output) => /export KEY=sk_/.test(output), 30_000);
    const admin = new Api(first.baseUrl, readAdminToken());
    await admin.expect(202, "DELETE", "/v1/admin/tenants/dev");
    await pollUntil("the deletion to complete", () => admin.request("GET", "/v1/admin/tenants/dev"), (reply) => reply.status === 404, 90_000);
    await first.stop();

    const second = await startDevServer({ persistDir, extraArgs: ["--dev-key"] });
    servers.push(second);
    const output = await pollUntil("the dev key or a failure", async () => second.output(), (text) => /A key of the local tenant|Could not/.test(text), 30_000);
    expect(output).not.toContain("export KEY=");
    expect(output).toContain('Could not print a dev key: the local tenant "dev" was deleted, and a deleted tenant\'s id stays reserved.');
    expect(output).toContain("--dev-tenant <id>");
    await second.stop();

    const third = await startDevServer({ persistDir, extraArgs: ["--dev-tenant", "dev2"] });
    servers.push(third);
    const keyed = await pollUntil("the dev2 key", async () => third.output(), (text) => /A key of the local tenant|Could not/.test(text), 30_000);
    const key = /export KEY=(sk_\S+)/.exec(keyed)?.[1];
    expect(keyed).toContain('A key of the local tenant "dev2"');
    expect((await new Api(third.baseUrl, key ?? "").request<{ tenantId: string }>("GET", "/v1/me")).body).toMatchObject({ tenantId: "dev2" });
  }, 300_000);
});
