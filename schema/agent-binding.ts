import * as v from "valibot";

// A session bound to an agent version (spec/API.md "Agents"): settings, resources and tools are
// session-wide (ARCHITECTURE D6), so a session is bound to at most one version at a time, named
// on the Session, in every operation's record and in every tool call's context.

/** `{ id, version }` of an agent version: what the Session, a record and a call context show. */
export const AgentVersionRefSchema = v.object({ id: v.string(), version: v.number() });
export type AgentVersionRef = v.InferOutput<typeof AgentVersionRefSchema>;

/**
 * `"<id>"` (its latest version) or `"<id>@<version>"`, as `POST /v1/sessions { agent }` and
 * `PATCH /v1/sessions/{sid} { agent }` take it.
 */
export const AgentReferenceSchema = v.pipe(
  v.string(),
  // An agent id is an id (schema/api.ts IdSchema), so "@" cannot be part of it.
  v.regex(/^[A-Za-z0-9_-]{1,64}(@[1-9]\d{0,8})?$/, 'An agent is named "<id>" (its latest version) or "<id>@<version>"'),
  v.transform((text): { id: string; version?: number } => {
    const [id = "", version] = text.split("@");
    return version === undefined ? { id } : { id, version: Number(version) };
  }),
);
export type AgentReference = v.InferOutput<typeof AgentReferenceSchema>;
