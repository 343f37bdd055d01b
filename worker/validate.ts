import type { Context } from "hono";
import * as v from "valibot";
import { arrayWhereObjectExpected } from "../schema/no-array-objects.ts";
import { fail } from "./http-error.ts";

/** Request bodies are bounded before they are read (ARCHITECTURE D17; QUALITY R7). */
export const MAX_BODY_BYTES = 1024 * 1024;

const encoder = new TextEncoder();

/**
 * Reads, bounds, parses and validates a JSON body before any object is touched. Failures are a
 * 413 (too large) or a 400 ValidationFailed naming the offending paths; never a 500.
 */
export async function jsonBody<S extends v.GenericSchema>(c: Context, schema: S, maxBytes = MAX_BODY_BYTES): Promise<v.InferOutput<S>> {
  const declared = Number(c.req.header("content-length") ?? "0");
  if (declared > maxBytes) throw fail("PayloadTooLarge", `The body exceeds ${maxBytes} bytes`, { limit: maxBytes });
  const text = await c.req.text();
  if (encoder.encode(text).byteLength > maxBytes) throw fail("PayloadTooLarge", `The body exceeds ${maxBytes} bytes`, { limit: maxBytes });
  let parsed: unknown;
  try {
    parsed = text.length === 0 ? undefined : JSON.parse(text);
  } catch {
    throw fail("ValidationFailed", "The body is not valid JSON");
  }
  return validate(schema, parsed);
}

/** Validates any input (query, path, body) with a schema of schema/. */
export function validate<S extends v.GenericSchema>(schema: S, input: unknown): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (result.success) {
    const misplaced = arrayWhereObjectExpected(schema, input);
    if (misplaced) throw fail("ValidationFailed", `${misplaced}: Invalid type: Expected Object but received Array`, { issues: [`${misplaced}: expected an object`] });
    return result.output;
  }
  const issues = result.issues.slice(0, 10).map((issue) => `${v.getDotPath(issue) ?? "(body)"}: ${issue.message}`);
  throw fail("ValidationFailed", issues[0] ?? "Invalid input", { issues });
}
