import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import { call } from "./helpers.ts";

// Export and import (docs/data.md) through the real Hono app.

export type Line = { type: string; [key: string]: unknown };
export type EntryBody = { id: string; seq: number; type: string; parentId: string | null; timestamp: number; [key: string]: unknown };

let counter = 0;
export const newSessionId = (prefix: string): string => `${prefix}_${(counter++).toString(36)}_${crypto.randomUUID().slice(0, 6)}`;

/** A request with a raw JSON Lines body (`call` sends JSON). */
export function send(path: string, init: { method?: string; body: string | ReadableStream<Uint8Array>; token: string; headers?: Record<string, string> }): Promise<Response> {
  return exports.default.fetch(`http://api.test${path}`, {
    method: init.method ?? "POST",
    headers: { authorization: `Bearer ${init.token}`, "content-type": "application/x-ndjson", ...init.headers },
    body: init.body,
  });
}

export async function exportText(key: string, sid: string): Promise<string> {
  const response = await call(`/v1/sessions/${sid}/export`, { token: key });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("application/x-ndjson");
  return response.text();
}

export const linesOf = (text: string): Line[] => text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
export const ndjson = (lines: readonly unknown[]): string => lines.map((line) => `${JSON.stringify(line)}\n`).join("");

/** Every entry of the session, page by page (`T`: what the caller reads of an entry). */
export async function allEntries<T = EntryBody>(key: string, sid: string): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const response = await call(`/v1/sessions/${sid}/entries?limit=1000${cursor ? `&cursor=${cursor}` : ""}`, { token: key });
    expect(response.status).toBe(200);
    const body = await response.json<{ items: T[]; nextCursor: string | null }>();
    items.push(...body.items);
    cursor = body.nextCursor;
    if (cursor === null) break;
  }
  return items;
}
