import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient } from "../../client/index.ts";
import { laneSetup, slowStep, useScript } from "../api/lane-helpers.ts";

// URLs resolve `.` and `..` path segments (even percent-encoded) before any route sees them
// (docs/api-sessions.md "Names and addresses"), so an SDK call naming one would reach ANOTHER route
// of the API: the SDK refuses it (a rejected TypeError) and sends nothing.

describe("SDK path segments `.` and `..`", { timeout: 60_000 }, () => {
  it("operations.abort(sid, lane, '..') is refused; it does not abort the lane's running operation", async () => {
    const setup = await laneSetup("sdk_dotabort");
    await useScript(setup, [slowStep(100)]);
    const sent: string[] = [];
    const client = createClient({
      baseUrl: "http://api.test/",
      key: setup.key,
      fetch: (input, init) => {
        sent.push(`${init?.method ?? "GET"} ${new URL(input).pathname}`);
        return exports.default.fetch(input, init);
      },
    });
    const running = await client.operations.accept(setup.sid, "main", { kind: "prompt", prompt: "long" });
    const refused = await client.operations.abort(setup.sid, "main", "..").then(
      (answer) => ({ resolved: answer }),
      (error: unknown) => ({ rejected: error instanceof Error ? error.name : String(error) }),
    );
    // The running operation was not touched: nobody asked to abort it.
    const view = await client.operations.get(setup.sid, "main", running.operationId);
    expect(refused).toEqual({ rejected: expect.stringMatching(/TypeError|ApiRequestError/) });
    expect(sent.at(-2)).not.toMatch(/\/lanes\/main\/abort$/);
    expect("status" in view ? view.status : "still running").not.toBe("aborted");
  });

  it("values.get(sid, '..', 'entries') is refused, not answered with the session's entry listing", async () => {
    const setup = await laneSetup("sdk_dotvalue");
    const client = createClient({ baseUrl: "http://api.test/", key: setup.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const outcome = await client.values.get(setup.sid, "..", "entries").then(
      (answer) => ({ resolved: Object.keys(answer).sort() }),
      (error: unknown) => ({ rejected: error instanceof Error ? error.name : String(error) }),
    );
    expect(outcome).toEqual({ rejected: expect.stringMatching(/TypeError|ApiRequestError/) });
  });
});
