// hypermem explorer: browse a memory's hypergraph and draw the explanation paths of a query.
// Every datum comes from the JSON API (/v1/...) with the tenant key the analyst typed, kept in
// sessionStorage only. The graph never holds more than a page of nodes: topics are paginated, and
// a node's hyperedges and their members are capped (the rest is summarised in one "+N more" node).
"use strict";

const TOPIC_PAGE = 10;
const MAX_HYPEREDGES = 12;
const MAX_MEMBERS = 12;
const COLORS = {
  Query: "#d32f2f", Memory: "#263238", Topic: "#ef6c00", Hyperedge: "#455a64", Episode: "#1e88e5",
  Fact: "#43a047", Turn: "#757575", Person: "#8e24aa", Time: "#00897b", Location: "#6d4c41", More: "#bdbdbd",
};
const state = { key: sessionStorage.getItem("hypermem.key"), memory: null, topicsOffset: 0, hyperedges: new Map() };
const $ = (id) => document.getElementById(id);

// --- DOM and API helpers ---------------------------------------------------------------------
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "onclick") node.addEventListener("click", value);
    else if (value !== null && value !== undefined) node.setAttribute(name, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function short(text, n = 48) {
  text = text || "";
  return text.length > n ? text.slice(0, n - 1) + "…" : text;
}

function day(iso) { return iso ? iso.slice(0, 10) : "?"; }
function num(x) { return x === null || x === undefined ? "" : Number(x).toFixed(4); }
// Node ids (conv-26/episode/3, conv-26/fact/3#1) go into paths as they are, '#' escaped.
function pathId(id) { return encodeURIComponent(id).replace(/%2F/g, "/"); }

class ApiError extends Error {}

async function api(path, options = {}) {
  const headers = { Authorization: `Bearer ${state.key}`, ...(options.body ? { "Content-Type": "application/json" } : {}) };
  const response = await fetch(path, { ...options, headers });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const detail = body.errors ? " " + JSON.stringify(body.errors) : "";
    throw new ApiError(`${response.status}: ${body.message || body.status || "request failed"}${detail}`);
  }
  return body;
}

function details(...children) {
  const panel = $("details");
  panel.replaceChildren(...children.flat().filter((child) => child !== null && child !== undefined));
  panel.scrollTop = 0;
}

function failed(error) {
  details(el("p", { class: "error", role: "alert" }, String(error.message || error)));
}

// --- the graph ---------------------------------------------------------------------------------
const cy = cytoscape({
  container: $("graph"),
  wheelSensitivity: 0.3,
  maxZoom: 1.6, // fitting a small graph must not blow labels up
  style: [
    { selector: "node", style: {
      "background-color": (n) => COLORS[n.data("kind")] || "#999", label: "data(label)", "font-size": 11,
      "text-wrap": "wrap", "text-max-width": 120, "text-valign": "bottom", "text-margin-y": 3, width: 18, height: 18 } },
    { selector: "node[kind = 'Hyperedge']", style: { shape: "diamond", width: 14, height: 14, "font-size": 10, color: "#455a64" } },
    { selector: "node[kind = 'Query']", style: { shape: "star", width: 26, height: 26, "font-weight": "bold" } },
    { selector: "node[kind = 'More']", style: { shape: "round-rectangle", width: 30, height: 12, color: "#777" } },
    { selector: "node.focus", style: { "border-width": 3, "border-color": "#000" } },
    { selector: "edge", style: {
      width: 1.2, "line-color": "#b0bec5", "target-arrow-color": "#b0bec5", "target-arrow-shape": "triangle",
      "curve-style": "bezier", label: "data(label)", "font-size": 10, color: "#37474f",
      "text-background-color": "#fff", "text-background-opacity": 0.85, "text-background-padding": 1 } },
    { selector: "edge.hl", style: { "line-color": "#ff6f00", "target-arrow-color": "#ff6f00", width: 3, "font-weight": "bold" } },
    { selector: "node.hl", style: { "border-width": 3, "border-color": "#ff6f00", "font-weight": "bold" } },
    { selector: ".dim", style: { opacity: 0.25 } },
  ],
});
window.explorer = { cy, state };

function draw(elements, caption, layout) {
  cy.elements().remove();
  cy.add(elements);
  cy.layout({ animate: false, fit: true, padding: 24, ...layout }).run();
  $("graph-caption").textContent = caption;
}

function addNode(nodes, id, kind, label, extra = {}) {
  if (!nodes.has(id)) nodes.set(id, { group: "nodes", data: { id, kind, label, ...extra } });
  return nodes.get(id);
}

function addEdge(edges, source, target, label) {
  const id = `${source}->${target}`;
  if (!edges.has(id)) edges.set(id, { group: "edges", data: { id, source, target, label: label || "" } });
}

cy.on("tap", "node", (event) => {
  const data = event.target.data();
  const open = { Topic: openTopic, Episode: openEpisode, Fact: showHyperedges, Time: showHyperedges, Location: showHyperedges };
  if (data.kind === "Person") openTimeline(data.name || data.label, data.id);
  else if (data.kind === "Hyperedge" && state.hyperedges.has(data.id)) describeHyperedge(state.hyperedges.get(data.id));
  else if (open[data.kind]) open[data.kind](data.id);
});

// --- sign in and memories ------------------------------------------------------------------------
async function signIn(key) {
  state.key = key;
  try {
    const { memories } = await api("/v1/memories");
    sessionStorage.setItem("hypermem.key", key);
    $("login").hidden = true;
    $("session").hidden = false;
    $("key-id").textContent = key.split("_")[1] || "admin";
    $("memories").replaceChildren(...memories.map((m) =>
      el("li", { "data-memory": m.memory_id, onclick: () => openMemory(m.memory_id) }, m.memory_id)));
    details(el("p", { class: "hint" }, memories.length
      ? `${memories.length} memories. Open one on the left.` : "This key owns no memory yet."));
  } catch (error) {
    sessionStorage.removeItem("hypermem.key");
    state.key = null;
    $("login-error").textContent = `sign-in failed (${error.message})`;
  }
}

function signOut() {
  sessionStorage.removeItem("hypermem.key");
  location.reload();
}

async function openMemory(memoryId) {
  state.memory = memoryId;
  state.topicsOffset = 0;
  for (const li of $("memories").children) li.classList.toggle("active", li.dataset.memory === memoryId);
  $("topics-panel").hidden = $("people-panel").hidden = $("query-form").hidden = false;
  try {
    const memory = await api(`/v1/memories/${memoryId}`);
    const counts = Object.entries(memory.counts).map(([label, n]) => el("tr", {}, el("td", {}, label), el("td", {}, n)));
    details(el("h3", {}, `Memory ${memoryId}`), el("p", { class: "muted" }, `owned since ${memory.created_at}`),
      el("table", { id: "counts" }, el("tbody", {}, counts)));
    await Promise.all([loadTopics(), loadPeople()]);
  } catch (error) { failed(error); }
}

async function loadTopics() {
  const offset = state.topicsOffset;
  const { topics } = await api(`/v1/memories/${state.memory}/topics?offset=${offset}&limit=${TOPIC_PAGE}`);
  $("topics").tBodies[0].replaceChildren(...topics.map((t) =>
    el("tr", { class: "row", "data-topic": t.id, onclick: () => openTopic(t.id) },
      el("td", {}, short(t.title, 40)), el("td", {}, t.episodes), el("td", { class: "muted" }, `${day(t.first)} – ${day(t.last)}`))));
  $("topics-page").textContent = topics.length ? `${offset + 1}–${offset + topics.length}` : "none";
  $("topics-prev").disabled = offset === 0;
  $("topics-next").disabled = topics.length < TOPIC_PAGE;
  const nodes = new Map(), edges = new Map();
  addNode(nodes, "memory", "Memory", state.memory);
  for (const t of topics) {
    addNode(nodes, t.id, "Topic", `${short(t.title, 30)}\n${t.episodes} ep. ${day(t.first)}–${day(t.last)}`);
    addEdge(edges, "memory", t.id, "");
  }
  draw([...nodes.values(), ...edges.values()], `memory ${state.memory}: topics ${offset + 1}–${offset + topics.length} (page of ${TOPIC_PAGE}); click a topic`,
    { name: "concentric", concentric: (n) => (n.data("kind") === "Memory" ? 2 : 1), levelWidth: () => 1, minNodeSpacing: 30 });
}

async function loadPeople() {
  const { people } = await api(`/v1/memories/${state.memory}/people`);
  $("people").replaceChildren(...people.map((p) =>
    el("li", { "data-person": p.name, onclick: () => openTimeline(p.name, p.id) },
      `${p.name} `, el("span", { class: "muted" }, `(${p.episodes} ep., salience ${num(p.salience)})`))));
}

// --- drill-down: topic -> episodes -> facts -> source turns ------------------------------------------
async function openTopic(topicId) {
  try {
    const topic = await api(`/v1/memories/${state.memory}/topics/${pathId(topicId)}`);
    details(el("h3", { class: "Topic" }, `Topic: ${topic.title}`), el("p", {}, topic.summary || ""),
      el("h2", {}, `${topic.episodes.length} episodes`),
      el("table", { id: "topic-episodes" }, el("tbody", {}, topic.episodes.map((e) =>
        el("tr", { class: "row", "data-episode": e.id, onclick: () => openEpisode(e.id) },
          el("td", {}, short(e.title, 50)), el("td", { class: "muted" }, `${day(e.start)}`),
          el("td", { class: "score", title: "member weight in the topic hyperedge" }, num(e.weight)))))));
    await showHyperedges(topicId, false);
  } catch (error) { failed(error); }
}

async function openEpisode(episodeId) {
  try {
    const episode = await api(`/v1/memories/${state.memory}/episodes/${pathId(episodeId)}`);
    const turns = new Map(episode.turns.map((t) => [t.id, t]));
    const turnRow = (t) => el("tr", { "data-dia": t.dia_id }, el("td", { class: "dia" }, t.dia_id), el("td", {}, t.speaker),
      el("td", { class: "muted" }, day(t.timestamp)), el("td", {}, t.text));
    details(
      el("h3", { class: "Episode" }, `Episode: ${episode.title}`),
      el("p", { class: "muted" }, `${episode.start} – ${episode.end} · session ${episode.session} · ${(episode.participants || []).join(", ")}`),
      el("p", {}, episode.summary || ""),
      el("p", {}, "Elements: ", episode.elements.map((x) => el("span", { class: x.kind }, `${x.kind} ${x.name} (${num(x.weight)}) `))),
      el("h2", {}, `${episode.facts.length} facts and their source turns`),
      el("ol", { id: "episode-facts" }, episode.facts.map((f) => el("li", { "data-fact": f.id },
        el("span", { onclick: () => showHyperedges(f.id) }, f.content), " ",
        el("span", { class: "score", title: "member weight in the episode hyperedge" }, num(f.weight)),
        el("table", { class: "turns" }, el("tbody", {}, f.turn_ids.filter((id) => turns.has(id)).map((id) => turnRow(turns.get(id)))))))),
      el("h2", {}, `${episode.turns.length} source turns`),
      el("table", { id: "episode-turns" }, el("thead", {}, el("tr", {}, ["dia_id", "speaker", "date", "text"].map((h) => el("th", {}, h)))),
        el("tbody", {}, episode.turns.map(turnRow))));
    await showHyperedges(episodeId, false);
  } catch (error) { failed(error); }
}

async function openTimeline(person, elementId) {
  try {
    const { items } = await api(`/v1/memories/${state.memory}/people/${encodeURIComponent(person)}/timeline`);
    details(el("h3", { class: "Person" }, `Timeline of ${person}`), el("p", { class: "muted" }, `${items.length} episodes and facts, in date order`),
      el("table", { id: "timeline" }, el("tbody", {}, items.map((item) =>
        el("tr", { class: "row", "data-kind": item.kind, onclick: () => openEpisode(item.episode_id) },
          el("td", { class: "muted" }, day(item.date)), el("td", { class: item.kind === "episode" ? "Episode" : "Fact" }, item.kind),
          el("td", {}, item.kind === "episode" ? item.title : item.text))))));
    if (elementId) await showHyperedges(elementId, false);
  } catch (error) { failed(error); }
}

// --- the hyperedges around a node: reified Hyperedge nodes with weighted members ----------------------
async function showHyperedges(nodeId, describe = true) {
  try {
    const found = await api(`/v1/memories/${state.memory}/hyperedges?node_id=${encodeURIComponent(nodeId)}`);
    state.hyperedges = new Map(found.hyperedges.map((h) => [h.id, h]));
    const nodes = new Map(), edges = new Map();
    const center = found.node;
    addNode(nodes, center.id, center.label, short(center.caption, 40), { name: center.caption }).classes = "focus";
    const shown = found.hyperedges.slice(0, MAX_HYPEREDGES);
    const hidden = found.hyperedges.length - shown.length;
    for (const h of shown) {
      addNode(nodes, h.id, "Hyperedge", `${h.kind} hyperedge`);
      for (const owner of h.owners) {
        addNode(nodes, owner.id, owner.label, short(owner.caption, 40), { name: owner.caption });
        addEdge(edges, owner.id, h.id, "owns");
      }
      const members = h.members.slice(0, MAX_MEMBERS);
      for (const m of members) {
        addNode(nodes, m.id, m.label, short(m.caption, 40), { name: m.caption });
        addEdge(edges, h.id, m.id, `w ${num(m.weight)}`);
      }
      if (h.role === "member") addEdge(edges, h.id, center.id, `w ${num(h.weight)}`);
      const more = h.members.length - members.length;
      if (more > 0) {
        addNode(nodes, `${h.id}#more`, "More", `+${more} more`);
        addEdge(edges, h.id, `${h.id}#more`, "");
      }
    }
    if (hidden > 0) {
      addNode(nodes, "hyperedges#more", "More", `+${hidden} more hyperedges`);
      addEdge(edges, center.id, "hyperedges#more", "");
    }
    draw([...nodes.values(), ...edges.values()],
      `hyperedges around ${center.label} ${center.id}: ${shown.length} of ${found.hyperedges.length} shown, members capped at ${MAX_MEMBERS} (click a node to follow it)`,
      { name: "breadthfirst", roots: [center.id], circle: true, spacingFactor: 1.1 });
    if (describe) {
      details(el("h3", { class: center.label }, `${center.label}: ${short(center.caption, 120)}`),
        el("p", { class: "muted" }, center.id),
        el("ul", { id: "hyperedge-list" }, found.hyperedges.map((h) => el("li", {},
          `${h.kind} hyperedge (${h.role}${h.weight !== null ? `, weight ${num(h.weight)}` : ""}): `,
          `${h.members.length} members`, el("span", { class: "muted" }, ` owned by ${h.owners.map((o) => short(o.caption, 40)).join(", ")}`)))));
    }
  } catch (error) { failed(error); }
}

function describeHyperedge(h) {
  details(el("h3", { class: "Hyperedge" }, `${h.kind} hyperedge`), el("p", { class: "muted" }, h.id),
    el("p", {}, "owned by ", h.owners.map((o) => `${o.label} ${short(o.caption, 60)}`).join(", ")),
    el("h2", {}, `${h.members.length} members, heaviest first`),
    el("table", { id: "hyperedge-members" }, el("tbody", {}, h.members.map((m) =>
      el("tr", {}, el("td", { class: m.label }, m.label), el("td", {}, short(m.caption, 80)), el("td", { class: "score" }, num(m.weight)))))));
}

// --- query: evidence and explanation paths -------------------------------------------------------------
const STEP_KIND = { query: "Query", topic: "Topic", hyperedge: "Hyperedge", episode: "Episode", fact: "Fact", turn: "Turn" };

function rankers(step) {
  return Object.entries(step.rankers || {}).map(([name, r]) => `${name} #${r.rank} (${num(r.score)})`).join(", ");
}

function stepLabel(step, result) {
  const facts = Object.fromEntries(result.facts.map((f) => [f.id, f.content]));
  const episodes = Object.fromEntries(result.episodes.map((e) => [e.id, e.title]));
  switch (step.level) {
    case "query": return `query\n${short(result.query, 40)}`;
    case "topic": return `${short(step.title, 28)}\nRRF ${num(step.score)}`;
    case "hyperedge": return `${step.kind} hyperedge`;
    case "episode": return `${short(episodes[step.id] || step.id, 28)}\nscore ${num(step.score)}`;
    case "fact": return `${short(facts[step.id] || step.id, 44)}\nscore ${num(step.score)}`;
    case "turn": return `turn ${step.dia_id}`;
    default: return step.id;
  }
}

function drawPaths(result) {
  const nodes = new Map(), edges = new Map();
  for (const turn of result.turns) {
    let previous = null;
    for (const step of drawnSteps(turn.path)) {
      addNode(nodes, step.id, STEP_KIND[step.level], stepLabel(step, result));
      if (previous) addEdge(edges, previous.id, step.id, step.level === "hyperedge" ? "" : previous.level === "hyperedge" ? `w ${num(previous.weight)}` : "");
      previous = step;
    }
  }
  // the caption names the levels of the longest path: query → episode → hyperedge → fact → turn by default, with
  // topic → hyperedge after the query when the topic level is on (search setting use_topics)
  const longest = result.turns.map((t) => drawnSteps(t.path).map((s) => s.level))
    .reduce((a, b) => (b.length > a.length ? b : a), ["query"]);
  draw([...nodes.values(), ...edges.values()],
    `explanation paths of ${result.turns.length} evidence turns: ${longest.join(" → ")} (click a turn on the right to highlight its path)`,
    // levels left to right, from the query
    { name: "breadthfirst", roots: ["query"], directed: true, transform: (node, p) => ({ x: p.y, y: p.x }) });
}

// The turn-level fusion ("fused") is a ranking step on the turn itself, listed in the path text, not a node.
function drawnSteps(path) {
  return path.filter((step) => step.level !== "fused");
}

function highlight(path, item) {
  cy.elements().removeClass("hl").addClass("dim");
  const ids = drawnSteps(path).map((s) => s.id);
  ids.forEach((id, i) => {
    cy.getElementById(id).removeClass("dim").addClass("hl");
    if (i) cy.getElementById(`${ids[i - 1]}->${id}`).removeClass("dim").addClass("hl");
  });
  for (const li of $("evidence").children) li.classList.toggle("active", li === item);
}

function pathText(path) {
  return path.map((s) => {
    if (s.level === "hyperedge") return `${s.kind} hyperedge (w ${num(s.weight)})`;
    if (s.level === "turn") return `turn ${s.dia_id}${s.reply_to ? ` (reply to ${s.reply_to})` : ""}`;
    if (s.level === "query") return s.via ? `query (${s.via})` : "query";
    return `${s.level} ${num(s.score)}${s.rankers ? ` [${rankers(s)}]` : ""}`;
  }).join(" → ");
}

async function runQuery(text) {
  try {
    details(el("p", { class: "muted" }, `querying ${state.memory}…`));
    const result = await api(`/v1/memories/${state.memory}/query`, { method: "POST", body: JSON.stringify({ query: text }) });
    window.explorer.result = result;
    const stop = result.stop;
    const list = el("ol", { id: "evidence", class: "evidence" });
    for (const turn of result.turns) {
      const item = el("li", { "data-dia": turn.dia_id },
        el("span", { class: "dia" }, turn.dia_id), ` ${turn.speaker}, ${day(turn.timestamp)}: `, turn.text, " ",
        el("span", { class: "score" }, num(turn.score)), el("div", { class: "path" }, pathText(turn.path)));
      item.addEventListener("click", () => highlight(turn.path, item));
      list.append(item);
    }
    details(
      el("h3", { class: "Query" }, `Query: ${result.query}`),
      result.answer ? el("p", { class: "answer" }, `Answer: ${result.answer}`) : null,
      el("div", { id: "stop", class: "stop" },
        `${result.analysis.query_type} query · stop rule ${stop.rule} · kept ${stop.cut_at} of ${stop.considered} ${stop.counts}`,
        stop.threshold !== null && stop.threshold !== undefined ? ` · threshold ${num(stop.threshold)}` : ""),
      el("h2", {}, `${result.turns.length} evidence turns`), list,
      // the topic level is off by default (search setting use_topics): no empty section then
      result.topics.length ? el("h2", {}, "topics (RRF of BM25 and dense)") : null,
      result.topics.length ? el("ul", { id: "query-topics" }, result.topics.map((t) => el("li", {}, `${t.title} `,
        el("span", { class: "score" }, num(t.score)), el("span", { class: "muted" }, ` ${rankers(t)}`)))) : null,
      el("p", { class: "muted" }, `query ${result.query_id} · ${result.timings_ms.total} ms`));
    drawPaths(result);
  } catch (error) { failed(error); }
}

// --- wiring ----------------------------------------------------------------------------------------
$("login").addEventListener("submit", (event) => { event.preventDefault(); signIn($("key").value.trim()); });
$("signout").addEventListener("click", signOut);
$("topics-prev").addEventListener("click", () => { state.topicsOffset = Math.max(0, state.topicsOffset - TOPIC_PAGE); loadTopics().catch(failed); });
$("topics-next").addEventListener("click", () => { state.topicsOffset += TOPIC_PAGE; loadTopics().catch(failed); });
$("query-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("query-text").value.trim();
  if (text) runQuery(text);
});
if (state.key) signIn(state.key);
