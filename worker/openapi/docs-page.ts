/** The title of the /docs page. */
export const DOCS_TITLE = "Durable Agent Sessions API reference";

/**
 * /docs: a self-contained page (no CDN, no external script or style) that fetches /openapi.json
 * and renders it grouped by tag: method, path, summary, auth, parameters, request body schema and
 * answers, then the shared schemas. Everything is inserted as text, never as HTML.
 */
export const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${DOCS_TITLE}</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1d1f23; background: #fafafa; }
header, main { max-width: 70rem; margin: 0 auto; padding: 1rem 1.5rem; }
header { border-bottom: 1px solid #ddd; }
nav a { margin-right: .8rem; }
h2 { margin-top: 2rem; border-bottom: 2px solid #ccd; }
details { background: #fff; border: 1px solid #ddd; border-radius: 6px; margin: .4rem 0; }
summary { cursor: pointer; padding: .45rem .7rem; }
details > div { padding: 0 1rem .8rem; }
.m { display: inline-block; width: 4.2rem; font: bold 12px monospace; text-transform: uppercase; }
.get { color: #17803d; } .post { color: #1b5fc1; } .put { color: #a35b00; } .patch { color: #7a3db8; } .delete { color: #c0262d; }
.path { font-family: ui-monospace, monospace; }
.auth { float: right; font-size: 12px; color: #555; border: 1px solid #bbb; border-radius: 9px; padding: 0 .5rem; }
pre { background: #f3f4f6; padding: .6rem; overflow: auto; font-size: 12.5px; max-height: 28rem; }
table { border-collapse: collapse; } td, th { text-align: left; padding: .2rem .8rem .2rem 0; vertical-align: top; }
code { font-size: 13px; }
</style>
</head>
<body>
<header><h1>${DOCS_TITLE}</h1><p id="intro">Loading <a href="/openapi.json">/openapi.json</a>…</p><nav id="nav"></nav></header>
<main id="main"></main>
<script>
"use strict";
const el = (tag, attrs, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  for (const child of children) if (child !== undefined && child !== null) node.append(child);
  return node;
};
const json = (value) => el("pre", {}, JSON.stringify(value, null, 2));
const AUTH = { tenant: "tenant key", admin: "admin token", none: "no auth" };
const main = document.getElementById("main");
const nav = document.getElementById("nav");

function paramTable(params, doc) {
  const rows = params.map((p) => (p.$ref ? doc.components.parameters[p.$ref.split("/").pop()] : p));
  return el("table", {}, el("tr", {}, el("th", {}, "Name"), el("th", {}, "In"), el("th", {}, "Required"), el("th", {}, "Schema")),
    ...rows.map((p) => el("tr", {}, el("td", {}, el("code", {}, p.name)), el("td", {}, p.in), el("td", {}, p.required ? "yes" : "no"),
      el("td", {}, el("code", {}, JSON.stringify(p.schema)), p.description ? el("div", {}, p.description) : null))));
}

function operation(method, path, op, doc) {
  const body = el("div", {});
  if (op.description) body.append(el("p", {}, op.description));
  if (op.parameters.length) body.append(el("h4", {}, "Parameters"), paramTable(op.parameters, doc));
  const request = op.requestBody && op.requestBody.content["application/json"];
  if (request) {
    body.append(el("h4", {}, "Request body" + (op.requestBody.required ? "" : " (optional)")), json(request.schema));
    if (request.example !== undefined) body.append(el("div", {}, "Example:"), json(request.example));
  }
  body.append(el("h4", {}, "Responses"));
  for (const [status, answer] of Object.entries(op.responses)) {
    const media = answer.content ? Object.entries(answer.content)[0] : undefined;
    body.append(el("div", {}, el("strong", {}, status + " "), answer.description, media ? " (" + media[0] + ")" : ""));
    if (media && media[1].schema && !answer["x-error-codes"]) body.append(json(media[1].schema));
  }
  return el("details", { id: op.operationId },
    el("summary", {}, el("span", { class: "m " + method }, method), el("span", { class: "path" }, path), " — " + op.summary,
      el("span", { class: "auth" }, AUTH[op["x-auth"]] || "")), body);
}

function render(doc) {
  document.getElementById("intro").textContent = doc.info.title + " " + doc.info.version + ". " + doc.info.description;
  const byTag = new Map(doc.tags.map((tag) => [tag.name, []]));
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item)) byTag.get(op.tags[0]).push(operation(method, path, op, doc));
  for (const tag of doc.tags) {
    nav.append(el("a", { href: "#tag-" + tag.name }, tag.name));
    main.append(el("h2", { id: "tag-" + tag.name }, tag.name), el("p", {}, tag.description), ...byTag.get(tag.name));
  }
  nav.append(el("a", { href: "#schemas" }, "Schemas"));
  main.append(el("h2", { id: "schemas" }, "Schemas"));
  for (const [name, schema] of Object.entries(doc.components.schemas))
    main.append(el("details", { id: "schema-" + name }, el("summary", {}, el("code", {}, name)), el("div", {}, json(schema))));
}

fetch("/openapi.json")
  .then((response) => (response.ok ? response.json() : Promise.reject(new Error("HTTP " + response.status))))
  .then(render)
  .catch((error) => { document.getElementById("intro").textContent = "Could not load /openapi.json: " + error.message; });
</script>
</body>
</html>
`;
