// What the inspector and the reference page share: the token (kept in this tab's sessionStorage,
// sent with every request), requests to the API, and small DOM helpers. Plain JS, no build.

const KEY = "muster-token";

export class NeedsToken extends Error {}

export function token() {
  return sessionStorage.getItem(KEY) || "";
}

// A request to this server's API: JSON in and out, the token when there is one. A 401 forgets the
// token (it was wrong) and throws NeedsToken; any other refusal throws the server's message.
export async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (token()) headers.Authorization = `Bearer ${token()}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const init = { method, headers, body: body === undefined ? undefined : JSON.stringify(body) };
  const reply = await fetch(path, init);
  const data = await reply.json().catch(() => ({}));
  if (reply.status === 401) {
    sessionStorage.removeItem(KEY);
    throw new NeedsToken("the token is missing or wrong");
  }
  if (!reply.ok) throw new Error(`${reply.status}: ${detail(data.detail)}`);
  return data;
}

// A refusal's detail: the library's message, or a list of {loc, msg} from a malformed body.
function detail(value) {
  if (Array.isArray(value)) return value.map((e) => `${(e.loc || []).join(".")}: ${e.msg}`).join("; ");
  return typeof value === "string" ? value : JSON.stringify(value);
}

// The token's form, put after the status line: shown, and focused, when the token is asked for.
function tokenForm() {
  const input = el("input", { id: "token", name: "token", type: "password", autocomplete: "off" });
  input.required = true;
  const form = el(
    "form", { id: "token-form", class: "panel" },
    el("h2", { text: "Token" }),
    el("p", { text: "This server needs its token ($MUSTER_HTTP_TOKEN). It stays in this tab only." }),
    el("label", { for: "token", text: "Bearer token" }),
    input,
    el("button", { type: "submit", text: "Use token" }),
  );
  form.hidden = true;
  document.getElementById("status").after(form);
  return form;
}

// Asks for the token when the server needs one and this tab has none (or a wrong one), then calls
// start(). The form is shown, focused, and hidden again once a token is given.
export async function withToken(start) {
  const form = tokenForm();
  const input = form.querySelector("input");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, input.value.trim());
    input.value = "";
    form.hidden = true;
    run();
  });
  async function run() {
    try {
      await start();
    } catch (error) {
      if (error instanceof NeedsToken) ask("The token was refused; enter it again.");
      else say(error.message, true);
    }
  }
  function ask(message) {
    form.hidden = false;
    if (message) say(message);
    input.focus();
  }
  const health = await (await fetch("/healthz")).json();
  if (health.token_required && !token()) ask();
  else run();
}

// The one status line (role=status): what happened, or what went wrong.
export function say(message, isError = false) {
  const line = document.getElementById("status");
  line.textContent = message;
  line.classList.toggle("error", isError);
}

// An element with text (never HTML: every string from the store is shown as text) and children.
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}
