// The API reference: /openapi.json (fetched with the token) as a list of routes, each with its
// methods, summary, description, parameters and request body schema. Plain JS, no build.
import { api, el, say, withToken } from "./common.js";

// A schema with its $refs replaced by what they name (the document's own components only).
function resolved(schema, document, seen = new Set()) {
  if (Array.isArray(schema)) return schema.map((s) => resolved(s, document, seen));
  if (!schema || typeof schema !== "object") return schema;
  if (typeof schema.$ref === "string" && schema.$ref.startsWith("#/") && !seen.has(schema.$ref)) {
    const target = schema.$ref.slice(2).split("/").reduce((node, key) => node?.[key], document);
    return resolved(target, document, new Set([...seen, schema.$ref]));
  }
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, resolved(v, document, seen)]));
}

function route(path, method, operation, document) {
  const parts = [el("h2", {}, el("span", { class: "method", text: method.toUpperCase() }), path)];
  if (operation.summary) parts.push(el("p", { class: "reason", text: operation.summary }));
  if (operation.description) parts.push(el("p", { text: operation.description }));
  const parameters = operation.parameters || [];
  if (parameters.length) {
    parts.push(el("h3", { text: "Parameters" }), el("ul", {}, ...parameters.map((p) =>
      el("li", { text: `${p.name} (${p.in}${p.required ? ", required" : ""}): ${JSON.stringify(resolved(p.schema, document))}` }),
    )));
  }
  const body = operation.requestBody?.content?.["application/json"]?.schema;
  if (body) {
    parts.push(el("h3", { text: "Request body" }), el("pre", { text: JSON.stringify(resolved(body, document), null, 2) }));
  }
  return el("section", { class: "panel route", id: operation.operationId || `${method}-${path}` }, ...parts);
}

withToken(async () => {
  const document_ = await api("GET", "/openapi.json");
  document.getElementById("title").textContent = `${document_.info.title} ${document_.info.version}: HTTP API`;
  const sections = [];
  for (const [path, methods] of Object.entries(document_.paths)) {
    for (const [method, operation] of Object.entries(methods)) sections.push(route(path, method, operation, document_));
  }
  document.getElementById("routes").replaceChildren(...sections);
  say(`${sections.length} operations.`);
});
