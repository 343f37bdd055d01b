import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { listenAddress, localBase, splitOwnFlags } from "../../scripts/dev-args.mjs";
import { startDevServer, type DevServer } from "./dev-server.ts";

// README: any `wrangler dev` flag passed after `--` wins over the script's own default, `--ip`
// among them. The script's own requests (the health check, the minute cron, --dev-key) then go to
// the address wrangler serves: that address (an IPv6 one in brackets), or its loopback when it
// listens on every interface (0.0.0.0 → 127.0.0.1, :: → [::1]). If the server has not answered
// within a minute, the script says so (and keeps waiting) instead of giving up silently.

describe("npm start -- --ip ::1 --dev-key", () => {
  let server: DevServer | undefined;
  const persistDir = mkdtempSync(join(tmpdir(), "das-ip-"));
  afterAll(async () => {
    await server?.stop();
    rmSync(persistDir, { recursive: true, force: true });
  });

  it("prints the dev key and fires the minute cron (a deferred_sweep line) on the address it serves", async () => {
    server = await startDevServer({ persistDir, extraArgs: ["--ip", "::1", "--dev-key"], host: "[::1]", timeoutMs: 90_000 });
    const { baseUrl, output } = server;
    // Past the next minute boundary, and then some: the cron has fired once, the key long printed.
    const now = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 60_000 - (now % 60_000) + 15_000));
    expect({ printedKey: /A key of the local tenant "dev"/.test(output()), keyUrl: output().includes(`curl -s ${baseUrl}/v1/me`), cronFired: output().includes('"event":"deferred_sweep"') }, output()).toEqual({
      printedKey: true,
      keyUrl: true,
      cronFired: true,
    });
  }, 180_000);
});

describe("the address npm start's own requests go to", () => {
  it("is 127.0.0.1 by default, the --ip address otherwise, and a loopback for every interface", () => {
    expect(localBase([])).toBe("http://127.0.0.1:8787");
    expect(localBase(["--port", "9000", "--ip", "192.168.1.20"])).toBe("http://192.168.1.20:9000");
    expect(localBase(["--ip=0.0.0.0"])).toBe("http://127.0.0.1:8787");
    expect(localBase(["--ip", "::"])).toBe("http://[::1]:8787");
    expect(localBase(["--ip", "::1"])).toBe("http://[::1]:8787");
    expect(localBase(["--ip", "[::1]"])).toBe("http://[::1]:8787");
    expect(localBase(["--ip", "fe80::1:2"])).toBe("http://[fe80::1:2]:8787");
    expect(localBase(["--ip", "localhost"])).toBe("http://localhost:8787");
  });

  it("is checked for a free port on the address wrangler listens on", () => {
    expect(listenAddress([])).toBe("127.0.0.1");
    expect(listenAddress(["--ip", "[::1]"])).toBe("::1");
    expect(listenAddress(["--ip=0.0.0.0"])).toBe("0.0.0.0");
  });
});

describe("npm start's own flags", () => {
  it("are taken out of the flags wrangler gets", () => {
    expect(splitOwnFlags(["--port", "9000", "--dev-key", "--no-cron"])).toEqual({ devKey: true, devTenant: "dev", cron: false, rest: ["--port", "9000"] });
    expect(splitOwnFlags(["--dev-tenant", "mine", "--ip", "::1"])).toEqual({ devKey: true, devTenant: "mine", cron: true, rest: ["--ip", "::1"] });
    expect(splitOwnFlags(["--dev-tenant=other"])).toMatchObject({ devKey: true, devTenant: "other", rest: [] });
    expect(() => splitOwnFlags(["--dev-tenant"])).toThrow(/--dev-tenant needs a tenant id/);
  });
});
