import { env, exports } from "cloudflare:workers";

let counter = 0;

/** A request to the real Hono app in workerd. */
export function call(path: string, init: { method?: string; body?: unknown; rawBody?: string; token?: string; headers?: Record<string, string> } = {}): Promise<Response> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  let body: string | undefined = init.rawBody;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers["content-type"] = "application/json";
  }
  return exports.default.fetch(`http://api.test${path}`, { method: init.method ?? (body === undefined ? "GET" : "POST"), headers, ...(body !== undefined && { body }) });
}

export const adminToken = (): string => env.ADMIN_TOKEN;

/** A fresh tenant with one key. */
export async function newTenant(prefix = "t"): Promise<{ tenantId: string; key: string; keyId: string }> {
  const tenantId = `${prefix}_${Date.now().toString(36)}_${(counter++).toString(36)}`;
  const created = await call("/v1/admin/tenants", { body: { id: tenantId }, token: adminToken() });
  if (created.status !== 201) throw new Error(`tenant creation failed: ${created.status} ${await created.text()}`);
  const key = await call(`/v1/admin/tenants/${tenantId}/keys`, { body: { name: "test" }, token: adminToken() });
  const { keyId, key: secret } = await key.json<{ keyId: string; key: string }>();
  return { tenantId, key: secret, keyId };
}

export async function errorCode(response: Response): Promise<string> {
  const body = await response.json<{ error?: { code?: string } }>();
  return body.error?.code ?? `no error body (${response.status})`;
}

/**
 * Sends wrong credentials until one is refused 429 (bounded: two windows' worth, since a window
 * may end during the run); the answers before it, and the refusal.
 */
export async function untilRefused(send: () => Promise<Response>, bound: number): Promise<{ before: number[]; refused: Response }> {
  const before: number[] = [];
  for (let i = 0; i < bound; i++) {
    const response = await send();
    if (response.status === 429) return { before, refused: response };
    before.push(response.status);
  }
  throw new Error(`no 429 within ${bound} requests`);
}

/** The answer's JSON body, after checking its status (the body is in the error when it differs). */
export async function json<T>(response: Response, status: number): Promise<T> {
  const text = await response.text();
  if (response.status !== status) throw new Error(`expected ${status}, got ${response.status}: ${text}`);
  return JSON.parse(text);
}
