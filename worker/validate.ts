import type { Context } from "hono";
import * as v from "valibot";
import { arrayWhereObjectExpected } from "../schema/no-array-objects.ts";
import { fail, invalidInput } from "./http-error.ts";
import { describeIssue } from "../schema/validation-messages.ts";

/** Request bodies are bounded before they are read (ARCHITECTURE D17; QUALITY R7). */
export const MAX_BODY_BYTES = 1024 * 1024;

const tooLarge = (limit: number) => fail("PayloadTooLarge", `The body exceeds ${limit} bytes`, { limit });

/** One bounded read per request: later calls (middleware, then the route) share it. */
const boundedReads = new WeakMap<Request, Promise<string>>();

/**
 * The request body as text, read through a byte counter that stops at `limit`: a body beyond it
 * is a 413 PayloadTooLarge as soon as the bound is crossed, and the rest is never read, whether
 * the body is chunked, has no Content-Length or has one that lies (hono's `bodyLimit` trusts a
 * Content-Length, so it is not used). A declared Content-Length above the bound is refused before
 * any byte is read. Every call for the same request shares the one read; invalid UTF-8 decodes to
 * U+FFFD, as `Request.text()` does.
 */
export function readBoundedText(c: Context, limit = MAX_BODY_BYTES): Promise<string> {
  const request = c.req.raw;
  const shared = boundedReads.get(request);
  if (shared) return shared.then((text) => within(text, limit));
  // Someone read the body unbounded already (hono caches it): bound what it got.
  const read = request.bodyUsed
    ? c.req.text().then((text) => within(text, limit))
    : readStream(request, limit);
  boundedReads.set(request, read);
  return read;
}

async function readStream(request: Request, limit: number): Promise<string> {
  if (Number(request.headers.get("content-length") ?? "0") > limit) throw tooLarge(limit);
  if (!request.body) return "";
  const reader = request.body.getReader();
  const decoder = new TextDecoder();
  let bytes = 0;
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    bytes += value.byteLength;
    if (bytes > limit) {
      // Cancelling tells the runtime the rest of the upload is unwanted; nothing waits for it.
      reader.cancel().catch(() => undefined);
      throw tooLarge(limit);
    }
    text += decoder.decode(value, { stream: true });
  }
}

const encoder = new TextEncoder();

/** The text, or a 413 when its UTF-8 form exceeds `limit` (every UTF-16 unit is 1–3 bytes). */
function within(text: string, limit: number): string {
  if (text.length > limit || (text.length * 3 > limit && encoder.encode(text).byteLength > limit)) throw tooLarge(limit);
  return text;
}

/**
 * Reads (bounded), parses and validates a JSON body before any object is touched. Failures are a
 * 413 (too large) or a 400 ValidationFailed naming the offending paths; never a 500.
 */
export async function jsonBody<S extends v.GenericSchema>(c: Context, schema: S, maxBytes = MAX_BODY_BYTES): Promise<v.InferOutput<S>> {
  return (await jsonBodyAsSent(c, schema, maxBytes)).output;
}

/**
 * The body validated (`output`) and as the client sent it (`sent`, the parsed JSON before the
 * schema's defaults: a message's missing timestamp is stamped with the time of validation, so two
 * sends of one body differ in `output` but not in `sent`).
 */
export async function jsonBodyAsSent<S extends v.GenericSchema>(c: Context, schema: S, maxBytes = MAX_BODY_BYTES): Promise<{ sent: unknown; output: v.InferOutput<S> }> {
  const text = await readBoundedText(c, maxBytes);
  let parsed: unknown;
  try {
    parsed = text.length === 0 ? undefined : JSON.parse(text);
  } catch {
    throw invalidInput("body", "not valid JSON");
  }
  return { sent: parsed, output: validate(schema, parsed) };
}

/**
 * Validates any input (query, path, body) with a schema of schema/. `root` names the input in
 * messages when an issue is about the input itself: `body`, `query`, or a path parameter's name.
 */
export function validate<S extends v.GenericSchema>(schema: S, input: unknown, root = "body"): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (result.success) {
    const misplaced = arrayWhereObjectExpected(schema, input);
    if (misplaced !== undefined) {
      throw invalidInput(misplaced || root, "expected an object, got an array");
    }
    return result.output;
  }
  const issues = result.issues.slice(0, 10).map((issue) => describeIssue(issue, root));
  throw fail("ValidationFailed", issues[0] ?? `${root}: invalid`, { issues });
}

/** A path parameter, validated and named in messages (`sid: Ids are 1–64 characters …`). */
export function pathParam<S extends v.GenericSchema>(c: Context, name: string, schema: S): v.InferOutput<S> {
  return validate(schema, c.req.param(name), name);
}

/** The query string, validated; issues name the query parameter. */
export function queryParams<S extends v.GenericSchema>(c: Context, schema: S): v.InferOutput<S> {
  return validate(schema, singleQuery(c), "query");
}

/**
 * The query string's parameters, each given once: Hono's `query()` keeps a repeated parameter's
 * first value, so `limit=1&limit=0` would be answered as `limit=1`. A repeat is refused instead
 * (400), as a repeated metadata filter is. `metadata.*` filters are read with their repeats
 * (sessions.ts), and refused there.
 */
function singleQuery(c: Context): Record<string, string> {
  for (const [name, values] of Object.entries(c.req.queries())) {
    if (values.length > 1 && !name.startsWith("metadata.")) throw invalidInput(`query.${name}`, "given more than once");
  }
  return c.req.query();
}
