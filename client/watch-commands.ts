import type { AbortOutcome, AcceptedOperationSchema } from "../schema/lane-answers.ts";
import type { EnqueueSchema, IfBusy } from "../schema/lane-api.ts";
import type { DeferredMode } from "../schema/settings.ts";
import type { ImageContent } from "../schema/messages.ts";
import * as v from "valibot";
import { MAX_WATCH_COMMAND_BYTES, WatchCommandIdSchema } from "../schema/watch.ts";
import { errorFromResponse, type ApiRequestError } from "./http.ts";
import type { PromptInput } from "./types.ts";

// Commands on an open lane watch (docs/api-watch.md "Commands on the socket"): a prompt, a queued
// message or an abort sent as a frame with a client id and answered by a `reply` frame carrying
// what the REST twin answers, without an HTTP request per turn. A command whose reply has not
// come when the socket is lost is sent again, with the same id, on the next socket: the server
// answers a repeated id with the first answer and does nothing twice.

/** A queued message: text, or a message. */
export type QueueMessage = v.InferOutput<typeof EnqueueSchema>["message"];

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
  prompt(prompt: PromptInput, options?: SocketPromptOptions): Promise<v.InferOutput<typeof AcceptedOperationSchema>>;
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
const encoder = new TextEncoder();

export class PendingCommands {
  private readonly pending = new Map<string, Pending>();
  private readonly waits = new Set<ReturnType<typeof setTimeout>>();
  private readonly resend: (frame: string) => void;
  private readonly newId: () => string;

  /** `resend`: sends a frame on the socket now open, if one has its snapshot (else the next one sends it). */
  constructor(resend: (frame: string) => void = () => undefined, newId: () => string = () => crypto.randomUUID()) {
    this.resend = resend;
    this.newId = newId;
  }

  /**
   * Registers a command and returns its frame (to send now, or on the next socket) and its answer:
   * the body its REST twin answers, typed as that twin's (as the HTTP client types a JSON body).
   * An id still waiting for its answer is refused at once (no frame): two commands under one id
   * could not both be answered.
   */
  add<T>(command: Record<string, unknown> & { id?: string | undefined }): { frame: string | undefined; answer: Promise<T> } {
    const id = command.id ?? this.newId();
    if (this.pending.has(id)) return { frame: undefined, answer: Promise.reject(new TypeError(`A command with id ${id} is still waiting for its answer on this watch`)) };
    // A frame the server cannot take as a command closes the whole socket (1008): refused here, alone.
    if (!v.is(WatchCommandIdSchema, id)) return { frame: undefined, answer: Promise.reject(new TypeError(`Command id ${JSON.stringify(id)} is not 1–64 characters of A–Z a–z 0–9 _ . : -`)) };
    const frame = JSON.stringify({ ...command, id });
    if (encoder.encode(frame).byteLength > MAX_WATCH_COMMAND_BYTES) {
      const body = { error: { code: "PayloadTooLarge", message: `A command frame holds at most ${MAX_WATCH_COMMAND_BYTES} bytes; send this one over REST` } };
      return { frame: undefined, answer: Promise.reject(errorFromResponse(new Response(null, { status: 413 }), JSON.stringify(body))) };
    }
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
    const id = parsed.id;
    const entry = this.pending.get(id);
    if (!entry) return true;
    const status = "status" in parsed && typeof parsed.status === "number" ? parsed.status : 500;
    const body = "body" in parsed ? parsed.body : undefined;
    if (status < 400) {
      this.pending.delete(id);
      entry.resolve(body);
      return true;
    }
    // As its REST twin's error; a 429's wait comes from the body (a frame has no Retry-After).
    const error = errorFromResponse(new Response(null, { status }), JSON.stringify(body ?? {}));
    // The first send is still being answered (its reply went to a socket since lost): not an
    // answer. The same frame goes again once the server's wait has passed, and the command waits.
    if (error.code === "IdempotencyInProgress") {
      const wait = setTimeout(() => {
        this.waits.delete(wait);
        if (this.pending.get(id) === entry) this.resend(entry.frame);
      }, retryAfterSeconds(error) * 1000);
      this.waits.add(wait);
      return true;
    }
    this.pending.delete(id);
    entry.reject(error);
    return true;
  }

  /** The watch ended: every command still unanswered fails with `error`. */
  failAll(error: Error): void {
    for (const wait of this.waits) clearTimeout(wait);
    this.waits.clear();
    for (const entry of this.pending.values()) entry.reject(error);
    this.pending.clear();
  }
}

/** The wait a 409 `IdempotencyInProgress` names (`details.retryAfterSeconds`), 1–60 s. */
function retryAfterSeconds(error: ApiRequestError): number {
  return Math.min(60, Math.max(1, error.retryAfter ?? 1));
}
