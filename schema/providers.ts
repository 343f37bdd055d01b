import * as v from "valibot";
import { ModelIdentitySchema } from "./lane.ts";

// Tenant provider credentials (bring your own key) and the model catalog: request bodies and answers.

/** Provider ids as pi-ai names them (`openai`, `cloudflare-workers-ai`, …). */
export const ProviderIdSchema = v.pipe(v.string(), v.regex(/^[a-z0-9][a-z0-9-]{0,63}$/, "Provider ids are 1–64 characters of a–z 0–9 -"));

/** The body of `PUT /v1/providers/{provider}`: the key is stored sealed and never shown again. */
export const PutProviderSchema = v.strictObject({
  apiKey: v.pipe(v.string(), v.minLength(1), v.maxLength(4096), v.regex(/^\S+$/, "An API key has no whitespace")),
  baseUrl: v.optional(
    v.pipe(
      v.string(),
      v.maxLength(2048),
      // Requests go to it as written: the deployment's {…} values (a Cloudflare account, a gateway) never fill it.
      v.check((url) => !/[{}]/.test(url), "baseUrl is used as written: put the account (and gateway) in it, not a {…} placeholder"),
    ),
  ),
});
export type PutProvider = v.InferOutput<typeof PutProviderSchema>;

/** One row of `GET /v1/providers`: where the provider's key comes from, never the key itself. */
export const ProviderKeyInfoSchema = v.object({
  provider: v.string(),
  source: v.picklist(["tenant", "deployment"]),
  /** The last four characters of a tenant key (`…abcd`); absent for the deployment's keys. */
  keyHint: v.optional(v.string()),
  baseUrl: v.optional(v.string()),
});
export type ProviderKeyInfo = v.InferOutput<typeof ProviderKeyInfoSchema>;

/** The body of `PUT /v1/me/default-model`, and its answer: the tenant's default model of new lanes. */
export const DefaultModelSchema = v.strictObject(ModelIdentitySchema.entries);

/** One row of `GET /v1/models`; prices are dollars per million tokens. */
export const ModelInfoSchema = v.object({
  provider: v.string(),
  modelId: v.string(),
  name: v.string(),
  contextWindow: v.number(),
  maxTokens: v.number(),
  input: v.array(v.string()),
  reasoning: v.boolean(),
  cost: v.object({ input: v.number(), output: v.number(), cacheRead: v.number(), cacheWrite: v.number() }),
});
