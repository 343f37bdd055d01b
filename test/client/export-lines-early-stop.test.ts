import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient, type FetchLike } from "../../client/index.ts";
import { newTenant } from "../api/helpers.ts";
import { eventually } from "./sockets.ts";

// `client.data.exportLines(sid)` reads the export as it arrives. A caller that stopped early
// (`break` after the header, a `return`, a throw in the loop) ended the generator, but the SDK never
// cancelled the body it was reading: the download stayed open with its reader locked. The fetch is
// the worker's own, wrapped to observe whether the body was cancelled or read to its end.

describe("exportLines stopped early", { timeout: 60_000 }, () => {
  it("cancels the export's body when the loop stops before the end line", async () => {
    const { key } = await newTenant("rv_export_break");
    let released = false;
    const fetch: FetchLike = async (input, init) => {
      const response = await exports.default.fetch(input, init);
      if (!new URL(input).pathname.endsWith("/export") || !response.body) return response;
      const reader = response.body.getReader();
      const body = new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            const { done, value } = await reader.read();
            if (done) {
              released = true;
              controller.close();
            } else controller.enqueue(value);
          },
          cancel(reason) {
            released = true;
            return reader.cancel(reason);
          },
        },
        { highWaterMark: 0 },
      );
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const client = createClient({ baseUrl: "http://api.test", key, fetch });
    const { id } = await client.sessions.create({ name: "big" });
    // Enough list items for the export to span several pages.
    for (let i = 0; i < 30; i++) await client.lists.append(id, "app", "log", "x".repeat(50_000));

    let header: string | undefined;
    for await (const line of client.data.exportLines(id)) {
      header = line.type;
      break;
    }
    expect(header).toBe("session");
    await eventually(() => released, "the export's body to be cancelled", 2_000);
  });
});
