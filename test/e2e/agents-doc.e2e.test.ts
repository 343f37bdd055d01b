import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, createTenant, readAdminToken } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { fencedBlocks, jsonValues } from "./doc-blocks.ts";

// docs/agents.md as a user follows it: its `sh` blocks, exactly as written, run in order in one
// bash against `npm start`, with `BASE` and `KEY` set as docs/api.md sets them (a fresh tenant).

const run = promisify(execFile);

const repo = fileURLToPath(new URL("../../", import.meta.url));

describe("the docs/agents.md examples", () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer();
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
  });

  it("define, read, version and delete an agent as written", async () => {
    const { key } = await createTenant(new Api(server.baseUrl, readAdminToken()), "agentsdoc");
    const blocks = fencedBlocks("docs/agents.md", "sh");
    expect(blocks).toHaveLength(5);
    const script = blocks.map((block, index) => `echo "@@block ${index}"\n${block}\necho`).join("\n");
    const { stdout } = await run("bash", ["-c", `set -euo pipefail\nexport BASE=${server.baseUrl}\nexport KEY=${key}\n${script}`], { cwd: repo, timeout: 60_000 });
    const [created, read, patched, versions, deleted] = stdout.split(/^@@block \d+$/m).slice(1).map((output) => output.trim());
    expect(jsonValues(created ?? "")[0]).toMatchObject({ id: "support", version: 1, activeTools: ["current_time", "lookup_order"], metadata: { team: "support" } });
    const [list, latest] = jsonValues(read ?? "");
    expect(list).toMatchObject({ items: [{ id: "support", version: 1 }], nextCursor: null });
    expect(latest).toMatchObject({ id: "support", version: 1 });
    const [second] = jsonValues(patched ?? "");
    expect(second).toMatchObject({
      version: 2,
      settings: { systemPrompt: "You answer support questions in two sentences.", retry: { maxRetries: 2 } },
      tools: { current_time: { kind: "builtin" } },
      activeTools: ["current_time"],
      metadata: { team: "support", tier: "gold" },
    });
    expect(second).not.toHaveProperty("tools.lookup_order");
    const [history, first] = jsonValues(versions ?? "");
    expect(history).toMatchObject({ items: [{ version: 1 }, { version: 2 }], nextCursor: null });
    expect(first).toEqual(jsonValues(created ?? "")[0]);
    expect(deleted?.split("\n")[0]).toBe("204");
    expect(jsonValues(deleted ?? "")[0]).toMatchObject({ id: "support", version: 2, deletedAt: expect.any(Number) });
  }, 90_000);
});
