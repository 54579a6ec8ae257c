// The inspector: one store's plan and why, its namespaces, a paged record browser with forget and
// update, and a query view that shows each passage kept (its channels, score, floor or fill,
// parent) and the units left out just after the cut. Every datum comes from the guarded API.
import { api, el, NeedsToken, say, withToken } from "./common.js";

const PAGE = 20;
const $ = (id) => document.getElementById(id);
const state = { namespace: null, offset: 0, total: 0, channels: [], editing: null };

function query(params) {
  const shown = Object.entries(params).filter(([, v]) => v !== null && v !== undefined);
  return new URLSearchParams(shown).toString();
}

// --- plan and namespaces -------------------------------------------------------------------

async function loadInfo() {
  const info = await api("GET", `/v1/info?${query({ namespace: state.namespace })}`);
  state.namespace = info.head.namespace;
  $("explain").textContent = info.explain || "No records yet: nothing to plan.";
  const { name, embedder, reranker } = info.models;
  $("models").textContent = `Models: ${name}: embedder ${embedder.id}` +
    (reranker ? `, cross-encoder ${reranker.id}` : ", no cross-encoder");
  const counts = info.records_by_namespace || { [info.head.namespace]: info.head.records };
  const select = $("namespace");
  select.replaceChildren(...Object.keys(counts).map((name) =>
    el("option", { value: name, text: name }),
  ));
  select.value = state.namespace;
  $("namespaces").tBodies[0].replaceChildren(...Object.entries(counts).map(([name, records]) =>
    el("tr", { "data-namespace": name }, el("td", { text: name }), el("td", { text: String(records) })),
  ));
}

// --- records -------------------------------------------------------------------------------

async function loadRecords() {
  const params = { namespace: state.namespace, limit: PAGE, offset: state.offset };
  const page = await api("GET", `/v1/records?${query(params)}`);
  state.total = page.total;
  if (state.offset >= page.total && page.total > 0) {
    state.offset = Math.max(0, page.total - PAGE);
    return loadRecords();
  }
  $("records").tBodies[0].replaceChildren(...page.records.map((line) => recordRow(line.record)));
  const last = Math.min(state.offset + PAGE, page.total);
  $("page").textContent = page.total ? `records ${state.offset + 1}–${last} of ${page.total}` : "no records";
  $("previous").disabled = state.offset === 0;
  $("next").disabled = last >= page.total;
}

function recordRow(record) {
  const metadata = record.metadata === undefined ? "" : JSON.stringify(record.metadata);
  const forget = el("button", { type: "button", class: "forget", text: "Forget" });
  forget.setAttribute("aria-label", `Forget record ${record.id}`);
  forget.addEventListener("click", () => act(() => forgetRecord(record.id)));
  const edit = el("button", { type: "button", class: "edit", text: "Update" });
  edit.setAttribute("aria-label", `Update record ${record.id}`);
  edit.addEventListener("click", () => openEdit(record, edit));
  return el(
    "tr", { "data-id": record.id },
    el("td", { text: record.id }),
    el("td", { text: record.time ?? "" }),
    el("td", { text: record.speaker ?? "" }),
    el("td", { class: "text", text: record.text }),
    el("td", { class: "metadata", text: metadata }),
    el("td", { class: "actions" }, edit, forget),
  );
}

async function forgetRecord(id) {
  if (!window.confirm(`Forget record ${id}? Its text is erased from the store.`)) return;
  const done = await api("POST", "/v1/delete", { ids: [id], namespace: state.namespace });
  say(`Forgot ${done.deleted.join(", ")}` + (done.erase_pending ? " (erased once the reads holding it end)" : "."));
  await refresh();
}

function openEdit(record, opener) {
  state.editing = { record, opener };
  $("edit-title").textContent = `Update record ${record.id}`;
  $("edit-text").value = record.text;
  $("edit-speaker").value = record.speaker ?? "";
  $("edit-time").value = record.time ?? "";
  $("edit-metadata").value = record.metadata === undefined ? "" : JSON.stringify(record.metadata);
  $("edit-form").hidden = false;
  $("edit-text").focus();
}

// The record as edited: the fields the form shows replaced, any other field (role) kept as it was,
// and a field left as shown kept with its type (a time given as a number stays a number).
function edited(original) {
  const { id, ...record } = original;
  record.text = $("edit-text").value;
  for (const name of ["speaker", "time"]) {
    const value = $(`edit-${name}`).value;
    if (value !== String(original[name] ?? "")) record[name] = value;
    if (value === "") delete record[name];
  }
  const metadata = $("edit-metadata").value.trim();
  if (metadata) record.metadata = parsed(metadata, "metadata");
  else delete record.metadata;
  return [id, record];
}

async function saveEdit() {
  const [id, record] = edited(state.editing.record);
  await api("PUT", `/v1/records/${encodeURIComponent(id)}`, { record, namespace: state.namespace });
  $("edit-form").hidden = true;
  state.editing = null;
  say(`Updated ${id}.`);
  await refresh();
  document.querySelector(`tr[data-id="${CSS.escape(id)}"] button.edit`)?.focus();
}

function closeEdit() {
  $("edit-form").hidden = true;
  const opener = state.editing?.opener;
  state.editing = null;
  if (opener?.isConnected) opener.focus();  // back where the keyboard was
}

function parsed(text, what) {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${what} is not JSON: ${text}`);
  }
}

// --- the query view ------------------------------------------------------------------------

async function inspect() {
  const body = { query: $("query").value, namespace: state.namespace };
  if ($("units").value) body.units = Number($("units").value);
  if ($("where").value.trim()) body.where = parsed($("where").value, "the filter");
  say("Reading…");
  const read = await api("POST", "/v1/inspect", body);
  state.channels = read.channels.map((c) => c.channel);
  // U as asked, and the units it took where they differ (cpu-small reads two per U), with why.
  const budget = read.read.units_read === read.read.units_asked
    ? `U = ${read.read.units_asked} units`
    : `U = ${read.read.units_asked} (${read.read.units_read} units)`;
  $("summary").textContent = `${read.kept.length} passages kept of ${budget}, ` +
    `${read.tokens} tokens, ordered by ${read.rerank ?? "nothing (no records)"}` +
    (read.graph_seeds.length ? `; graph seeds: ${read.graph_seeds.join(", ")}` : "") +
    (read.read.note ? `. ${read.read.note[0].toUpperCase()}${read.read.note.slice(1)}.` : "");
  $("channels").tBodies[0].replaceChildren(...read.channels.map((c) =>
    el("tr", {}, el("td", {}, badge(c.channel)), el("td", { text: String(c.floor) }),
      el("td", { text: String(c.proposed) })),
  ));
  $("kept").replaceChildren(...read.kept.map((p) => passage(p, "kept")));
  $("left-out").replaceChildren(...read.left_out.map((p) => passage(p, "left-out")));
  $("context").textContent = read.context;
  $("result").hidden = false;
  say(`Read ${read.kept.length} passages.`);
}

function badge(channel, rank) {
  const colour = `c${Math.max(0, state.channels.indexOf(channel)) % 6}`;
  const text = rank === undefined ? channel : `${channel} #${rank}`;
  return el("span", { class: `badge ${colour}`, "data-channel": channel, text });
}

function passage(p, kind) {
  const score = p.rerank_score === null ? "" : `, score ${Number(p.rerank_score).toFixed(4)}`;
  const shown = p.shown_as === p.unit ? "" : `, shown as its newest version ${p.shown_as}`;
  const facts = `unit ${p.unit}, parent ${p.parent}, rerank #${p.rerank_rank ?? "–"}${score}${shown}`;
  const metadata = Object.keys(p.metadata).length ? JSON.stringify(p.metadata) : "";
  return el(
    "li", { class: `passage ${kind}`, "data-unit": String(p.unit) },
    el("p", { class: "facts" },
      ...Object.entries(p.channels).map(([c, rank]) => badge(c, rank)),
      el("span", { class: "reason", text: p.reason }),
      el("span", { text: facts })),
    el("p", { class: "records", text: `records: ${p.records.join(", ")}` }),
    metadata ? el("p", { class: "metadata", text: `metadata: ${metadata}` }) : null,
    el("details", {}, el("summary", { text: preview(p.text) }), el("pre", { text: p.text })),
  );
}

// The first words of a passage (the whole text is one click away).
function preview(text) {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 160 ? `${line.slice(0, 160)}…` : line;
}

// --- wiring --------------------------------------------------------------------------------

async function refresh() {
  await loadInfo();
  await loadRecords();
}

// A user's action: its failure is said on the status line (a 401 asks for the token again).
async function act(step) {
  try {
    await step();
  } catch (error) {
    if (error instanceof NeedsToken) window.location.reload();
    else say(error.message, true);
  }
}

function start() {
  $("namespace").addEventListener("change", (event) => act(() => {
    state.namespace = event.target.value;
    state.offset = 0;
    return refresh();
  }));
  $("previous").addEventListener("click", () => act(() => {
    state.offset = Math.max(0, state.offset - PAGE);
    return loadRecords();
  }));
  $("next").addEventListener("click", () => act(() => {
    state.offset += PAGE;
    return loadRecords();
  }));
  $("query-form").addEventListener("submit", (event) => {
    event.preventDefault();
    act(inspect);
  });
  $("edit-form").addEventListener("submit", (event) => {
    event.preventDefault();
    act(saveEdit);
  });
  $("edit-cancel").addEventListener("click", closeEdit);
}

start();
withToken(async () => {
  await refresh();
  $("main").hidden = false;
  say("");
});
