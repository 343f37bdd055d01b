import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient, type ExportLine } from "../../client/index.ts";
import { call, newTenant } from "../api/helpers.ts";

// client.data (docs/data.md) against the real app in workerd: an export streamed into an import,
// the lines parsed, an import in parts, and a refusal as a typed error.

const client = (key: string) => createClient({ baseUrl: "http://api.test/", key, fetch: (input, init) => exports.default.fetch(input, init) });

describe("client.data", () => {
  it("exports line by line, imports a stream in one request and in parts", async () => {
    const { key } = await newTenant("sdkd");
    const sdk = client(key).data;
    const source = await client(key).sessions.create({ name: "to copy", metadata: { user: "u1" } });
    expect((await call(`/v1/sessions/${source.id}/values/app/colour`, { method: "PUT", body: "blue", token: key })).status).toBe(200);

    const lines: ExportLine[] = [];
    for await (const line of sdk.exportLines(source.id)) lines.push(line);
    expect(lines.map((line) => line.type)).toEqual(["session", "value", "end"]);

    // The export read whole, then sent as a stream (one workerd test isolate cannot pipe its own answer into its own request).
    const exported = await new Response(await sdk.exportStream(source.id)).text();
    const upload = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const line of exported.split(/(?<=\n)/)) controller.enqueue(new TextEncoder().encode(line));
        controller.close();
      },
    });
    const copy = await sdk.importSession(upload, { id: `${source.id}_copy` });
    expect(copy).toMatchObject({ id: `${source.id}_copy`, name: "to copy", metadata: { user: "u1" } });

    const begun = await sdk.beginImport({ id: `${source.id}_parts` });
    const text = lines.map((line) => `${JSON.stringify(line)}\n`);
    expect(await sdk.putImportPart(begun.importId, 1, text.slice(0, 2).join(""))).toEqual({ part: 1, lines: 2, repeated: false });
    expect(await sdk.putImportPart(begun.importId, 2, new Blob([text.slice(2).join("")]))).toEqual({ part: 2, lines: 1, repeated: false });
    expect(await sdk.commitImport(begun.importId)).toMatchObject({ id: `${source.id}_parts`, name: "to copy" });

    const refused = await sdk.importSession("{nope\n").catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 422, code: "InvalidImport", details: { line: 1, reason: "malformed" } });
  });
});
