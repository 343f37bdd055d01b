import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";

// A WebSocket client over a bare TCP socket, for what standard clients cannot do: stop reading
// (`pause()` stops taking bytes off the socket, so the TCP window fills and the server's sends
// queue up) while still writing. Frames per RFC 6455: client frames masked, server frames not.

export interface RawFrames {
  /** Text messages in order. */
  texts: string[];
  close?: { code: number; reason: string };
}

export interface RawWebSocket {
  pause(): void;
  /** Sends one masked text frame; false once the connection is gone. */
  send(text: string): boolean;
  /** Resumes reading and collects frames until the server's close frame or the end of the connection (bounded). */
  readUntilClose(timeoutMs: number): Promise<RawFrames>;
  destroy(): void;
}

export async function openRawWebSocket(baseUrl: string, path: string, key: string): Promise<RawWebSocket> {
  const url = new URL(baseUrl);
  const socket: Socket = connect(Number(url.port), url.hostname);
  let buffer: Buffer = Buffer.alloc(0);
  let ended = false;
  socket.on("data", (chunk: Buffer) => (buffer = Buffer.concat([buffer, chunk])));
  socket.on("error", () => (ended = true));
  socket.on("close", () => (ended = true));
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.write(
    [
      `GET ${path} HTTP/1.1`,
      `Host: ${url.host}`,
      "Upgrade: websocket",
      "Connection: Upgrade",
      `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}`,
      "Sec-WebSocket-Version: 13",
      `Authorization: Bearer ${key}`,
      "",
      "",
    ].join("\r\n"),
  );
  const deadline = Date.now() + 20_000;
  let headerEnd = -1;
  while ((headerEnd = buffer.indexOf("\r\n\r\n")) === -1) {
    if (ended || Date.now() > deadline) throw new Error(`No upgrade response: ${buffer.toString("latin1").slice(0, 200)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const head = buffer.subarray(0, headerEnd).toString("latin1");
  if (!head.startsWith("HTTP/1.1 101")) throw new Error(`Upgrade refused: ${head.split("\r\n")[0]}`);
  buffer = buffer.subarray(headerEnd + 4);

  const frames: RawFrames = { texts: [] };
  let fragments: Buffer[] = [];
  /** Takes every complete frame off the buffer. */
  const parse = (): void => {
    for (;;) {
      const frame = readFrame(buffer);
      if (!frame) return;
      buffer = buffer.subarray(frame.length);
      if (frame.opcode === 0x8) {
        frames.close = { code: frame.payload.length >= 2 ? frame.payload.readUInt16BE(0) : 1005, reason: frame.payload.subarray(2).toString("utf8") };
      } else if (frame.opcode === 0x1 || frame.opcode === 0x0) {
        fragments.push(frame.payload);
        if (frame.fin) {
          frames.texts.push(Buffer.concat(fragments).toString("utf8"));
          fragments = [];
        }
      }
    }
  };

  return {
    pause: () => socket.pause(),
    send(text) {
      if (ended || socket.destroyed) return false;
      socket.write(maskedTextFrame(text));
      return true;
    },
    async readUntilClose(timeoutMs) {
      socket.resume();
      const until = Date.now() + timeoutMs;
      for (;;) {
        parse();
        if (frames.close || ended) return frames;
        if (Date.now() > until) throw new Error(`No close frame within ${timeoutMs} ms (${frames.texts.length} messages read)`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    destroy: () => socket.destroy(),
  };
}

function readFrame(data: Buffer): { fin: boolean; opcode: number; payload: Buffer; length: number } | undefined {
  if (data.length < 2) return undefined;
  const first = data[0] ?? 0;
  const second = data[1] ?? 0;
  let length = second & 0x7f;
  let offset = 2;
  if (length === 126) {
    if (data.length < 4) return undefined;
    length = data.readUInt16BE(2);
    offset = 4;
  } else if (length === 127) {
    if (data.length < 10) return undefined;
    length = Number(data.readBigUInt64BE(2));
    offset = 10;
  }
  if (data.length < offset + length) return undefined;
  return { fin: (first & 0x80) !== 0, opcode: first & 0x0f, payload: data.subarray(offset, offset + length), length: offset + length };
}

function maskedTextFrame(text: string): Buffer {
  const payload = Buffer.from(text, "utf8");
  const mask = randomBytes(4);
  const header =
    payload.length < 126
      ? Buffer.from([0x81, 0x80 | payload.length])
      : Buffer.concat([Buffer.from([0x81, 0x80 | 126]), Buffer.from([payload.length >> 8, payload.length & 0xff])]);
  const masked = Buffer.from(payload.map((byte, i) => byte ^ (mask[i % 4] ?? 0)));
  return Buffer.concat([header, mask, masked]);
}
