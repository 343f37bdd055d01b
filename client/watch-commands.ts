import type { AbortOutcome, AcceptedOperationSchema } from "../schema/lane-answers.ts";
import type { EnqueueSchema, IfBusy } from "../schema/lane-api.ts";
import type { DeferredMode } from "../schema/settings.ts";
import type { ImageContent } from "../schema/messages.ts";
import type { InferOutput } from "valibot";
import { errorFromResponse } from "./http.ts";
import type { PromptInput } from "./types.ts";

// Commands on an open lane watch (docs/api-watch.md "Commands on the socket"): a prompt, a queued
// message or an abort sent as a frame with a client id and answered by a `reply` frame carrying
// what the REST twin answers, without an HTTP request per turn. A command whose reply has not
// come when the socket is lost is sent again, with the same id, on the next socket: the server
// answers a repeated id with the first answer and does nothing twice.

/** A queued message: text, or a message. */
export type QueueMessage = InferOutput<typeof EnqueueSchema>["message"];

/** `prompt` on the socket: the REST prompt's options but `wait` (the events tell the rest). */
export interface SocketPromptOptions {
  images?: ImageContent[];
  operationId?: string;
  deferred?: DeferredMode;
  ifBusy?: IfBusy;
  /** The command's id (1–64 of A–Z a–z 0–9 _ . : -); a fresh one by default. */
  id?: string;
}

/** What the lane socket's commands answer: the REST twins' bodies. */
export interface LaneCommands {
  /** `POST …/operations` (`kind: "prompt"`): the admission, a pending run or the queued prompt (`ifBusy`). */
  prompt(prompt: PromptInput, options?: SocketPromptOptions): Promise<InferOutput<typeof AcceptedOperationSchema>>;
  /** `POST …/queue` `kind: "steer"`. */
  steer(message: QueueMessage, options?: { id?: string }): Promise<{ entryId: string }>;
  /** `POST …/queue` `kind: "followUp"`. */
  followUp(message: QueueMessage, options?: { id?: string }): Promise<{ entryId: string }>;
  /** `POST …/abort` without a wait: the current operation's abort request. */
  abort(options?: { id?: string }): Promise<AbortOutcome>;
}

interface Pending {
  frame: string;
  resolve(body: unknown): void;
  reject(error: Error): void;
}

/** The commands in flight on a watch, their replies, and their resending on a new socket. */
export class PendingCommands {
  private readonly pending = new Map<string, Pending>();
  private readonly newId: () => string;

  constructor(newId: () => string = () => crypto.randomUUID()) {
    this.newId = newId;
  }

  /**
   * Registers a command and returns its frame (to send now, or on the next socket) and its answer:
   * the body its REST twin answers, typed as that twin's (as the HTTP client types a JSON body).
   */
  add<T>(command: Record<string, unknown> & { id?: string | undefined }): { frame: string; answer: Promise<T> } {
    const id = command.id ?? this.newId();
    const frame = JSON.stringify({ ...command, id });
    const answer = new Promise<T>((resolve, reject) => this.pending.set(id, { frame, resolve: (body) => resolve(body as T), reject }));
    return { frame, answer };
  }

  /** Frames still unanswered, in the order they were sent. */
  unanswered(): string[] {
    return [...this.pending.values()].map((entry) => entry.frame);
  }

  /** Settles the command a `reply` frame answers; false when `text` is no reply of ours. */
  reply(text: string): boolean {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return false;
    }
    if (typeof parsed !== "object" || parsed === null || !("type" in parsed) || parsed.type !== "reply" || !("id" in parsed) || typeof parsed.id !== "string") return false;
    const entry = this.pending.get(parsed.id);
    if (!entry) return true;
    this.pending.delete(parsed.id);
    const status = "status" in parsed && typeof parsed.status === "number" ? parsed.status : 500;
    const body = "body" in parsed ? parsed.body : undefined;
    if (status < 400) entry.resolve(body);
    else entry.reject(errorFromResponse(new Response(null, { status }), JSON.stringify(body ?? {})));
    return true;
  }

  /** The watch ended: every command still unanswered fails with `error`. */
  failAll(error: Error): void {
    for (const entry of this.pending.values()) entry.reject(error);
    this.pending.clear();
  }
}
