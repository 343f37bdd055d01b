import { Hono } from "hono";
import { isReservedNamespace } from "../../harness/session/addresses.ts";
import { AddressParamsSchema, JsonBodySchema, ListQuerySchema } from "../../schema/api-sessions.ts";
import { toWire } from "../../schema/wire.ts";
import type { AppContext, AppEnv } from "../env.ts";
import { fail, jsonAnswer, replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { jsonBody, queryParams, validate } from "../validate.ts";
import { sessionIdempotency, sessionTarget } from "./session-target.ts";
import { idempotencyScope } from "../middleware/idempotency.ts";

// Application values and lists (spec/API.md "Sessions"). `{namespace}` and `{key}` are single,
// URL-decoded path segments (encode `/` as %2F); the runtime's `pi` and `pi.*` namespaces are
// refused here (400 ReservedNamespace) before the object is touched, and again by the object.

function addressTarget(c: AppContext) {
  const target = sessionTarget(c);
  const { namespace, key } = validate(AddressParamsSchema, { namespace: c.req.param("namespace"), key: c.req.param("key") }, "path");
  if (isReservedNamespace(namespace)) throw fail("ReservedNamespace", `Namespace "${namespace}" is reserved for the runtime`, { namespace });
  return { ...target, namespace, key };
}

/** Mounted at `/v1/sessions/:sid/values`. The body of PUT is the JSON value itself (`null` included). */
export const valueRoutes = new Hono<AppEnv>()
  .use(requireTenant)
  // `{ value, seq }`; a value set to null answers `{ value: null, seq }`, an absent one 404.
  .get("/:namespace/:key", async (c) => {
    const { stub, namespace, key } = addressTarget(c);
    return jsonAnswer(c, await stub.valueJson(namespace, key));
  })
  .put("/:namespace/:key", async (c) => {
    const { stub, namespace, key } = addressTarget(c);
    const value = await jsonBody(c, JsonBodySchema);
    return c.json(replyValue(await stub.setValue(namespace, key, toWire(value))));
  })
  // Idempotent: deleting an absent value is a no-op.
  .delete("/:namespace/:key", async (c) => {
    const { stub, namespace, key } = addressTarget(c);
    replyValue(await stub.deleteValue(namespace, key));
    return c.body(null, 204);
  });

/** Mounted at `/v1/sessions/:sid/lists`. The body of POST is the one element to append. */
export const listRoutes = new Hono<AppEnv>()
  .use(requireTenant)
  // `{ items: [{ seq, value }], nextCursor }`; an absent list is empty.
  .get("/:namespace/:key", async (c) => {
    const { stub, namespace, key } = addressTarget(c);
    const { order, limit, cursor } = queryParams(c, ListQuerySchema);
    return jsonAnswer(c, await stub.listJson(namespace, key, { order, limit, ...(cursor && { cursor }) }));
  })
  .post("/:namespace/:key", sessionIdempotency, async (c) => {
    const { stub, namespace, key } = addressTarget(c);
    const element = await jsonBody(c, JsonBodySchema);
    return c.json(replyValue(await stub.appendList(namespace, key, toWire(element), idempotencyScope(c))), 201);
  })
  .delete("/:namespace/:key", async (c) => {
    const { stub, namespace, key } = addressTarget(c);
    replyValue(await stub.deleteList(namespace, key));
    return c.body(null, 204);
  });
