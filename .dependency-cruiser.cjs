// The project's import rules, checked by `npm run deps` (part of `npm test`).
// Layers flow one way: worker → durable-objects → models/tools → harness → schema. The engine
// (harness/) stays runtime-neutral: nothing from the platform, the objects or the edge. The SDK
// (client/) and the Inspector page ship to users and see only the wire types.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "An import circle hides which module is the lower one; move the shared piece down.",
      from: {},
      to: { circular: true },
    },
    {
      name: "schema-imports-nothing-of-ours",
      severity: "error",
      comment: "schema/ is the one source of wire types; it depends on valibot only.",
      from: { path: "^schema/" },
      to: { path: "^(worker|durable-objects|models|tools|harness|secrets|client|inspector)/" },
    },
    {
      name: "secrets-import-nothing-of-ours",
      severity: "error",
      comment: "secrets/ is encryption at rest, imported by everyone; it depends on the platform's crypto only.",
      from: { path: "^secrets/" },
      to: { path: "^(worker|durable-objects|models|tools|harness|schema|client|inspector)/" },
    },
    {
      name: "harness-is-the-engine",
      severity: "error",
      comment: "harness/ imports nothing from the platform, the objects, the edge, providers or tool kinds.",
      from: { path: "^harness/" },
      to: { path: "^(cloudflare:|worker/|durable-objects/|models/|tools/|secrets/|client/|inspector/)" },
    },
    {
      name: "models-and-tools-below-the-objects",
      severity: "error",
      comment: "models/, tools/ and secrets/ sit under the objects and beside each other.",
      from: { path: "^(models|tools|secrets)/" },
      to: { path: "^(cloudflare:|worker/|durable-objects/|client/|inspector/)" },
    },
    {
      name: "models-and-tools-stay-apart",
      severity: "error",
      from: { path: "^models/" },
      to: { path: "^tools/" },
    },
    {
      name: "tools-and-models-stay-apart",
      severity: "error",
      from: { path: "^tools/" },
      to: { path: "^models/" },
    },
    {
      name: "objects-below-the-edge",
      severity: "error",
      comment: "durable-objects/ never reaches up into the front worker.",
      from: { path: "^durable-objects/" },
      to: { path: "^(worker|client|inspector)/" },
    },
    {
      name: "client-sees-wire-types-only",
      severity: "error",
      comment: "The SDK and the Inspector ship to users: they import the wire types and nothing of the server.",
      from: { path: "^(client|inspector)/" },
      to: { path: "^(cloudflare:|worker/|durable-objects/|models/|tools/|harness/|secrets/)" },
    },
    {
      name: "inspector-is-above-the-client",
      severity: "error",
      from: { path: "^client/" },
      to: { path: "^inspector/" },
    },
    {
      name: "product-never-imports-tests",
      severity: "error",
      from: { path: "^(worker|durable-objects|models|tools|harness|schema|secrets|client|inspector)/" },
      to: { path: "^(test|bench|scripts)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)node_modules/|\\.d\\.ts$" },
    // Type-only imports count: a circle of types is still a circle a reader has to untangle.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
  },
};
