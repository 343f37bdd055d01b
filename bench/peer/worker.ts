import { AIChatAgent, type OnChatMessageOptions } from "@cloudflare/ai-chat";
import { routeAgentRequest } from "agents";
import { convertToModelMessages, streamText, type GenerateTextOnFinishCallback, type ToolSet } from "ai";
import { echoModel } from "./echo-model.ts";
import { countInvocations, installStorageTally, storageTally } from "./storage-tally.ts";

/** AIChatAgent requires an Env extending the global `Cloudflare.Env` (the product's bindings in this repository); the peer itself has only `PeerChat` (bench/peer/wrangler.toml). */
type PeerEnv = Cloudflare.Env & {
  PeerChat: DurableObjectNamespace<PeerChat>;
};

/**
 * The peer: an `AIChatAgent` (SQLite-backed Durable Object) as the SDK's documentation builds one,
 * answering with the echo model. Messages are persisted by the SDK itself; the client protocol is
 * the SDK's WebSocket chat protocol (`useAgentChat`).
 */
export class PeerChat extends AIChatAgent<PeerEnv> {
  constructor(ctx: DurableObjectState, env: PeerEnv) {
    super(ctx, env);
    // Counts this isolate's SQL writes, rows read and storage puts/deletes from here on (bench only).
    installStorageTally(ctx.storage);
    // And its incoming socket messages and alarms, the billed invocations a turn adds (bench only).
    countInvocations(this);
  }

  override async onChatMessage(_onFinish: GenerateTextOnFinishCallback<ToolSet>, options?: OnChatMessageOptions): Promise<Response> {
    const messages = await convertToModelMessages(this.messages);
    const result = streamText({ model: echoModel(messages), messages, ...(options?.abortSignal && { abortSignal: options.abortSignal }) });
    return result.toUIMessageStreamResponse();
  }

  /**
   * What the bench reads about this object: `/tally` the storage tally alone (it runs no SQL, so
   * reading it does not move it), `/stats` the database size, the tables' row counts and the
   * number of messages.
   */
  override async onRequest(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path.endsWith("/tally")) return Response.json(storageTally());
    if (path.endsWith("/stats")) {
      const tables = this.ctx.storage.sql
        .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
        .toArray()
        .map(({ name }) => name);
      const rows = Object.fromEntries(tables.map((name) => [name, this.ctx.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM "${name}"`).one().n]));
      return Response.json({ databaseSize: this.ctx.storage.sql.databaseSize, rows, messages: this.messages.length });
    }
    return new Response("not found", { status: 404 });
  }
}

export default {
  async fetch(request: Request, env: PeerEnv): Promise<Response> {
    return (await routeAgentRequest(request, env)) ?? new Response("not found", { status: 404 });
  },
} satisfies ExportedHandler<PeerEnv>;
