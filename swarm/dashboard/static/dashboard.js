// Kimmy Swarm dashboard: the runs list, a run's graph drawn as SVG at the positions the
// server computed (networkx), live updates over server-sent events, transcripts on click.
// Every text from the store goes in through textContent: nothing is parsed as HTML.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const NODE_W = 170, NODE_H = 24, GROUP_W = 190, GROUP_H = 48;
const STATUSES = ["done", "running", "failed", "cancelled", "skipped", "skipped_budget", "pending"];
const COUNTERS = [
  ["done", "done"], ["in_flight", "in flight"], ["limit", "limit"], ["pending", "pending"],
  ["failed", "failed"], ["cancelled", "cancelled"], ["skipped", "skipped"],
  ["retries", "retries"], ["tokens", "tokens"], ["model_calls", "model calls"],
  ["subtasks_per_s", "subtasks/s"], ["total", "subtasks"],
];

const state = { run: null, source: null, elements: new Map(), graph: null, selected: null,
                liveTimer: null, approvalsAt: 0 };

function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== null) node.textContent = String(text);
  return node;
}

function svg(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== null) node.textContent = String(text);
  return node;
}

async function getJSON(url) {
  const resp = await fetch(url);
  if (!resp.ok) {
    let detail = resp.statusText;
    try { detail = (await resp.json()).detail || detail; } catch (_) { /* not JSON */ }
    throw new Error(`${resp.status}: ${detail}`);
  }
  return resp.json();
}

const TOKEN = document.querySelector('meta[name="kimmy-token"]').content;

async function postJSON(url, body) {
  const resp = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Kimmy-Token": TOKEN },
    body: JSON.stringify(body),
  });
  let data = null;
  try { data = await resp.json(); } catch (_) { /* not JSON */ }
  if (!resp.ok) {
    const detail = data && data.detail;
    throw new Error(typeof detail === "string" ? detail : `${resp.status}: ${JSON.stringify(detail)}`);
  }
  return data;
}

function api(path) { return `/api/runs/${encodeURIComponent(state.run)}${path}`; }

function when(ts) { return ts ? new Date(ts * 1000).toLocaleString() : ""; }

function short(text, n) { return text.length > n ? text.slice(0, n - 1) + "…" : text; }

// --- the runs list -------------------------------------------------------------------

async function showRuns() {
  closeStream();
  state.run = null;
  document.getElementById("run-view").hidden = true;
  document.getElementById("runs-view").hidden = false;
  document.getElementById("crumb").textContent = "";
  const runs = await getJSON("/api/runs");
  const body = document.querySelector("#runs tbody");
  body.replaceChildren();
  for (const r of runs) {
    const tr = el("tr", { "data-run": r.run_id });
    const link = el("a", { href: `#/run/${encodeURIComponent(r.run_id)}` }, r.run_id);
    const cell = el("td", { class: "mono" });
    cell.append(link);
    const status = r.interrupted ? "interrupted" : r.status;
    const badge = el("td");
    badge.append(el("span", { class: `badge ${status}` }, status));
    tr.append(cell, el("td", {}, short(r.goal || "", 90)), badge,
      el("td", {}, `${r.n_done} / ${r.n_subtasks}`), el("td", {}, when(r.created_at)));
    body.append(tr);
  }
  document.getElementById("no-runs").hidden = runs.length > 0;
}

// --- one run -------------------------------------------------------------------------

async function showRun(runId) {
  closeStream();
  state.run = runId;
  state.selected = null;
  document.getElementById("runs-view").hidden = true;
  document.getElementById("run-view").hidden = false;
  document.getElementById("panel").hidden = true;
  document.getElementById("find").value = "";
  document.getElementById("crumb").textContent = `/ ${runId}`;
  const run = await getJSON(api(""));
  document.getElementById("run-title").textContent = run.run_id;
  document.getElementById("run-goal").textContent = run.goal || "";
  renderCounters(run.counters);
  await renderApprovals();
  const graph = await drawGraph();
  renderRewards(run.counters.status);
  if (run.counters.status === "running" && !run.interrupted) openStream(graph);
}

function renderCounters(c) {
  const box = document.getElementById("counters");
  if (!box.children.length) {
    const status = el("div", { class: "counter" });
    status.append(el("b", { id: "counter-status" }), el("span", {}, "status"));
    box.append(status);
    for (const [key, label] of COUNTERS) {
      const d = el("div", { class: "counter", id: `box-${key}` });
      d.append(el("b", { id: `counter-${key}` }), el("span", {}, label));
      box.append(d);
    }
    // the sub-agents in flight, the longest-running first; the failed ones
    for (const [key, status, title] of [["in_flight", "running", "In flight, longest first"],
                                        ["failed", "failed", "Failed"]]) {
      const d = document.getElementById(`box-${key}`);
      d.classList.add("clickable");
      d.title = `list the ${status} sub-agents`;
      d.addEventListener("click", () => showList(title, { status }));
    }
  }
  document.getElementById("counter-status").textContent = c.status;
  for (const [key] of COUNTERS) {
    const v = c[key];
    document.getElementById(`counter-${key}`).textContent =
      v === null || v === undefined ? "–" : (typeof v === "number" ? v.toLocaleString() : v);
  }
}

async function renderRewards(status) {
  const box = document.getElementById("rewards");
  box.hidden = true;
  if (status === "running") return;
  const r = await getJSON(api("/rewards"));
  box.replaceChildren(el("b", {}, "Rewards "));
  if (r.error) box.append(el("span", { class: "error" }, r.error));
  else if (!r.available) box.append(el("span", { class: "meta" }, r.reason || "none"));
  else {
    for (const [k, v] of Object.entries(r.rewards)) {
      if (typeof v === "object" && v !== null) continue;
      box.append(el("span", { class: "reward", "data-key": k },
        `${k} ${typeof v === "number" ? Number(v.toFixed(4)) : v}  `));
    }
  }
  box.hidden = false;
}

// --- the graph -----------------------------------------------------------------------

async function drawGraph() {
  const graph = await getJSON(api("/graph"));
  state.graph = graph;
  state.elements = new Map();
  const root = document.getElementById("graph");
  const w = graph.width + GROUP_W + 20, h = graph.height + GROUP_H + 20;
  root.setAttribute("width", w);
  root.setAttribute("height", h);
  root.setAttribute("viewBox", `0 0 ${w} ${h}`);
  const note = graph.mode === "groups"
    ? `${graph.node_count.toLocaleString()} nodes in ${graph.stages} stages, drawn as ` +
      `${graph.nodes.length} groups (stage × role); critical path in orange`
    : `${graph.nodes.length} nodes in ${graph.stages} stages; critical path in orange`;
  document.getElementById("graph-note").textContent = note;
  const edges = svg("g"), nodes = svg("g");
  const at = new Map(graph.nodes.map((n) => [n.id, n]));
  const [nw, nh] = graph.mode === "groups" ? [GROUP_W, GROUP_H] : [NODE_W, NODE_H];
  for (const e of graph.edges) {
    const a = at.get(e.source), b = at.get(e.target);
    if (!a || !b) continue;
    const x1 = a.x + nw, y1 = a.y + nh / 2, x2 = b.x, y2 = b.y + nh / 2, mx = (x1 + x2) / 2;
    const cls = `edge ${e.kind || ""} ${e.critical ? "critical" : ""}`;
    const path = svg("path", { class: cls, d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}` });
    if (e.count) path.append(svg("title", {}, `${e.count} edges`));
    edges.append(path);
  }
  for (const n of graph.nodes) {
    const g = graph.mode === "groups" ? groupNode(n) : plainNode(n);
    g.addEventListener("click", () => select(n));
    nodes.append(g);
    state.elements.set(n.id, g);
  }
  // critical edges on top of the others
  for (const p of [...edges.querySelectorAll(".critical")]) edges.append(p);
  root.replaceChildren(edges, nodes);
  return graph;
}

function plainNode(n) {
  const g = svg("g", {
    class: `node ${n.kind} ${n.status} ${n.critical ? "critical" : ""}`,
    "data-id": n.id, "data-status": n.status, transform: `translate(${n.x},${n.y})`,
  });
  if (n.kind === "turn") {
    g.append(svg("ellipse", { cx: NODE_W / 2, cy: NODE_H / 2, rx: NODE_W / 2.6, ry: NODE_H / 2 }));
  } else {
    g.append(svg("rect", { class: `s-${n.status}`, width: NODE_W, height: NODE_H, rx: 5 }));
  }
  const label = n.kind === "turn"
    ? svg("text", { x: NODE_W / 2, y: 16, "text-anchor": "middle", fill: "#fff" }, n.label)
    : svg("text", { x: 8, y: 16 }, short(n.label, 22));
  g.append(label);
  g.append(svg("title", {}, `${n.id} (${n.role}): ${n.status}`));
  return g;
}

function groupNode(n) {
  const g = svg("g", {
    class: `node group ${n.critical ? "critical" : ""}`, "data-id": n.id,
    transform: `translate(${n.x},${n.y})`,
  });
  g.append(svg("rect", { class: "frame", width: GROUP_W, height: GROUP_H, rx: 6 }));
  g.append(svg("text", { x: 8, y: 16, class: "label" }, short(`${n.label} ×${n.count}`, 26)));
  g.append(svg("g", { class: "bar", transform: "translate(8,24)" }));
  g.append(svg("text", { x: 8, y: 44, class: "tally" }));
  g.append(svg("title", {}, `stage ${n.stage}, role ${n.role}: ${n.count} nodes`));
  paintGroup(g, n.counts, n.count);
  return g;
}

function paintGroup(g, counts, total) {
  const bar = g.querySelector(".bar");
  bar.replaceChildren();
  let x = 0;
  const width = GROUP_W - 16;
  for (const s of STATUSES) {
    const k = counts[s] || 0;
    if (!k) continue;
    const w = (k / total) * width;
    bar.append(svg("rect", { class: `s-${s}`, x, width: Math.max(w, 1), height: 8 }));
    x += w;
  }
  // what fits the box: done and running always, failed when there are any
  g.querySelector(".tally").textContent = `${counts.done || 0} done · ${counts.running || 0} running` +
    (counts.failed ? ` · ${counts.failed} failed` : "");
}

function applyNodes(nodes) {
  const groups = state.graph && state.graph.mode === "groups";
  for (const [id, change] of Object.entries(nodes)) {
    const g = state.elements.get(id);
    if (!g) continue;
    if (groups) {
      const total = Object.values(change).reduce((a, b) => a + b, 0);
      paintGroup(g, change, total);
      continue;
    }
    const old = g.getAttribute("data-status");
    g.classList.remove(old);
    g.classList.add(change.status);
    g.setAttribute("data-status", change.status);
    const rect = g.querySelector("rect");
    if (rect) rect.setAttribute("class", `s-${change.status}`);
  }
}

// --- live updates --------------------------------------------------------------------

function openStream(graph) {
  const url = api(`/stream?since=${graph.seq}&layout=${encodeURIComponent(graph.layout_key)}`);
  const source = new EventSource(url);
  state.source = source;
  const live = document.getElementById("live");
  live.textContent = "live";
  live.className = "live on";
  source.addEventListener("delta", async (msg) => {
    const d = JSON.parse(msg.data);
    renderCounters(d.counters);
    if (Date.now() - state.approvalsAt > 1000) renderApprovals();  // at most once a second
    if (d.relayout) {
      await drawGraph();
      if (state.selected) markSelected(state.selected);
    } else {
      applyNodes(d.nodes);
    }
    if (d.status !== "running") renderRewards(d.status);
  });
  source.addEventListener("end", () => closeStream());
  source.onerror = () => { live.textContent = "reconnecting"; };
}

function closeStream() {
  if (state.source) state.source.close();
  state.source = null;
  const live = document.getElementById("live");
  live.textContent = "idle";
  live.className = "live off";
}

// --- calls waiting for a person: approve (as asked or edited) or deny ----------------

async function renderApprovals() {
  state.approvalsAt = Date.now();
  const box = document.getElementById("approvals");
  const list = document.getElementById("approvals-list");
  const waiting = (await getJSON(api("/approvals"))).filter((a) => a.status === "pending");
  box.hidden = waiting.length === 0;
  const shown = new Set(waiting.map((a) => a.call_id));
  for (const card of [...list.children]) {  // answered ones go; ones being edited stay as they are
    if (!shown.has(card.dataset.call)) card.remove();
  }
  for (const a of waiting) {
    if (list.querySelector(`[data-call="${CSS.escape(a.call_id)}"]`)) continue;
    list.append(approvalCard(a));
  }
}

function approvalCard(a) {
  const card = el("div", { class: "approval", "data-call": a.call_id });
  card.append(el("div", { class: "meta" },
    `${a.call_id} · ${a.subtask_id} → ${a.tool} · asked ${when(a.requested_at)}`));
  const args = el("textarea", { class: "approval-args", rows: "4", spellcheck: "false",
                                "aria-label": `arguments of ${a.call_id}` });
  args.value = JSON.stringify(a.arguments, null, 2);
  const reason = el("input", { class: "approval-reason", type: "text",
                               placeholder: "reason (told to the sub-agent on a denial)" });
  const approve = el("button", { type: "button", class: "approve" }, "Approve");
  const deny = el("button", { type: "button", class: "deny" }, "Deny");
  const note = el("div", { class: "err" });
  const url = (what) => api(`/approvals/${encodeURIComponent(a.call_id)}/${what}`);
  approve.addEventListener("click", async () => {
    note.textContent = "";
    let edited;
    try { edited = JSON.parse(args.value); } catch (err) {
      note.textContent = `the arguments are not JSON: ${err.message}`;
      return;
    }
    const same = JSON.stringify(edited) === JSON.stringify(a.arguments);
    try {
      await postJSON(url("approve"), { arguments: same ? null : edited, reason: reason.value || null });
      card.remove();
      renderApprovals();
    } catch (err) { note.textContent = err.message; }
  });
  deny.addEventListener("click", async () => {
    note.textContent = "";
    if (!reason.value.trim()) { note.textContent = "give a reason: the sub-agent is told it"; return; }
    try {
      await postJSON(url("deny"), { reason: reason.value });
      card.remove();
      renderApprovals();
    } catch (err) { note.textContent = err.message; }
  });
  const buttons = el("div", { class: "approval-buttons" });
  buttons.append(approve, deny);
  card.append(args, reason, buttons, note);
  return card;
}

// --- the side panel: a sub-agent's transcript ---------------------------------------

function markSelected(id) {
  for (const g of document.querySelectorAll(".node.selected")) g.classList.remove("selected");
  const g = state.elements.get(id);
  if (g) g.classList.add("selected");
}

async function select(n) {
  state.selected = n.id;
  markSelected(n.id);
  const panel = document.getElementById("panel");
  const body = document.getElementById("panel-body");
  panel.hidden = false;
  if (n.kind === "group") {
    await showList(`${n.label} (stage ${n.stage})`, { group: n.id });
    return;
  }
  await showAgent(n.id);
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "";
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const m = Math.floor(seconds / 60), s = Math.floor(seconds % 60);
  return m < 60 ? `${m}m${String(s).padStart(2, "0")}s` : `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}

// A list of sub-agents from `/agents` (a group, a status, an id search): running ones
// first, longest-running first; each opens its transcript.
async function showList(title, params) {
  const panel = document.getElementById("panel");
  const body = document.getElementById("panel-body");
  panel.hidden = false;
  const query = new URLSearchParams({ limit: "200", ...params });
  body.replaceChildren(el("h2", { id: "list-title" }, title), el("p", { class: "meta" }, "loading …"));
  let found;
  try {
    found = await getJSON(api(`/agents?${query}`));
  } catch (err) {
    body.replaceChildren(el("h2", {}, title), el("p", { class: "error" }, String(err.message)));
    return;
  }
  const shown = found.agents.length;
  const counts = {};
  for (const a of found.agents) counts[a.status] = (counts[a.status] || 0) + 1;
  const meta = `${found.total.toLocaleString()} sub-agents` +
    (shown < found.total ? ` (the first ${shown} shown; narrow it with the search box)` : "");
  const list = el("ul", { class: "members", id: "members" });
  for (const a of found.agents) {
    const li = el("li", { "data-member": a.id, "data-status": a.status });
    const link = el("a", { title: a.id }, a.id);
    link.addEventListener("click", () => showAgent(a.id));
    li.append(el("span", { class: `badge ${a.status}` }, a.status), link,
      el("span", { class: "age" }, age(a.age_s)));
    list.append(li);
  }
  body.replaceChildren(el("h2", { id: "list-title" }, title), el("div", { class: "meta" }, meta), list);
  if (!shown) body.append(el("p", { class: "meta" }, "none"));
}

async function showAgent(id) {
  const body = document.getElementById("panel-body");
  body.replaceChildren(el("p", { class: "meta" }, `loading ${id} …`));
  let data;
  try {
    data = await getJSON(api(`/agents/${encodeURIComponent(id)}`));
  } catch (err) {
    body.replaceChildren(el("p", { class: "error" }, String(err.message)));
    return;
  }
  renderTranscript(body, data.node, data.transcript);
  followLive(id, data.transcript.status);
}

// What the selected sub-agent's model is writing now (runs started with streaming on):
// polled while it runs; the panel is drawn again when a call is recorded or it finishes.
function followLive(id, status) {
  clearInterval(state.liveTimer);
  state.liveTimer = null;
  if (status !== "running") return;
  const box = el("pre", { class: "writing", id: "writing" });
  box.hidden = true;
  document.getElementById("panel-body").append(box);
  let shown = "";
  state.liveTimer = setInterval(async () => {
    if (state.selected !== id) { clearInterval(state.liveTimer); return; }
    let live;
    try { live = await getJSON(api(`/agents/${encodeURIComponent(id)}/live`)); } catch (_) { return; }
    const recorded = shown && !live.text.startsWith(shown);  // its answer went to the store
    if (live.status !== "running" || recorded) {
      clearInterval(state.liveTimer);
      showAgent(id);
      return;
    }
    shown = live.text;
    box.hidden = !live.text;
    box.textContent = live.text;
  }, 400);
}

function renderTranscript(body, node, t) {
  const head = el("h2", { id: "agent-title" }, t.subtask_id);
  const meta = el("div", { class: "meta" },
    `role ${t.role} · ${t.status} · attempts ${node.attempts} · tokens ${node.tokens}` +
    (t.parent ? ` · spawned by ${t.parent}` : ""));
  body.replaceChildren(head, meta);
  if (t.instructions) body.append(el("pre", { class: "instructions" }, t.instructions));
  if (t.capture === false) body.append(el("p", { class: "meta" }, "content not captured (sizes only)"));
  if (!t.attempts.length) body.append(el("p", { class: "meta" }, "not started yet"));
  for (const a of t.attempts) {
    const box = el("div", { class: "attempt" });
    box.append(el("div", { class: "meta" }, `attempt ${a.attempt} · ${when(a.started_at)}`));
    for (const e of a.entries) box.append(entryView(e));
    body.append(box);
  }
}

function messageView(m) {
  const role = m.role || "?";
  const box = el("div", { class: `msg ${role}` });
  box.append(el("div", { class: "who" }, role + (m.name ? ` (${m.name})` : "")));
  const content = typeof m.content === "string" ? m.content
    : m.content === null || m.content === undefined ? "" : JSON.stringify(m.content, null, 2);
  if (content) box.append(el("pre", {}, content));
  for (const call of m.tool_calls || []) {
    const f = call.function || call;
    box.append(el("pre", { class: "tool-call" }, `→ ${f.name}(${f.arguments || ""})`));
  }
  return box;
}

function entryView(e) {
  const box = el("div", { class: `entry ${e.kind}` });
  if (e.kind === "model_call") {
    for (const m of e.messages || []) box.append(messageView(m));
    if (e.response) box.append(messageView({ role: "assistant", ...e.response }));
    const u = e.usage || {};
    box.append(el("div", { class: "meta" },
      `model call · ${(e.latency_s || 0).toFixed(2)} s · ${u.total_tokens || 0} tokens` +
      (e.response && e.response.finish_reason ? ` · ${e.response.finish_reason}` : "")));
    if (e.error) box.append(el("pre", { class: "err" }, `${e.error.type}: ${e.error.message}`));
  } else if (e.kind === "tool_call") {
    box.append(el("div", { class: "meta" }, `tool ${e.tool} · step ${e.step} · ${e.ok ? "ok" : "failed"}`));
    if (e.arguments) box.append(el("pre", {}, e.arguments));
    if (e.result) box.append(el("pre", {}, e.result));
    if (e.error) box.append(el("pre", { class: "err" }, e.error));
  } else if (e.kind === "step") {
    box.append(el("div", { class: "meta" }, `step ${e.step} (${e.policy}): ${e.outcome}`));
    if (e.error) box.append(el("pre", { class: "err" }, e.error));
  } else if (e.kind === "approval") {
    const args = e.arguments ? ` ${JSON.stringify(e.arguments)}` : "";
    const text = e.verdict === null || e.verdict === undefined
      ? `${e.call_id}: ${e.tool} waits for approval${args}`
      : `${e.call_id}: ${e.verdict === "approve" ? "approved" : "denied"} by ${e.by}` +
        `${e.arguments ? ` with arguments${args}` : ""}${e.reason ? `: ${e.reason}` : ""}`;
    box.append(el("div", { class: "meta approval-entry" }, text));
  } else if (e.kind === "retry") {
    box.append(el("pre", { class: "err" }, `retry in ${e.delay_s} s after ${e.error.type}: ${e.error.message}`));
  } else if (e.kind === "finished") {
    box.append(el("div", { class: "meta finished" }, `finished: ${e.status}`));
    if (e.error) box.append(el("pre", { class: "err" }, `${e.error.type}: ${e.error.message}`));
    if (e.output) box.append(el("pre", { class: "output" }, e.output));
  }
  return box;
}

// --- routing -------------------------------------------------------------------------

function route() {
  const m = location.hash.match(/^#\/run\/(.+)$/);
  const done = m ? showRun(decodeURIComponent(m[1])) : showRuns();
  done.catch((err) => {
    document.getElementById("graph-note").textContent = String(err.message);
    document.getElementById("crumb").textContent = `error: ${err.message}`;
  });
}

let findTimer = null;
document.getElementById("find").addEventListener("input", (ev) => {
  clearTimeout(findTimer);
  const q = ev.target.value.trim();
  findTimer = setTimeout(() => { if (q && state.run) showList(`Sub-agents matching “${q}”`, { q }); }, 200);
});

document.getElementById("panel-close").addEventListener("click", () => {
  document.getElementById("panel").hidden = true;
  markSelected(null);
  state.selected = null;
});
window.addEventListener("hashchange", route);
route();
