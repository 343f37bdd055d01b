import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, createTenant, readAdminToken, type ErrorBody } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// Request bodies over real HTTP against `npm start`: a chunked upload (no Content-Length) far
// beyond the 1 MiB bound is answered 413 while the client is still sending. The upload is
// endless, so an answer at all proves the server did not buffer it; the bytes the client had
// sent by then show how little of it was taken.
//
// The endless upload is written on a raw socket: Node's fetch (undici) and http client report a
// server that answers before the upload ends as EPIPE/ECONNRESET and drop the answer, while the
// answer is on the wire.

const BOUND = 1024 * 1024;
const CHUNK = 64 * 1024;
/** The most the client offers before the test gives up: a server that buffers takes it all. */
const GIVE_UP_BYTES = 128 * BOUND;

interface EarlyAnswer {
  status: number;
  body: string;
  /** Bytes of the upload the client had written when the answer began to arrive. */
  sentBeforeAnswer: number;
}

/** PUTs an endless chunked JSON string and reads the answer while writing; stops at the first answer byte. */
function endlessUpload(baseUrl: string, path: string, key: string): Promise<EarlyAnswer> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let sent = 0;
    let sentBeforeAnswer: number | undefined;
    let received = "";
    const chunk = `${CHUNK.toString(16)}\r\n${"x".repeat(CHUNK)}\r\n`;
    const settle = () => {
      const head = /^HTTP\/1\.1 (\d{3}) [^\r]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(received);
      const length = Number(/^content-length: *(\d+)$/im.exec(head?.[2] ?? "")?.[1] ?? NaN);
      if (!head || sentBeforeAnswer === undefined || (head[3] ?? "").length < length) return false;
      socket.destroy();
      resolve({ status: Number(head[1]), body: head[3] ?? "", sentBeforeAnswer });
      return true;
    };
    socket.on("data", (data) => {
      sentBeforeAnswer ??= sent;
      received += data.toString("utf8");
      settle();
    });
    // The server may close its side once it has answered; what arrived before counts.
    socket.on("error", () => undefined);
    socket.on("close", () => {
      if (!settle()) reject(new Error(`no complete answer; sent ${sent} bytes, received ${JSON.stringify(received.slice(0, 200))}`));
    });
    socket.write(
      `PUT ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        `Transfer-Encoding: chunked\r\n\r\n1\r\n"\r\n`,
    );
    const pump = () => {
      while (sentBeforeAnswer === undefined && !socket.destroyed) {
        if (sent >= GIVE_UP_BYTES) {
          socket.destroy();
          return;
        }
        sent += CHUNK;
        if (!socket.write(chunk)) {
          socket.once("drain", pump);
          return;
        }
      }
    };
    pump();
  });
}

describe("request body bounds over HTTP (npm start)", () => {
  let server: DevServer;
  let api: Api;
  beforeAll(async () => {
    server = await startDevServer();
    ({ api } = await createTenant(new Api(server.baseUrl, readAdminToken()), "chunked"));
    await api.expect(201, "POST", "/v1/sessions", { body: { id: "upload" } });
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
  });

  it("answers an endless chunked body with 413 PayloadTooLarge while the client is still sending, and stores nothing", async () => {
    const answer = await endlessUpload(server.baseUrl, "/v1/sessions/upload/values/app/big", api.token);
    expect(answer.status).toBe(413);
    expect((JSON.parse(answer.body) as ErrorBody).error.code).toBe("PayloadTooLarge");
    // The bound plus what sockets buffer, nowhere near the upload's end.
    expect(answer.sentBeforeAnswer).toBeGreaterThan(BOUND);
    expect(answer.sentBeforeAnswer).toBeLessThan(GIVE_UP_BYTES / 2);
    expect((await api.request<ErrorBody>("GET", "/v1/sessions/upload/values/app/big")).status).toBe(404);
  });

  it("takes a chunked body within the bound (fetch with a stream body)", async () => {
    const text = JSON.stringify({ note: "é".repeat(200_000) });
    const bytes = new TextEncoder().encode(text);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < bytes.byteLength; offset += 7777) controller.enqueue(bytes.slice(offset, offset + 7777));
        controller.close();
      },
    });
    const response = await fetch(`${server.baseUrl}/v1/sessions/upload/values/app/small`, {
      method: "PUT",
      headers: { authorization: `Bearer ${api.token}`, "content-type": "application/json" },
      body: stream,
      duplex: "half",
    });
    expect(response.status).toBe(200);
    const stored = await api.expect<{ value: unknown }>(200, "GET", "/v1/sessions/upload/values/app/small");
    expect(stored.value).toEqual(JSON.parse(text));
  });
});
