import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { wranglerDevArgs } from "../../scripts/dev-args.mjs";
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

  it("says where it serves once it answers, and logs no line per request (wrangler at warn)", async () => {
    await expect.poll(() => server.output(), { timeout: 10_000 }).toContain(`Serving on ${server.baseUrl} (a line per request: npm start -- --log-level info)`);
    for (let i = 0; i < 3; i++) expect((await fetch(`${server.baseUrl}/health`)).status).toBe(200);
    expect(server.output()).not.toContain("GET /health");
  });
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
      args: ["dev", "--port=8787", "--ip=127.0.0.1", "--persist-to=.wrangler/state", "--show-interactive-dev-session=false", "--log-level=warn"],
      port: "8787",
      ip: "127.0.0.1",
    });
  });

  it("leaves out each default the user overrides, in either flag form, and keeps the user's flags", () => {
    const { args, port } = wranglerDevArgs(["--ip", "0.0.0.0", "--port=9000", "--persist-to", "/tmp/x", "--show-interactive-dev-session"]);
    expect(args).toEqual(["dev", "--log-level=warn", "--ip", "0.0.0.0", "--port=9000", "--persist-to", "/tmp/x", "--show-interactive-dev-session"]);
    expect(port).toBe("9000");
    expect(wranglerDevArgs(["--no-show-interactive-dev-session"]).args).not.toContain("--show-interactive-dev-session=false");
  });

  it("passes other wrangler flags through after the defaults", () => {
    expect(wranglerDevArgs(["--var", "A:1"]).args.slice(-3)).toEqual(["--log-level=warn", "--var", "A:1"]);
  });

  it("logs a line per request again with --log-level info", () => {
    const { args } = wranglerDevArgs(["--log-level", "info"]);
    expect(args.filter((arg) => arg.startsWith("--log-level"))).toEqual(["--log-level"]);
    expect(args.slice(-2)).toEqual(["--log-level", "info"]);
  });
});
