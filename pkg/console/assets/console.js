// customapi's web console: one ES module, inlined into the page by the
// server (package console), in three parts: the requests to the API, the
// views, and the router. It holds no data and no credentials of its own:
// the user's token, kept in this tab's sessionStorage, goes with each
// request, so the server's authentication and RBAC decide what it shows.

// ---- Requests to the API server. Each one carries the user's bearer
// token (kept in this tab's sessionStorage) and no cookie, so the server
// authenticates and authorizes it as any other client's.

const tokenKey = "customapi-console-token";

/** The token the user logged in with, for this tab only. */
const token = {
  get: () => sessionStorage.getItem(tokenKey),
  set: (t) => sessionStorage.setItem(tokenKey, t),
  clear: () => sessionStorage.removeItem(tokenKey),
};

/** Accept headers of the representations the console asks for. */
const accept = {
  json: "application/json",
  yaml: "application/yaml",
  table: "application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
  discovery: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList, application/json;q=0.9",
};

/** An error answer of the API: the Status's code, reason and message. */
class APIError extends Error {
  constructor(code, reason, message) {
    super(message);
    this.code = code;
    this.reason = reason;
  }
}

/** The APIError of a failed response: its Status, or its code and text. */
async function errorOf(resp) {
  const text = await resp.text();
  try {
    const s = JSON.parse(text);
    if (s.kind === "Status") {
      return new APIError(s.code || resp.status, s.reason || resp.statusText, s.message || "");
    }
  } catch {
    // not JSON: the text itself
  }
  return new APIError(resp.status, resp.statusText || `HTTP ${resp.status}`, text.trim());
}

/**
 * Sends a request for path (GET unless told otherwise) with the user's
 * token; resolves to the response when it is 2xx (or one of okCodes),
 * rejects with an APIError otherwise. The server closes an HTTP/2
 * connection after a 401 or an anonymous request, which can cut off a
 * request sent at the same time on it: a request that fails that way
 * (a network error) is sent once more. An error answered in another
 * encoding than JSON (YAML) is asked again as JSON, for its Status.
 */
async function request(path, { accept: type = accept.json, signal, method = "GET", body, okCodes = [] } = {}) {
  const headers = { Accept: type };
  const t = token.get();
  if (t) headers.Authorization = "Bearer " + t;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const send = () => fetch(path, {
    method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit", cache: "no-store", redirect: "error",
  });
  let resp;
  try {
    resp = await send();
  } catch (err) {
    if (signal?.aborted || !(err instanceof TypeError)) throw err;
    resp = await send();
  }
  if (resp.ok || okCodes.includes(resp.status)) return resp;
  if (method === "GET" && type !== accept.json && !resp.headers.get("Content-Type")?.startsWith("application/json")) {
    return request(path, { signal, okCodes });
  }
  throw await errorOf(resp);
}

/** GETs path as JSON (or as the type given) and decodes it. */
async function getJSON(path, type = accept.json, signal) {
  return (await request(path, { accept: type, signal })).json();
}

/** The user's name and groups, from a SelfSubjectReview. */
async function whoami(signal) {
  const resp = await request("/apis/authentication.k8s.io/v1/selfsubjectreviews", {
    method: "POST", signal,
    body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
  });
  return (await resp.json()).status.userInfo;
}

/**
 * The served resources, from aggregated discovery of /api and /apis:
 * [{group, version, resource, kind, namespaced, verbs}], sorted by group,
 * then resource; subresources left out.
 */
async function resources(signal) {
  const lists = await Promise.all(["/api", "/apis"].map((p) => getJSON(p, accept.discovery, signal)));
  const out = [];
  for (const list of lists) {
    if (list.kind !== "APIGroupDiscoveryList") {
      throw new APIError(0, "UnsupportedDiscovery", "the server does not serve aggregated discovery (apidiscovery.k8s.io/v2)");
    }
    for (const g of list.items || []) {
      for (const v of g.versions || []) {
        for (const r of v.resources || []) {
          out.push({
            group: g.metadata.name || "", version: v.version, resource: r.resource,
            kind: r.responseKind?.kind || "", namespaced: r.scope === "Namespaced", verbs: r.verbs || [],
          });
        }
      }
    }
  }
  return out.sort((a, b) => a.group.localeCompare(b.group) || a.resource.localeCompare(b.resource) || a.version.localeCompare(b.version));
}

/** The path of a resource's collection, in a namespace when one is given. */
function collectionPath({ group, version, resource }, namespace) {
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  return namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${resource}` : `${base}/${resource}`;
}

/**
 * Follows a watch at path (a collection path with its query) and calls
 * onEvent for each event ({type, object}); resolves when the server ends
 * the stream, rejects on an error, when onEvent throws or when signal
 * aborts, and closes the stream whichever way it ends.
 */
async function watch(path, type, signal, onEvent) {
  const resp = await request(path, { accept: type, signal });
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += value;
      let i;
      while ((i = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, i).trim();
        buffered = buffered.slice(i + 1);
        if (line) onEvent(JSON.parse(line));
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

// ---- Views. Each one renders into main from the API's answers, with
// text nodes only (never markup from the server), and rejects with the
// APIError of a failed request, which the router shows as a page.

/** Builds an element: attributes (on* are listeners) and children (text or nodes). */
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  e.append(...children.flat(Infinity).filter((c) => c !== undefined && c !== null && c !== false));
  return e;
}

const link = (hash, ...children) => el("a", { href: hash }, ...children);

/** The hash of a view: its path and query (empty values left out). */
function hashOf(path, query = {}) {
  const q = new URLSearchParams(Object.entries(query).filter(([, v]) => v));
  return "#/" + path + (q.size ? "?" + q : "");
}

const resourcePath = (r) => `${r.group || "core"}/${r.version}/${r.resource}`;

// What discovery said last, for the token it was asked with.
let discovered = { token: null, resources: null };

/** Forgets what discovery said (after a log in or out). */
function forgetDiscovery() {
  discovered = { token: null, resources: null };
}

/** The served resources: asked again when fresh, else as last asked. */
async function servedResources(signal, fresh = false) {
  const t = token.get();
  if (fresh || discovered.token !== t || !discovered.resources) {
    discovered = { token: t, resources: await resources(signal) };
  }
  return discovered.resources;
}

/**
 * The served resource the route names ({group, version, resource}), asking
 * discovery again when it was not served last time (a new CRD), or a 404.
 */
async function findResource({ group, version, resource }, signal) {
  const g = group === "core" ? "" : group;
  const find = (rs) => rs.find((x) => x.group === g && x.version === version && x.resource === resource);
  const r = find(await servedResources(signal)) || find(await servedResources(signal, true));
  if (!r) throw new APIError(404, "NotFound", `the server does not serve ${resource} in ${group}/${version}`);
  return r;
}

/** The login view: a token field; the token stays in this tab. */
function login(main, { onLogin }) {
  const input = el("input", { type: "password", id: "token", name: "token", autocomplete: "off", required: true, placeholder: "bearer token" });
  main.append(
    el("h1", {}, "Log in"),
    el("form", {
      class: "login",
      onsubmit: (e) => {
        e.preventDefault();
        onLogin(input.value.trim());
      },
    }, el("label", { for: "token" }, "Token"), input, el("button", { type: "submit" }, "Log in")),
    el("p", { class: "hint" },
      "Paste a bearer token the server accepts: a --token-auth-file token, an OIDC ID token, or the admin's (",
      el("code", {}, "kubectl config view --kubeconfig customapi-data/admin.kubeconfig --raw -o jsonpath='{.users[0].user.token}'"),
      "). It is kept in this browser tab only (sessionStorage) and sent to this server in each request's Authorization header; the server authorizes each request as it would kubectl's."),
  );
  input.focus();
}

/** The kinds view: every served resource, from discovery. */
async function kinds(main, { signal }) {
  const rs = await servedResources(signal, true);
  const rows = rs.map((r) => el("tr", { "data-resource": resourcePath(r) },
    el("td", {}, r.verbs.includes("list") ? link(hashOf("list/" + resourcePath(r)), r.kind) : r.kind),
    el("td", {}, r.resource), el("td", {}, r.group || "core"), el("td", {}, r.version),
    el("td", {}, r.namespaced ? "Namespaced" : "Cluster"), el("td", { class: "verbs" }, r.verbs.join(", "))));
  const filter = el("input", {
    type: "search", placeholder: "filter", "aria-label": "filter kinds",
    oninput: () => {
      const f = filter.value.toLowerCase();
      for (const tr of rows) tr.hidden = f !== "" && !tr.textContent.toLowerCase().includes(f);
    },
  });
  main.append(
    el("h1", {}, "Kinds"),
    el("p", { class: "hint" }, `${rs.length} resources served (aggregated discovery of /api and /apis). A kind that can be listed links to its objects.`),
    filter,
    el("table", { id: "kinds" },
      el("thead", {}, el("tr", {}, ["Kind", "Resource", "Group", "Version", "Scope", "Verbs"].map((h) => el("th", {}, h)))),
      el("tbody", {}, rows)),
  );
}

/** A Table cell as text: dates as ages, objects as JSON, null as "". */
function cellText(value, column) {
  if (value === null || value === undefined) return "";
  if (column.type === "date" && typeof value === "string" && /^\d{4}-\d\d-\d\dT/.test(value)) {
    const s = Math.max(0, Math.round((Date.now() - Date.parse(value)) / 1000));
    if (s < 120) return `${s}s`;
    if (s < 7200) return `${Math.floor(s / 60)}m`;
    if (s < 172800) return `${Math.floor(s / 3600)}h`;
    return `${Math.floor(s / 86400)}d`;
  }
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/**
 * The list view: one page of a resource's objects as the server's Table
 * (its printer columns), filtered by namespace and label selector on the
 * server, paged with limit and continue, following a watch from the
 * page's resourceVersion so that changes show without a reload.
 */
async function list(main, { params, query, signal, rerender }) {
  const r = await findResource(params, signal);
  const namespace = r.namespaced ? query.get("namespace") || "" : "";
  const labelSelector = query.get("labelSelector") || "";
  const limit = query.get("limit") || "100";
  const cont = query.get("continue") || "";
  const base = collectionPath(r, namespace);
  const q = new URLSearchParams({ limit });
  if (labelSelector) q.set("labelSelector", labelSelector);
  if (cont) q.set("continue", cont);
  const table = await getJSON(`${base}?${q}`, accept.table, signal);
  const columns = table.columnDefinitions || [];
  const withNamespace = r.namespaced && !namespace;
  const listHash = (extra) => hashOf("list/" + resourcePath(r), { namespace, labelSelector, limit: limit === "100" ? "" : limit, ...extra });

  const key = (row) => `${row.object?.metadata?.namespace || ""}/${row.object?.metadata?.name || row.cells[0]}`;
  const rowOf = (row) => {
    const meta = row.object?.metadata || {};
    const name = meta.name || String(row.cells[0]);
    const cells = columns.map((c, i) => el("td", {}, i === 0
      ? link(hashOf("object/" + resourcePath(r), { namespace: meta.namespace, name }), name)
      : cellText(row.cells[i], c)));
    if (withNamespace) cells.splice(1, 0, el("td", {}, meta.namespace || ""));
    return el("tr", { "data-key": key(row) }, cells);
  };
  const heads = columns.map((c) => el("th", { title: c.description || "", class: c.priority > 0 ? "wide" : null }, c.name));
  if (withNamespace) heads.splice(1, 0, el("th", {}, "Namespace"));
  const tbody = el("tbody", {}, (table.rows || []).map(rowOf));

  const nsInput = el("input", { name: "namespace", list: "namespaces", value: namespace, placeholder: "all namespaces", disabled: !r.namespaced });
  const lsInput = el("input", { name: "labelSelector", value: labelSelector, placeholder: "e.g. app=web,tier!=db" });
  const limitSelect = el("select", { name: "limit" }, ["50", "100", "250", "500"].map((n) => el("option", { value: n, selected: n === limit }, n)));
  const namespaces = el("datalist", { id: "namespaces" });
  if (r.namespaced) {
    // Suggestions only: a user who may not list namespaces types one.
    getJSON("/api/v1/namespaces", accept.json, signal)
      .then((l) => namespaces.append(...l.items.map((n) => el("option", { value: n.metadata.name }))))
      .catch(() => {});
  }
  const remaining = table.metadata?.remainingItemCount;
  const live = el("span", { id: "live", "data-watch": "connecting" }, "connecting to watch…");
  main.append(
    el("h1", {}, r.kind, el("small", {}, ` ${r.resource}.${r.group || "core"}/${r.version}`)),
    el("form", {
      class: "filters",
      onsubmit: (e) => {
        e.preventDefault();
        const next = listHash({ namespace: nsInput.value.trim(), labelSelector: lsInput.value.trim(), limit: limitSelect.value === "100" ? "" : limitSelect.value });
        if (next === location.hash) rerender(); // the same filters: list again
        else location.hash = next;
      },
    },
    el("label", {}, "Namespace ", nsInput), namespaces,
    el("label", {}, "Label selector ", lsInput),
    el("label", {}, "Page size ", limitSelect),
    el("button", { type: "submit" }, "Apply")),
    el("nav", { class: "pager" },
      el("span", { id: "count" }, `${tbody.children.length} on this page` + (remaining ? `, ${remaining} more` : "")),
      cont ? link(listHash({}), "First page") : null,
      table.metadata?.continue ? el("a", { href: listHash({ continue: table.metadata.continue }), id: "next" }, "Next page") : null,
      live),
    el("table", { id: "objects" }, el("thead", {}, el("tr", {}, heads)), tbody),
  );

  follow(`${base}`, labelSelector, table.metadata?.resourceVersion, signal, {
    status: (state, text) => {
      live.dataset.watch = state;
      live.textContent = text;
    },
    event: (type, row) => {
      const old = tbody.querySelector(`tr[data-key="${CSS.escape(key(row))}"]`);
      if (type === "DELETED") old?.remove();
      else if (old) old.replaceWith(rowOf(row));
      else if (type === "ADDED") {
        const tr = rowOf(row);
        tr.classList.add("added"); // new since the page was listed: shown first
        tbody.prepend(tr);
      }
    },
    relist: rerender,
  });
}

/** Follows the watch of a list from rv, reconnecting when the server ends it. */
async function follow(base, labelSelector, rv, signal, on) {
  let since = rv;
  while (!signal.aborted) {
    const q = new URLSearchParams({ watch: "1", resourceVersion: since });
    if (labelSelector) q.set("labelSelector", labelSelector);
    on.status("live", "● following changes");
    try {
      await watch(`${base}?${q}`, accept.table, signal, (ev) => {
        if (ev.type === "ERROR") throw new APIError(ev.object?.code, ev.object?.reason, ev.object?.message);
        since = ev.object?.metadata?.resourceVersion || since;
        for (const row of ev.object?.rows || []) {
          on.event(ev.type, row);
        }
      });
    } catch (e) {
      if (signal.aborted) return;
      if (e.code === 410) return on.relist(); // too old to follow: list again
      on.status("error", `not following changes: ${e.message}`);
      return;
    }
  }
}

/** The object view: one object as the server's YAML. */
async function object(main, { params, query, signal }) {
  const r = await findResource(params, signal);
  const namespace = r.namespaced ? query.get("namespace") || "" : "";
  const name = query.get("name") || "";
  if (!name) throw new APIError(404, "NotFound", "no object named");
  const resp = await request(`${collectionPath(r, namespace)}/${encodeURIComponent(name)}`, { accept: accept.yaml, signal });
  main.append(
    el("h1", {}, r.kind, " ", namespace ? `${namespace}/${name}` : name),
    el("p", {}, link(hashOf("list/" + resourcePath(r), { namespace }), `← ${r.resource}`)),
    el("pre", { class: "yaml", id: "yaml" }, await resp.text()),
  );
}

/** A health endpoint's answer: its code and text, also when it fails. */
async function probe(path, signal) {
  const resp = await request(path, { accept: "text/plain", signal, okCodes: [500, 503] });
  return { code: resp.status, text: await resp.text() };
}

/** The health view: /readyz and /livez with every check, and /version. */
async function health(main, { signal }) {
  const [ready, live, version] = await Promise.all([
    probe("/readyz?verbose", signal), probe("/livez?verbose", signal), getJSON("/version", accept.json, signal),
  ]);
  const checks = (name, { code, text }) => el("section", { class: "probe", id: name, "data-code": String(code) },
    el("h2", {}, `/${name} `, el("span", { class: code === 200 ? "badge ok" : "badge fail" }, code === 200 ? "200 ok" : `${code} failing`)),
    el("ul", {}, text.split("\n").filter((l) => l.trim()).map((l) => {
      const m = /^\[([+-])\](.*)$/.exec(l);
      return el("li", { class: m ? (m[1] === "+" ? "ok" : "fail") : "summary" }, m ? m[2] : l);
    })));
  main.append(
    el("h1", {}, "Health"),
    el("div", { class: "probes" }, checks("readyz", ready), checks("livez", live),
      el("section", { class: "probe", id: "version" }, el("h2", {}, "/version"),
        el("dl", {}, Object.entries(version).map(([k, v]) => [el("dt", {}, k), el("dd", {}, String(v))])))),
  );
}

const hints = {
  401: "The server did not accept the token. Log in again with a valid one.",
  403: "Your user is not allowed this request: ask for a role that grants it (docs/serving.md, \"Web console\").",
  404: "Nothing is served at this address.",
};

/** The error page of a failed request: the Status's code, reason and message. */
function errorPage(main, err) {
  const code = err instanceof APIError ? err.code : 0;
  const reason = err instanceof APIError ? err.reason : "NetworkError";
  main.dataset.view = "error";
  main.dataset.code = String(code);
  main.append(
    el("h1", { class: "error" }, el("span", { id: "code" }, String(code || "")), " ", el("span", { id: "reason" }, reason)),
    el("p", { id: "message", class: "message" }, err.message || String(err)),
  );
  if (hints[code]) main.append(el("p", { class: "hint" }, hints[code]));
  if (code === 401) main.append(el("p", {}, link("#/login", "Log in")));
}

// ---- The router over location.hash, the header (user, log out) and the
// login.

const main = document.getElementById("view");
const user = document.getElementById("user");
const logout = document.getElementById("logout");

// Routes: "#/<name>/<params...>?<query>".
const routes = {
  kinds: { view: kinds, params: [] },
  list: { view: list, params: ["group", "version", "resource"] },
  object: { view: object, params: ["group", "version", "resource"] },
  health: { view: health, params: [] },
};

// The running view's requests and watches, aborted when another starts.
let running = new AbortController();

/** Shows the view location.hash names (the login view without a token). */
async function route() {
  running.abort();
  running = new AbortController();
  const { signal } = running;
  const [path, search = ""] = location.hash.replace(/^#\/?/, "").split("?");
  const decode = (s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s; // not %-encoded: as it is
    }
  };
  const [name = "kinds", ...rest] = path.split("/").filter(Boolean).map(decode);
  main.replaceChildren();
  delete main.dataset.code;
  for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("current", a.dataset.nav === name);
  if (name === "login" || !token.get()) {
    main.dataset.view = "login";
    main.dataset.state = "ready";
    login(main, { onLogin });
    return;
  }
  const r = routes[name];
  main.dataset.view = r ? name : "error";
  main.dataset.state = "loading";
  try {
    if (!r || rest.length !== r.params.length) {
      throw new APIError(404, "NotFound", `the console has no view at #/${path}`);
    }
    const params = Object.fromEntries(r.params.map((p, i) => [p, rest[i]]));
    await r.view(main, { params, query: new URLSearchParams(search), signal, rerender: route });
  } catch (err) {
    if (signal.aborted) return;
    main.replaceChildren();
    errorPage(main, err);
  }
  if (!signal.aborted) main.dataset.state = "ready";
}

/** Shows who the token authenticates as, in the header. */
async function showUser() {
  user.textContent = "";
  logout.hidden = !token.get();
  if (!token.get()) return;
  try {
    const info = await whoami();
    user.textContent = info.username;
    user.title = (info.groups || []).join(", ");
  } catch (err) {
    user.textContent = `(${err.code || ""} ${err.reason || err.message})`;
  }
}

function onLogin(t) {
  if (!t) return;
  token.set(t);
  forgetDiscovery();
  showUser();
  if (location.hash === "#/kinds") route();
  else location.hash = "#/kinds";
}

logout.addEventListener("click", () => {
  token.clear();
  forgetDiscovery();
  showUser();
  if (location.hash === "#/login") route();
  else location.hash = "#/login";
});

window.addEventListener("hashchange", route);
showUser();
route();
