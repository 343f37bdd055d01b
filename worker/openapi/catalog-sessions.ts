import {
  CreateSessionSchema,
  IdSchema,
  PAGE_LIMIT_DEFAULT,
  pageSchema,
  PutSkillSchema,
  PutTemplateSchema,
  ResourceNameSchema,
  SessionSummarySchema,
} from "../../schema/api.ts";
import { SESSION_METADATA_LIMITS } from "../../schema/session-metadata.ts";
import { MetadataFilterQuerySchema, SessionListQuerySchema } from "../../schema/session-search.ts";
import { SEARCH_SCAN_ROWS } from "../../durable-objects/tenant/session-search.ts";
import { ForkSessionSchema } from "../../schema/api-fork.ts";
import { BROWSER_TOKEN_LIMITS, BrowserTokenSchema, CreateBrowserTokenSchema } from "../../schema/browser-tokens.ts";
import {
  AddressParamsSchema,
  BranchEntriesQuerySchema,
  BranchNameSchema,
  CreateBranchSchema,
  EntriesQuerySchema,
  EntryIdSchema,
  JsonBodySchema,
  LabelSchema,
  ListQuerySchema,
  NamePageQuerySchema,
  NewBranchEntrySchema,
  PAGE_BYTES_MAX,
  PatchSessionSchema,
  SESSION_LIMITS,
  UsageQuerySchema,
} from "../../schema/api-sessions.ts";
import { EntrySchema } from "../../schema/entries.ts";
import { EntryPlacementSchema } from "../../schema/lane-answers.ts";
import { BranchSchema, CreatedSessionSchema, EntryLabelSchema, ResourceNamedSchema, SessionSchema } from "../../schema/session.ts";
import { SESSION_ERRORS, type CatalogRoute } from "./catalog-types.ts";
import { BranchPageSchema, EntryPageSchema, ListPageSchema, SeqSchema, StoredValueSchema, UsagePageSchema } from "./responses.ts";

// spec/API.md "Sessions" and "Branches": worker/routes/sessions.ts, session-entries.ts,
// session-values.ts and branches.ts (docs/api-sessions.md).

const SID = { sid: IdSchema };
const ENTRY = { ...SID, entryId: EntryIdSchema };
const ADDRESS = { ...SID, ...AddressParamsSchema.entries };
const BRANCH = { ...SID, name: BranchNameSchema };
const SESSION =
  "The Session `{ id, tenantId, name, createdAt, parentSessionId?, stats, settings, branches, branchesNextCursor, lanes, lanesNextCursor }`. " +
  `\`branches\` and \`lanes\` are the first ${PAGE_LIMIT_DEFAULT} of each by name; a non-null \`branchesNextCursor\` / \`lanesNextCursor\` continues \`GET …/branches\` / \`GET …/lanes\` with \`?cursor=\`.`;
const userMessage = { role: "user", content: "Hello" };
const PAGED =
  `A page ends at \`limit\` items (1–1000, default 50) or before the item that would take it past ${PAGE_BYTES_MAX / 1024 / 1024} MiB of JSON, ` +
  "whichever comes first; an item larger than that (entries go up to 16 MiB) comes alone. `nextCursor` continues; null on the last page.";

export const sessionCatalog: readonly CatalogRoute[] = [
  {
    method: "put", path: "/v1/sessions/{sid}/skills/{name}", operationId: "putSkill", tag: "Sessions", auth: "tenant",
    summary: "Set a skill (used by `{ kind: \"skill\" }` runs)", pathParams: { ...SID, name: ResourceNameSchema },
    body: PutSkillSchema, example: { description: "Reviews a diff", content: "Review the change for correctness." },
    responses: { 200: { description: "`{ name }`", schema: ResourceNamedSchema } },
    errors: [...SESSION_ERRORS, "LimitExceeded"],
  },
  {
    method: "delete", path: "/v1/sessions/{sid}/skills/{name}", operationId: "deleteSkill", tag: "Sessions", auth: "tenant",
    summary: "Remove a skill (idempotent)", pathParams: { ...SID, name: ResourceNameSchema },
    responses: { 204: { description: "Removed (or absent)", content: "none" } },
    errors: [...SESSION_ERRORS],
  },
  {
    method: "put", path: "/v1/sessions/{sid}/templates/{name}", operationId: "putTemplate", tag: "Sessions", auth: "tenant",
    summary: "Set a prompt template (`$1`…`$9`, `$@`; used by `{ kind: \"prompt_template\" }` runs)",
    pathParams: { ...SID, name: ResourceNameSchema }, body: PutTemplateSchema, example: { content: "Summarize $1 in $2 words." },
    responses: { 200: { description: "`{ name }`", schema: ResourceNamedSchema } },
    errors: [...SESSION_ERRORS, "LimitExceeded"],
  },
  {
    method: "delete", path: "/v1/sessions/{sid}/templates/{name}", operationId: "deleteTemplate", tag: "Sessions", auth: "tenant",
    summary: "Remove a prompt template (idempotent)", pathParams: { ...SID, name: ResourceNameSchema },
    responses: { 204: { description: "Removed (or absent)", content: "none" } },
    errors: [...SESSION_ERRORS],
  },
  {
    method: "post", path: "/v1/sessions", operationId: "createSession", tag: "Sessions", auth: "tenant",
    summary: "Create a session",
    description:
      `\`id\` defaults to a fresh \`s_…\` id; \`settings\` is a partial settings patch over the defaults; \`resources\` are the session's skills and prompt templates; \`tools\` are tool definitions by name, each checked as \`PUT …/tools/{name}\` checks it; \`metadata\` is up to ${SESSION_METADATA_LIMITS.keys} string keys (1–${SESSION_METADATA_LIMITS.keyLength} characters of A–Z a–z 0–9 _ - .) to string values (at most ${SESSION_METADATA_LIMITS.valueLength} characters), which \`GET /v1/sessions?metadata.<key>=<value>\` finds the session by. \`agent\` (\`"<id>"\`: its latest version, or \`"<id>@<version>"\`) binds the session to that agent version: its settings, resources, tools (tenant tools as sealed copies of the pinned revisions) and MCP servers are copied into the session and lane \`main\` is created with the version's model, thinking level and active tools; \`settings\`, \`resources\` and \`tools\` given beside it override the version's for this session. A deleted agent, an unknown one or a version it does not have is 404 \`AgentNotFound\`. The session, its name, metadata, settings, resources, tools and (with an agent) lane \`main\` are created in one atomic step (a refused tool creates nothing). With \`Idempotency-Key\`, a retry after a failure part-way gets the session the first attempt created (a missing \`id\` is derived from the key).`,
    body: CreateSessionSchema,
    example: { name: "Support chat", settings: { systemPrompt: "Be brief." }, tools: { current_time: { kind: "builtin" } }, metadata: { user: "u_42", plan: "pro" } },
    idempotent: true,
    responses: { 201: { description: `${SESSION}, plus \`toolSecrets\` (\`{ [toolName]: secret }\`) when http tools were defined: their signing secrets, shown this once (a replay with the same Idempotency-Key answers without them)`, schema: CreatedSessionSchema } },
    errors: ["SessionExists", "SessionClosed", "UnknownModel", "UnknownTool", "AgentNotFound", "DeferredUnsupported", "LimitExceeded", "SecretUnreadable"],
  },
  {
    method: "get", path: "/v1/sessions", operationId: "listSessions", tag: "Sessions", auth: "tenant",
    summary: "List and search the tenant's sessions",
    description:
      `\`{ items: [{ id, name, createdAt, metadata }], nextCursor }\` in creation order (\`order=asc\`, the default) or newest first (\`order=desc\`), read from the tenant's index only (one object, never a session object, whatever the page size or the tenant's size); name and metadata are the ones given at creation or by the last PATCH. \`GET /v1/sessions/{sid}\` has stats, settings, branches and lanes. \`limit\` 1–1000, default 50. Filters (all must match): \`metadata.<key>=<value>\` (exact, up to ${SESSION_METADATA_LIMITS.keys}, each key once), \`status=idle|active\` (\`active\`: the tenant's open-operation ledger holds an open operation of one of its lanes; it follows a settlement by the time the session's settlement forward takes, normally milliseconds), \`createdAfter\` / \`createdBefore\` (milliseconds since the epoch, exclusive). The agent filter (else the first metadata filter, else the creation time) is served by an index in creation order; the other filters are applied to at most ${SEARCH_SCAN_ROWS} index rows per page (or \`limit + 1\` when larger), so a page may be short, even empty, with a \`nextCursor\`: continue until it is null. Other unknown parameters are ignored.`,
    query: SessionListQuerySchema,
    queryPatterns: [{ name: "metadata.{key}", description: "`metadata.<key>=<value>`: sessions whose metadata maps `<key>` to exactly `<value>` (keys are 1–64 characters of A–Z a–z 0–9 _ - .).", schema: MetadataFilterQuerySchema }],
    responses: { 200: { description: "A page of session summaries", schema: pageSchema(SessionSummarySchema) } },
    errors: [],
  },
  {
    method: "get", path: "/v1/sessions/{sid}", operationId: "getSession", tag: "Sessions", auth: "tenant",
    summary: "Read a session", pathParams: SID,
    responses: { 200: { description: SESSION, schema: SessionSchema } },
    errors: SESSION_ERRORS,
  },
  {
    method: "patch", path: "/v1/sessions/{sid}", operationId: "updateSession", tag: "Sessions", auth: "tenant",
    summary: "Rename a session, patch its metadata or its settings, move it to another agent version",
    description: `\`agent\` (\`"<id>@<version>"\`, or \`"<id>"\` for the latest) moves the whole session to that agent version in one commit: its settings, resources and the tools and MCP servers it brought become the new version's (tools and servers the session defined itself stay), and every lane takes the version's model, thinking level and active tools; each lane's next operation captures it, and an operation already running keeps the version it was accepted under (its record's \`agent\`). An http tool the new version brings answers its secret once in \`toolSecrets\`; one both versions define keeps its secret. \`settings\` beside \`agent\` apply over the new version's. \`metadata\` is a JSON Merge Patch over the session's metadata (a string sets a key, \`null\` deletes it); the merged map holds at most ${SESSION_METADATA_LIMITS.keys} keys (422 \`LimitExceeded\` beyond, nothing written) and reaches the search index before the answer. \`name: null\` removes the name; settings are a JSON Merge Patch (RFC 7396): a field left out keeps its value, objects merge field by field (\`{ compaction: { keepRecentTokens: 20 } }\` changes that one number), \`null\` puts a field back to its default, \`headers\`/\`metadata\` merge by name (\`settings_update\` events). A \`settings.defaultModel\` the tenant cannot use is 422 \`UnknownModel\`; \`settings.streamOptions.deferred\` while a lane's model cannot answer deferred is 422 \`DeferredUnsupported\`; then nothing is written.`,
    pathParams: SID, body: PatchSessionSchema, example: { name: null, settings: { toolExecution: "sequential" }, metadata: { plan: "enterprise", trial: null } },
    responses: { 200: { description: `${SESSION}, plus \`toolSecrets\` when a move to another agent version brought new http tools`, schema: CreatedSessionSchema } },
    errors: [...SESSION_ERRORS, "UnknownModel", "DeferredUnsupported", "LimitExceeded", "AgentNotFound", "SecretUnreadable"],
  },
  {
    method: "delete", path: "/v1/sessions/{sid}", operationId: "deleteSession", tag: "Sessions", auth: "tenant",
    summary: "Delete a session", description: "Its storage is deleted with its rows elsewhere (its suspended runs' registrations); later requests (a repeated DELETE too) answer 404. `DELETE /v1/sessions?metadata.<key>=<value>` deletes many in the background.",
    pathParams: SID,
    responses: { 204: { description: "Deleted", content: "none" } },
    errors: SESSION_ERRORS,
  },
  {
    method: "post", path: "/v1/sessions/{sid}/fork", operationId: "forkSession", tag: "Sessions", auth: "tenant",
    summary: "Fork a session (one lane's branch, or the whole tree)",
    description:
      "A new session of the same tenant. `scope: \"branch\"` copies the lane's path up to its tip, or up to `entryId` (`position: \"at\"`, the default) or its parent (`\"before\"`), with the lane's configuration; `scope: \"tree\"` copies every entry, branch tip, lane configuration and application value and list. Both keep the name, settings, resources and the labels of copied entries; the usage ledger starts at zero and lanes start idle (no operations, records or queued input are copied). Copied page by page in bounded memory. 422 `InvalidFork` (`reason`: data_only_branch, not_on_branch, undeclared_namespace).",
    pathParams: SID, body: ForkSessionSchema, example: { scope: "branch", branch: "main" }, idempotent: true,
    responses: { 201: { description: SESSION, schema: SessionSchema } },
    errors: [...SESSION_ERRORS, "UnknownBranch", "UnknownEntry", "SessionExists", "InvalidFork", "SecretUnreadable"],
  },
  {
    method: "post", path: "/v1/sessions/{sid}/tokens", operationId: "createBrowserToken", tag: "Sessions", auth: "tenant",
    summary: "Mint a browser token for the session",
    description:
      `A short-lived credential a page may hold instead of the tenant key: it reaches only this session (and, with \`lanes\`, only those lanes, at most ${BROWSER_TOKEN_LIMITS.maxLanes}), only what its \`scopes\` allow (\`watch\`: a lane's watch socket, snapshot and state; \`prompt\`: prompt, prompt operations, queue, abort, an operation's record and client tool results), and only while the key that minted it is valid (revoking the key ends it). \`ttlSeconds\`: 1–${BROWSER_TOKEN_LIMITS.maxTtlSeconds}, default ${BROWSER_TOKEN_LIMITS.defaultTtlSeconds}. Present it as \`Authorization: Bearer <token>\`, as the WebSocket subprotocol \`bearer.<token>\`, or on GET routes as \`?access_token=<token>\`; anything outside it is 403 \`TokenScope\`, an expired token 401. Nothing is stored; the token is shown this once: a repeat with the same \`Idempotency-Key\` answers 409 \`KeySecretNotReplayed\` (mint another). A browser token cannot mint one (403 \`TokenScope\`). A service without \`SECRETS_KEY\` answers 503 \`NotConfigured\`.`,
    pathParams: SID, body: CreateBrowserTokenSchema, example: { scopes: ["watch", "prompt"], lanes: ["main"], ttlSeconds: 600 }, idempotent: true,
    responses: { 201: { description: "`{ token, expiresAt }` (ms since the epoch)", schema: BrowserTokenSchema } },
    errors: [...SESSION_ERRORS, "NotConfigured", "KeySecretNotReplayed"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/entries", operationId: "listEntries", tag: "Entries", auth: "tenant",
    summary: "Every entry of the session by seq (all branches)", description: PAGED, pathParams: SID, query: EntriesQuerySchema,
    responses: { 200: { description: "A page of entries", schema: EntryPageSchema } },
    errors: SESSION_ERRORS,
  },
  {
    method: "get", path: "/v1/sessions/{sid}/entries/{entryId}", operationId: "getEntry", tag: "Entries", auth: "tenant",
    summary: "Read one entry", pathParams: ENTRY,
    responses: { 200: { description: "The entry", schema: EntrySchema } },
    errors: [...SESSION_ERRORS, "UnknownEntry"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/entries/{entryId}/label", operationId: "getEntryLabel", tag: "Entries", auth: "tenant",
    summary: "Read an entry's label", pathParams: ENTRY,
    responses: { 200: { description: "`{ entryId, label }` (label null when the entry has none)", schema: EntryLabelSchema } },
    errors: [...SESSION_ERRORS, "UnknownEntry"],
  },
  {
    method: "put", path: "/v1/sessions/{sid}/entries/{entryId}/label", operationId: "setEntryLabel", tag: "Entries", auth: "tenant",
    summary: "Label an entry", pathParams: ENTRY, body: LabelSchema, example: { label: "checkpoint" },
    responses: { 200: { description: "`{ entryId, label }`", schema: EntryLabelSchema } },
    errors: [...SESSION_ERRORS, "UnknownEntry", "LimitExceeded"],
  },
  {
    method: "delete", path: "/v1/sessions/{sid}/entries/{entryId}/label", operationId: "deleteEntryLabel", tag: "Entries", auth: "tenant",
    summary: "Remove an entry's label (idempotent)", pathParams: ENTRY,
    responses: { 204: { description: "Removed (or there was none)", content: "none" } },
    errors: SESSION_ERRORS,
  },
  {
    method: "get", path: "/v1/sessions/{sid}/usage", operationId: "getUsage", tag: "Entries", auth: "tenant",
    summary: "The usage ledger and totals", description: `Rows with seq ≥ \`fromSeq\`, ascending; continue with \`fromSeq=nextFromSeq\` (null at the end). ${PAGED.split(";")[0]}.`,
    pathParams: SID, query: UsageQuerySchema,
    responses: { 200: { description: "`{ rows, totals, nextFromSeq }`", schema: UsagePageSchema } },
    errors: SESSION_ERRORS,
  },
  {
    method: "get", path: "/v1/sessions/{sid}/values/{namespace}/{key}", operationId: "getValue", tag: "Values", auth: "tenant",
    summary: "Read an application value", description: "A value set to `null` is a value; an absent one is 404 `NotFound`.",
    pathParams: ADDRESS,
    responses: { 200: { description: "`{ value, seq }`", schema: StoredValueSchema } },
    errors: [...SESSION_ERRORS, "ReservedNamespace", "InvalidAddress", "NotFound"],
  },
  {
    method: "put", path: "/v1/sessions/{sid}/values/{namespace}/{key}", operationId: "putValue", tag: "Values", auth: "tenant",
    summary: "Set an application value", description: "The body is the JSON value itself (`null` included).",
    pathParams: ADDRESS, body: JsonBodySchema, example: { theme: "dark" },
    responses: { 200: { description: "`{ seq }`", schema: SeqSchema } },
    errors: [...SESSION_ERRORS, "ReservedNamespace", "InvalidAddress", "LimitExceeded"],
  },
  {
    method: "delete", path: "/v1/sessions/{sid}/values/{namespace}/{key}", operationId: "deleteValue", tag: "Values", auth: "tenant",
    summary: "Delete an application value (idempotent)", pathParams: ADDRESS,
    responses: { 204: { description: "Deleted (or absent)", content: "none" } },
    errors: [...SESSION_ERRORS, "ReservedNamespace", "InvalidAddress"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/lists/{namespace}/{key}", operationId: "readList", tag: "Values", auth: "tenant",
    summary: "Read a list, a page at a time", description: `An absent list is empty. ${PAGED}`,
    pathParams: ADDRESS, query: ListQuerySchema,
    responses: { 200: { description: "`{ items: [{ seq, value }], nextCursor }`", schema: ListPageSchema } },
    errors: [...SESSION_ERRORS, "ReservedNamespace", "InvalidAddress"],
  },
  {
    method: "post", path: "/v1/sessions/{sid}/lists/{namespace}/{key}", operationId: "appendList", tag: "Values", auth: "tenant",
    summary: "Append one element to a list", description: "The body is the element (any JSON value).",
    pathParams: ADDRESS, body: JsonBodySchema, example: { step: 1 }, idempotent: true,
    responses: { 201: { description: "`{ seq }`", schema: SeqSchema } },
    errors: [...SESSION_ERRORS, "ReservedNamespace", "InvalidAddress", "LimitExceeded"],
  },
  {
    method: "delete", path: "/v1/sessions/{sid}/lists/{namespace}/{key}", operationId: "deleteList", tag: "Values", auth: "tenant",
    summary: "Delete a list", pathParams: ADDRESS,
    responses: { 204: { description: "Deleted (or absent)", content: "none" } },
    errors: [...SESSION_ERRORS, "ReservedNamespace", "InvalidAddress"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/branches", operationId: "listBranches", tag: "Branches", auth: "tenant",
    summary: "List branches",
    description: `Branches by name: \`{ items: [{ name, tipId, lane }], nextCursor }\`; \`lane\` says whether a lane is bound to the branch. ${PAGED}`,
    pathParams: SID, query: NamePageQuerySchema,
    responses: { 200: { description: "A page of branches", schema: BranchPageSchema } },
    errors: SESSION_ERRORS,
  },
  {
    method: "post", path: "/v1/sessions/{sid}/branches", operationId: "createBranch", tag: "Branches", auth: "tenant",
    summary: "Create a branch",
    description: `\`at\` is the tip entry (absent or null: an empty branch). A session holds at most ${SESSION_LIMITS.branches} branches (a lane's branch included): beyond, 422 \`LimitExceeded\`.`,
    pathParams: SID, body: CreateBranchSchema, example: { name: "experiment", at: null }, idempotent: true,
    responses: { 201: { description: "`{ name, tipId }`", schema: BranchSchema } },
    errors: [...SESSION_ERRORS, "BranchExists", "UnknownTarget", "InvalidBranch", "LimitExceeded"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/branches/{name}/entries", operationId: "scanBranch", tag: "Branches", auth: "tenant",
    summary: "Scan a branch (reference §1.6)",
    description: `The root-ward path from \`start\` (default the tip), ordered, with inclusive stops, filters, an exclusive cursor and \`limit\`. ${PAGED}`,
    pathParams: BRANCH, query: BranchEntriesQuerySchema,
    responses: { 200: { description: "A page of entries", schema: EntryPageSchema } },
    errors: [...SESSION_ERRORS, "UnknownBranch", "UnknownTarget"],
  },
  {
    method: "post", path: "/v1/sessions/{sid}/branches/{name}/entries", operationId: "appendBranchEntry", tag: "Branches", auth: "tenant",
    summary: "Append an entry to a branch",
    description: "On a lane's branch this is the lane's operation-aware append (queued as a `write` while busy, `placed: false`); on a plain branch a raw append at the tip.",
    pathParams: BRANCH, body: NewBranchEntrySchema, example: { message: userMessage }, idempotent: true,
    responses: { 201: { description: "`{ entryId, placed }`", schema: EntryPlacementSchema } },
    errors: [...SESSION_ERRORS, "UnknownBranch", "InvalidMessage", "LimitExceeded"],
  },
];
