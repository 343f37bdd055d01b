// Bundled in place of `ajv` and `ajv-formats` (wrangler.toml [alias]). The MCP SDK's client imports
// them for its default JSON Schema validator, but this service always passes the Workers-safe
// validator (tools/mcp-connection.ts): ajv compiles schemas with `new Function`, which workerd
// refuses. So they never run here; leaving them out keeps ~290 KiB of code out of the worker that
// every cold start would load. Should anything ever construct the default validator, it fails loudly.
export default function ajvIsNotBundled(): never {
  throw new Error("ajv is not bundled in this worker: pass the MCP client a jsonSchemaValidator");
}
