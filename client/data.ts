import type { CreatedImportSchema, ExportLine, ImportPartAnswerSchema } from "../schema/data-export.ts";
import type { InferOutput } from "valibot";
export type { ExportLine };
import { path, type CallOptions, type HttpClient } from "./http.ts";
import { sessionPath } from "./sessions.ts";
import type { CreatedSession } from "./types.ts";

export type CreatedImport = InferOutput<typeof CreatedImportSchema>;
export type ImportPartAnswer = InferOutput<typeof ImportPartAnswerSchema>;
/** A JSON Lines body: text, bytes, a Blob, or a stream (an export read as it arrives). */
export type LinesBody = string | Uint8Array<ArrayBuffer> | Blob | ReadableStream<Uint8Array>;

const NDJSON = "application/x-ndjson";

/** Export and import of sessions as JSON Lines (docs/data.md). */
export class DataApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /** `GET /v1/sessions/{sid}/export`: the export as a byte stream (pipe it to a file, or to `importSession`). */
  async exportStream(sessionId: string, options: CallOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const response = await this.http.raw({ ...options, method: "GET", path: sessionPath(sessionId, "/export") });
    if (!response.body) throw new TypeError("The export answered no body");
    return response.body;
  }

  /** The export line by line, parsed, read as it arrives: `for await (const line of client.data.exportLines(id)) …`. */
  async *exportLines(sessionId: string, options: CallOptions = {}): AsyncGenerator<ExportLine, void, undefined> {
    const reader = (await this.exportStream(sessionId, options)).getReader();
    const decoder = new TextDecoder();
    let partial = "";
    let finished = false;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const lines = (partial + decoder.decode(value, { stream: true })).split("\n");
        partial = lines.pop() ?? "";
        for (const line of lines) if (line.trim() !== "") yield JSON.parse(line);
      }
      finished = true;
      partial += decoder.decode();
      if (partial.trim() !== "") yield JSON.parse(partial);
    } finally {
      // A loop that stopped early (break, return, a throw) leaves the download: it is cancelled, not left open.
      if (!finished) await reader.cancel().catch(() => undefined);
      reader.releaseLock();
    }
  }

  /**
   * `POST /v1/sessions/import?id=` → 201 the new Session (`toolSecrets`: new secrets of its http
   * tools, shown this once). Up to 90 MiB; larger exports go in parts (`beginImport`). Accepts
   * `idempotencyKey`: a retry gets the session the first attempt made.
   */
  async importSession(body: LinesBody, query: { id?: string } = {}, options: CallOptions = {}): Promise<CreatedSession> {
    const response = await this.http.raw({ ...options, method: "POST", path: "/v1/sessions/import", query: { id: query.id } }, { data: body, contentType: NDJSON });
    return response.json();
  }

  /** `POST /v1/imports` `{ id? }` → 201 `{ importId, sessionId, expiresAt }`: an import in parts. Accepts `idempotencyKey`. */
  beginImport(body: { id?: string } = {}, options: CallOptions = {}): Promise<CreatedImport> {
    return this.http.json({ ...options, method: "POST", path: "/v1/imports", body });
  }

  /** `PUT /v1/imports/{importId}/parts/{part}`: part 1, 2, … in order, each whole lines (a part already written answers `repeated: true`). */
  async putImportPart(importId: string, part: number, body: LinesBody, options: CallOptions = {}): Promise<ImportPartAnswer> {
    const response = await this.http.raw({ ...options, method: "PUT", path: `/v1/imports${path(importId)}/parts/${part}` }, { data: body, contentType: NDJSON });
    return response.json();
  }

  /** `POST /v1/imports/{importId}/commit` → 201 the new Session (a repeat answers it again, without `toolSecrets`). */
  commitImport(importId: string, options: CallOptions = {}): Promise<CreatedSession> {
    return this.http.json({ ...options, method: "POST", path: `/v1/imports${path(importId)}/commit` });
  }
}
