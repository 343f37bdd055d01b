import { Hono } from "hono";
import { CreateImportSchema, IMPORT_BODY_MAX_BYTES, ImportIdSchema, ImportQuerySchema, PartNumberSchema, type SessionLine } from "../../schema/data-export.ts";
import { toWire } from "../../schema/wire.ts";
import { FIRST_EXPORT_PAGE, type ExportCounts, type ExportCursor } from "../../durable-objects/session/storage/export-pages.ts";
import type { CreatedSession } from "../../schema/session.ts";
import { sessionStub, tenantStub, type AppContext, type AppEnv } from "../env.ts";
import { errorResponse, fail, HttpFailure, replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { idempotent, keyDerivedToken, newId, replayInstead } from "../middleware/idempotency.ts";
import { commitImport, importPart, newImportId, sessionIdOfImport } from "../import-part.ts";
import { jsonBody, pathParam, queryParams } from "../validate.ts";
import { sessionTarget } from "./session-target.ts";
import { registerCreated } from "./session-registration.ts";

// spec/API.md "Data lifecycle", docs/data.md: a session out as JSON Lines, and in again, in one
// request or in parts. Routes mounted under /v1 (each authenticates itself: a router-wide
// middleware here would run for every later /v1 route too).

const tenantIdempotency = idempotent((c) => tenantStub(c.env, c.get("caller").tenantId));
const encoder = new TextEncoder();

export const dataRoutes = new Hono<AppEnv>()
  // Streamed page by page from the object, at the high-water mark taken with the header.
  .get("/sessions/:sid/export", requireTenant, async (c) => {
    const { stub } = sessionTarget(c);
    const { header, highWater } = replyValue(await stub.exportBegin());
    let cursor: ExportCursor | null = FIRST_EXPORT_PAGE;
    const counts: ExportCounts = { entries: 0, values: 0, items: 0, labels: 0, results: 0 };
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode(`${JSON.stringify(exportedHeader(header))}\n`));
      },
      // Each pull enqueues something (a stream pulls again only after a pull that did): empty pages are skipped.
      async pull(controller) {
        while (cursor !== null) {
          const page = replyValue(await stub.exportPage(highWater, toWire(cursor)));
          for (const kind of Object.keys(counts) as (keyof ExportCounts)[]) counts[kind] += page.counts[kind];
          cursor = page.next;
          if (page.lines.length > 0) {
            controller.enqueue(encoder.encode(`${page.lines.join("\n")}\n`));
            return;
          }
        }
        controller.enqueue(encoder.encode(`${JSON.stringify({ type: "end", ...counts })}\n`));
        controller.close();
      },
    });
    return c.body(body, 200, { "content-type": "application/x-ndjson" });
  })
  // One request: begun, written as one part, committed; a failure anywhere leaves nothing.
  .post("/sessions/import", requireTenant, tenantIdempotency, async (c) => {
    const { tenantId } = c.get("caller");
    const query = queryParams(c, ImportQuerySchema);
    const { sessionId, creationToken } = await newSessionId(c, query.id);
    const stub = sessionStub(c.env, tenantId, sessionId);
    const begun = replyValue(await stub.importBegin({ tenantId, sessionId, importId: newImportId(sessionId), ...(creationToken !== undefined && { creationToken }) }));
    if (begun.state === "exists") return created(c, tenantId, begun.session);
    try {
      await importPart(stub, begun.importId, 1, upload(c), IMPORT_BODY_MAX_BYTES);
    } catch (error) {
      await stub.importDiscard(begun.importId).catch(() => undefined);
      // This route has no parts: an empty body is a stream without its header and end lines.
      if (error instanceof HttpFailure && isEmptyPart(error)) throw fail("InvalidImport", "The stream is incomplete: it needs a session header first and an end line last", { reason: "incomplete" });
      throw error;
    }
    return created(c, tenantId, await commitImport(stub, begun.importId, true));
  })
  // The path also reads as the session `import`: its other methods are this route's (405), not that session's.
  .use("/sessions/import/*", async (c, next) => {
    if (c.req.path !== "/v1/sessions/import" || c.req.method === "POST" || c.req.method === "OPTIONS") return next();
    const response = errorResponse(c, { code: "MethodNotAllowed", message: `${c.req.method} is not served here; use POST`, details: { allow: ["POST"] } });
    response.headers.set("Allow", "POST");
    return response;
  })
  .post("/imports", requireTenant, tenantIdempotency, async (c) => {
    const { tenantId } = c.get("caller");
    const body = await jsonBody(c, CreateImportSchema);
    const { sessionId, creationToken } = await newSessionId(c, body.id);
    const begun = replyValue(
      await sessionStub(c.env, tenantId, sessionId).importBegin({ tenantId, sessionId, importId: newImportId(sessionId), ...(creationToken !== undefined && { creationToken }) }),
    );
    if (begun.state === "exists") return created(c, tenantId, begun.session);
    return c.json({ importId: begun.importId, sessionId, expiresAt: begun.expiresAt }, 201);
  })
  .put("/imports/:importId/parts/:part", requireTenant, async (c) => {
    const { stub, importId } = importTarget(c);
    const part = pathParam(c, "part", PartNumberSchema);
    return c.json(await importPart(stub, importId, part, upload(c), IMPORT_BODY_MAX_BYTES));
  })
  .post("/imports/:importId/commit", requireTenant, async (c) => {
    const { stub, importId, tenantId } = importTarget(c);
    return created(c, tenantId, await commitImport(stub, importId, false));
  });

/** The header as exported: a lane's active tools of MCP servers are left out with the servers (docs/data.md). */
function exportedHeader(header: SessionLine): SessionLine {
  const own = new Set(Object.keys(header.tools));
  return { ...header, lanes: header.lanes.map((lane) => ({ ...lane, activeToolNames: lane.activeToolNames.filter((name) => own.has(name)) })) };
}

/** As session creation: with an Idempotency-Key the id (when not given) and the creation token derive from the claimed key. */
async function newSessionId(c: AppContext, id: string | undefined): Promise<{ sessionId: string; creationToken?: string }> {
  const creationToken = await keyDerivedToken(c);
  const sessionId = id ?? newId("s_", 32, creationToken);
  return { sessionId, ...(creationToken !== undefined && { creationToken }) };
}

function upload(c: AppContext) {
  return { body: c.req.raw.body, declaredLength: c.req.header("content-length") };
}

/** The import's object, in the caller's tenant: another tenant's import id names an object that stages nothing (404). */
function importTarget(c: AppContext) {
  const { tenantId } = c.get("caller");
  const importId = pathParam(c, "importId", ImportIdSchema);
  return { tenantId, importId, stub: sessionStub(c.env, tenantId, sessionIdOfImport(importId)) };
}

/** Indexed once it exists, like a created session; new http tool secrets in this answer only. */
async function created(c: AppContext, tenantId: string, view: CreatedSession): Promise<Response> {
  await registerCreated(c.env, tenantId, view);
  const { toolSecrets, ...session } = view;
  if (toolSecrets !== undefined) replayInstead(c, 201, session);
  return c.json(view, 201);
}

function isEmptyPart({ error }: HttpFailure): boolean {
  const details = error.details;
  return error.code === "InvalidImport" && typeof details === "object" && details !== null && !Array.isArray(details) && details.reason === "empty_part";
}
