import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { get, type IncomingHttpHeaders } from "node:http";
import { gunzipSync } from "node:zlib";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { wranglerDevArgs } from "../../scripts/dev-args.mjs";
import { ensureDevVars } from "../../scripts/dev-vars.mjs";
import { MINUTE_CRON, scheduledUrl, untilNextMinute } from "../../scripts/local-cron.mjs";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// The README's promise: `npm start` serves the API locally and answers GET /health, and any
// `wrangler dev` flag passed after `--` wins over the script's own default for it.
describe("npm start", () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer();
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("answers GET /health over real HTTP", async () => {
    const response = await fetch(`${server.baseUrl}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });

  // The local server compresses JSON for clients that accept it, as Cloudflare's edge does; a
  // small answer is marked `identity` (worker/middleware/small-answers.ts) and left as it is.
  it("answers a small JSON answer uncompressed, and a large one gzip-compressed to a client that accepts gzip and sized to one that does not", async () => {
    const small = await rawGet(`${server.baseUrl}/health`, { "accept-encoding": "gzip, deflate" });
    expect(small.headers["content-encoding"]).toBe("identity");
    expect(Number(small.headers["content-length"])).toBe(small.body.byteLength);
    expect(JSON.parse(small.body.toString("utf8"))).toEqual({ status: "ok" });
    const large = await rawGet(`${server.baseUrl}/openapi.json`, { "accept-encoding": "gzip, deflate" });
    expect(large.headers["content-encoding"]).toBe("gzip");
    expect(JSON.parse(gunzipSync(large.body).toString("utf8"))).toMatchObject({ openapi: expect.any(String) });
    // Asked for no encoding, the large answer comes sized, as the worker wrote it.
    const plain = await rawGet(`${server.baseUrl}/openapi.json`, {});
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(Number(plain.headers["content-length"])).toBe(plain.body.byteLength);
    expect(JSON.parse(plain.body.toString("utf8"))).toMatchObject({ openapi: expect.any(String) });
    // Node's fetch sends `Accept-Encoding: gzip, deflate` and decodes what needs decoding.
    const viaFetch = await fetch(`${server.baseUrl}/health`);
    expect(viaFetch.headers.get("content-encoding")).toBe("identity");
    expect(await viaFetch.json()).toEqual({ status: "ok" });
  });
});

/** A GET whose answer is read as sent on the wire: headers and the body's bytes, not decoded. */
function rawGet(url: string, headers: Record<string, string>): Promise<{ headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const request = get(url, { headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve({ headers: response.headers, body: Buffer.concat(chunks) }));
      response.on("error", reject);
    });
    request.on("error", reject);
  });
}

// wrangler hashes wrangler.toml and the names in .dev.vars into worker-configuration.d.ts, and its
// first start on a fresh clone warns "types might be out of date" when they differ. Checked against
// the .dev.vars npm start writes there, not the developer's own (which may hold provider keys).
describe("the committed worker-configuration.d.ts", () => {
  it("is what `npm run types` generates with the .dev.vars a fresh clone's npm start writes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "das-types-"));
    try {
      const devVars = join(dir, ".dev.vars");
      ensureDevVars(devVars);
      const flags = /wrangler types (.*)$/m.exec(JSON.parse(readFileSync("package.json", "utf8")).scripts.types)?.[1]?.split(" ") ?? [];
      const checked = await new Promise<{ code: number | null; output: string }>((resolve) => {
        execFile("npx", ["wrangler", "types", "--check", ...flags, "--env-file", devVars], { timeout: 60_000 }, (error, stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, output: stdout + stderr }),
        );
      });
      expect(checked.output).toContain("up to date");
      expect(checked.code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});

describe("npm start -- <a flag the script also sets>", () => {
  let server: DevServer | undefined;
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
  });

  it("serves with --ip 0.0.0.0 instead of making wrangler exit on a repeated flag", async () => {
    server = await startDevServer({ extraArgs: ["--ip", "0.0.0.0"] });
    const response = await fetch(`${server.baseUrl}/health`);
    expect(response.status).toBe(200);
  }, 90_000);
});

describe("the wrangler dev command line of npm start", () => {
  it("passes the script's defaults when the user passes no flag", () => {
    expect(wranglerDevArgs([])).toEqual({
      args: ["dev", "--port=8787", "--ip=127.0.0.1", "--persist-to=.wrangler/state", "--show-interactive-dev-session=false"],
      port: "8787",
    });
  });

  it("leaves out each default the user overrides, in either flag form, and keeps the user's flags", () => {
    const { args, port } = wranglerDevArgs(["--ip", "0.0.0.0", "--port=9000", "--persist-to", "/tmp/x", "--show-interactive-dev-session"]);
    expect(args).toEqual(["dev", "--ip", "0.0.0.0", "--port=9000", "--persist-to", "/tmp/x", "--show-interactive-dev-session"]);
    expect(port).toBe("9000");
    expect(wranglerDevArgs(["--no-show-interactive-dev-session"]).args).not.toContain("--show-interactive-dev-session=false");
  });

  it("passes other wrangler flags through after the defaults", () => {
    expect(wranglerDevArgs(["--log-level", "debug"]).args.slice(-2)).toEqual(["--log-level", "debug"]);
  });
});

describe("the minute cron npm start fires", () => {
  it("is the one schedule wrangler.toml declares", () => {
    const declared = /^crons\s*=\s*\[(.*)\]/m.exec(readFileSync("wrangler.toml", "utf8"))?.[1];
    expect(declared?.split(",").map((cron) => cron.trim().replace(/^"|"$/g, ""))).toEqual([MINUTE_CRON]);
  });

  it("fires at the start of each minute, a minute later when asked on the boundary", () => {
    expect(untilNextMinute(Date.UTC(2026, 11, 2, 10, 0, 0))).toBe(60_000);
    expect(untilNextMinute(Date.UTC(2026, 11, 2, 10, 0, 59, 750))).toBe(250);
    expect(untilNextMinute(Date.UTC(2026, 11, 2, 10, 0, 1))).toBe(59_000);
  });

  it("through wrangler dev's local scheduled endpoint", () => {
    expect(scheduledUrl("http://127.0.0.1:8787")).toBe("http://127.0.0.1:8787/cdn-cgi/local/scheduled?cron=*%20*%20*%20*%20*");
  });
});
