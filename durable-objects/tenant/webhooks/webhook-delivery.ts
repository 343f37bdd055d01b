import { openSecret, sealSecret, secretBoxKey } from "../../../secrets/secret-box.ts";
import { hmacHex } from "../../../tools/http-tool.ts";
import { noAnswerWithin, notContacted, unreachable } from "../../../tools/outbound-failure.ts";
import type { AttemptOutcome, DueDelivery, TenantWebhooks } from "./tenant-webhooks.ts";

/** Deliveries one alarm run attempts; more due ones make the alarm run again at once. */
export const DELIVERY_BATCH = 20;
/** Endpoints sent to at once within a run; each endpoint has at most one attempt in flight. */
export const DELIVERY_PARALLELISM = 4;
/** Deliveries of one endpoint one run attempts, one after another, while it answers. */
export const DELIVERIES_PER_ENDPOINT_RUN = DELIVERY_BATCH / DELIVERY_PARALLELISM;
/** An endpoint that has not answered (headers) within this long has failed the attempt. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/**
 * No attempt starts once a run is this old: what is left stays due, and the alarm comes back at
 * once. The alarm is the tenant's one (watch revocations and deletions wait for the run), so hanging
 * endpoints hold it at most this plus one timeout, however many there are.
 */
export const DELIVERY_RUN_BUDGET_MS = DELIVERY_TIMEOUT_MS;

/** Where an endpoint's secret lives: a seal copied to another tenant's or endpoint's row does not open. */
const secretContext = (tenantId: string, endpointId: string): string => `tenant:${tenantId}/webhook:${endpointId}`;

/** A fresh signing secret: 32 random bytes, `whsec_` + base64url. */
export function newWebhookSecret(): string {
  const raw = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...raw)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
}

/** Sealed under its own purpose ("webhook-secret"), bound to tenant and endpoint. */
export async function sealWebhookSecret(secretsKey: string | undefined, tenantId: string, endpointId: string, secret: string): Promise<string> {
  return sealSecret(await secretBoxKey(secretsKey, "webhook-secret"), secret, secretContext(tenantId, endpointId));
}

/** The headers of one signed attempt: the same scheme as http tools, over `timestamp + "." + body`. */
export async function signedHeaders(secret: string, eventId: string, body: string, now: number): Promise<Record<string, string>> {
  const timestamp = String(Math.floor(now / 1000));
  return {
    "content-type": "application/json",
    "webhook-id": eventId,
    "webhook-timestamp": timestamp,
    "webhook-signature": `sha256=${await hmacHex(secret, `${timestamp}.${body}`)}`,
  };
}

export interface DeliverySettings {
  tenantId: string;
  secretsKey: string | undefined;
  /** Whether loopback http endpoints may be called (local development). */
  allowLoopback: boolean;
  fetch?: typeof fetch;
}

/**
 * One alarm run of the tenant's webhook outbox: the due deliveries are read first (one synchronous
 * turn), sent without holding anything (signing and the POSTs are awaits), and each outcome is
 * written in a turn of its own. Returns when the outbox next wants the alarm. Only the alarm calls
 * this, and one alarm runs at a time, so no delivery is sent twice at once; a run lost to a crash
 * is repeated, which the event id makes harmless for receivers. One endpoint's deliveries are sent
 * one after another, each only while it is still due: an endpoint that an outcome has just
 * disabled (webhook-schedule.ts), or that its tenant disabled or deleted meanwhile, is sent no more.
 * An endpoint's first attempt that times out ends its turn in the run (a hanging one holds the run
 * one timeout, not one per delivery): its other due deliveries wait for the next run, which the
 * alarm makes at once, as it does for what the run's budget left.
 */
export async function deliverDue(webhooks: TenantWebhooks, settings: DeliverySettings, now: number, clock: () => number = Date.now): Promise<number | undefined> {
  const due = webhooks.due(now, DELIVERY_BATCH, DELIVERIES_PER_ENDPOINT_RUN);
  if (due.length === 0) return webhooks.nextDue();
  const key = await secretBoxKey(settings.secretsKey, "webhook-secret");
  const secrets = new Map<string, Promise<string>>();
  const secretOf = (delivery: DueDelivery): Promise<string> => {
    let secret = secrets.get(delivery.endpointId);
    if (!secret) {
      secret = openSecret(key, delivery.sealedSecret, secretContext(settings.tenantId, delivery.endpointId));
      secrets.set(delivery.endpointId, secret);
    }
    return secret;
  };
  const byEndpoint = new Map<string, DueDelivery[]>();
  for (const delivery of due) byEndpoint.set(delivery.endpointId, [...(byEndpoint.get(delivery.endpointId) ?? []), delivery]);
  const queues = [...byEndpoint.values()];
  let next = 0;
  const startedAt = clock();
  const withinBudget = () => clock() - startedAt < DELIVERY_RUN_BUDGET_MS;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < queues.length && withinBudget(); i = next++) {
      for (const delivery of queues[i] ?? []) {
        if (!withinBudget()) return;
        const outcome = await attempt(delivery, secretOf, settings, () => webhooks.stillDue(delivery));
        if (outcome === undefined) continue;
        webhooks.recordAttempt(delivery, outcome, clock());
        if (!outcome.delivered && outcome.timedOut) break;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(DELIVERY_PARALLELISM, queues.length) }, worker));
  return webhooks.nextDue();
}

/**
 * One attempt, or undefined when the delivery is no longer due (`stillDue`): checked before any
 * work, and again right before the POST with no await in between, since the object answers other
 * calls while the secret is opened and the body signed, and a DELETE or a disabling answered then
 * must not be followed by a POST.
 */
async function attempt(
  delivery: DueDelivery,
  secretOf: (delivery: DueDelivery) => Promise<string>,
  settings: DeliverySettings,
  stillDue: () => boolean,
): Promise<AttemptOutcome | undefined> {
  if (!stillDue()) return undefined;
  // Checked again at every attempt: an endpoint registered in local development is not called elsewhere.
  const refused = notContacted("the endpoint", delivery.url, settings.allowLoopback);
  if (refused) return { delivered: false, error: `blocked: ${refused}` };
  const send = settings.fetch ?? fetch;
  let secret: string;
  try {
    secret = await secretOf(delivery);
  } catch {
    return { delivered: false, error: "the signing secret could not be opened" };
  }
  const headers = await signedHeaders(secret, delivery.eventId, delivery.body, Date.now());
  if (!stillDue()) return undefined;
  try {
    const response = await send(delivery.url, {
      method: "POST",
      headers,
      body: delivery.body,
      // A redirect is an answer that is not 2xx: the endpoint must be registered where it is.
      redirect: "manual",
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
    });
    await response.body?.cancel().catch(() => undefined);
    if (response.status >= 200 && response.status <= 299) return { delivered: true, statusCode: response.status };
    return { delivered: false, statusCode: response.status, error: `HTTP ${response.status}` };
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
    // Whatever the runtime said (refused, reset, DNS, TLS) is not repeated (tools/outbound-failure.ts).
    if (timedOut) return { delivered: false, timedOut: true, error: `timeout: ${noAnswerWithin("the endpoint", DELIVERY_TIMEOUT_MS)}` };
    return { delivered: false, error: `unreachable: ${unreachable("the endpoint")}` };
  }
}
