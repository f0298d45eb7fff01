/// The fleet page served at `GET /`: one self-contained HTML document (style and script inline, nothing loaded from
/// elsewhere) that polls `/v1/fleet` every 1.5 s and shows one row per agent (docs/fleet.md).
///
/// Everything the page computes comes from the collector's numbers: ages against the snapshot's `now_ms` (never
/// the browser's clock), records/s from the per-second counts the collector keeps, so a page opened a minute late
/// or kept in a throttled background tab shows the same thing. Agent data reaches the document only as text
/// (`textContent`), never as markup.
enum FleetPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>uplink · fleet</title>
<style>
:root {
  --bg: #f6f7f9; --panel: #fff; --text: #1d2330; --muted: #6a7282; --line: #e3e6eb;
  --accent: #2f6fde; --ok: #1f9d55; --warn: #c77c02; --bad: #d0342c; --spark: #2f6fde; --spark-fill: rgba(47,111,222,.12);
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #12151b; --panel: #1a1f27; --text: #e4e8ef; --muted: #8d96a6; --line: #2a313c;
    --accent: #6ea0ff; --ok: #3ecf7a; --warn: #f0b23e; --bad: #ff6b61; --spark: #6ea0ff; --spark-fill: rgba(110,160,255,.15);
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: .5rem 1rem; padding: 1rem 1.5rem .5rem; }
h1 { font-size: 1.25rem; margin: 0; font-weight: 650; letter-spacing: -.01em; }
h1 span { color: var(--muted); font-weight: 400; }
#status { margin-left: auto; color: var(--muted); font-size: .85rem; display: flex; align-items: center; gap: .4rem; }
#status::before { content: ""; width: .55rem; height: .55rem; border-radius: 50%; background: var(--muted); }
#status.live::before { background: var(--ok); }
#status.error { color: var(--bad); }
#status.error::before { background: var(--bad); }
main { padding: 0 1.5rem 1.5rem; }
.summary { display: flex; flex-wrap: wrap; gap: .75rem; margin: .5rem 0 1rem; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: .55rem .9rem; min-width: 8.5rem; }
.card b { display: block; font-size: 1.35rem; font-weight: 650; font-variant-numeric: tabular-nums; }
.card small { color: var(--muted); }
.toolbar { display: flex; gap: .75rem; align-items: center; margin-bottom: .6rem; }
.toolbar input { font: inherit; padding: .35rem .6rem; border: 1px solid var(--line); border-radius: 6px;
  background: var(--panel); color: var(--text); width: 16rem; max-width: 100%; }
.toolbar small { color: var(--muted); }
.table { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { padding: .55rem .8rem; text-align: left; white-space: nowrap; border-bottom: 1px solid var(--line); vertical-align: middle; }
tbody tr:last-child td { border-bottom: 0; }
th { font-size: .75rem; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.agent { font-weight: 600; }
td.identity { white-space: normal; overflow-wrap: anywhere; max-width: 22rem; color: var(--muted); font-size: .85rem; }
.pill { display: inline-flex; align-items: center; gap: .35rem; font-weight: 600; font-size: .85rem; }
.pill::before { content: ""; width: .5rem; height: .5rem; border-radius: 50%; background: currentColor; }
.streaming .pill { color: var(--ok); }
.disconnected .pill { color: var(--muted); }
.disconnected td.agent { color: var(--muted); }
.sub { display: block; color: var(--muted); font-size: .78rem; font-weight: 400; }
.rate { display: flex; align-items: center; justify-content: flex-end; gap: .6rem; }
.rate svg { flex: none; }
.warn { color: var(--warn); font-weight: 600; }
.bad { color: var(--bad); font-weight: 600; }
.zero { color: var(--muted); }
.empty { padding: 2rem; text-align: center; color: var(--muted); }
@media (max-width: 760px) {
  header, main { padding-left: .75rem; padding-right: .75rem; }
  #status { margin-left: 0; width: 100%; }
  .card { flex: 1 1 40%; min-width: 0; }
  .toolbar input { width: 100%; }
  thead { display: none; }
  table, tbody, tr, td { display: block; width: 100%; }
  tr { border-bottom: 1px solid var(--line); padding: .4rem 0; }
  tbody tr:last-child { border-bottom: 0; }
  td { border: 0; padding: .2rem .8rem; display: flex; justify-content: space-between; gap: 1rem; white-space: normal; text-align: right; }
  td.num { text-align: right; }
  td::before { content: attr(data-label); color: var(--muted); font-size: .78rem; text-align: left; }
  td.agent { font-size: 1rem; }
  td.agent::before { content: none; }
  td.identity { max-width: none; }
}
</style>
</head>
<body>
<header>
  <h1>uplink <span>· fleet</span></h1>
  <div id="status">connecting…</div>
</header>
<main>
  <section class="summary" aria-label="summary">
    <div class="card"><b id="sum-agents">–</b><small>agents</small></div>
    <div class="card"><b id="sum-streaming">–</b><small>streaming</small></div>
    <div class="card"><b id="sum-rate">–</b><small>records/s</small></div>
    <div class="card"><b id="sum-missing">–</b><small>records missing</small></div>
    <div class="card"><b id="sum-stored">–</b><small>records stored</small></div>
  </section>
  <div class="toolbar">
    <input id="filter" type="search" placeholder="Filter agents" aria-label="Filter agents" autocomplete="off">
    <small id="bounds"></small>
  </div>
  <div class="table">
    <table id="fleet">
      <thead><tr>
        <th>Agent</th><th>State</th><th class="num">Records/s</th><th class="num">Lag</th>
        <th class="num">Stored</th><th class="num">Missing</th><th class="num">Resent</th><th class="num">Rejected</th>
        <th>TLS identity</th><th>Config</th>
      </tr></thead>
      <tbody id="agents"></tbody>
    </table>
    <div id="empty" class="empty" hidden>No agent has opened a stream to this collector yet.</div>
  </div>
</main>
<script>
"use strict";
const POLL_MS = 1500;
const RATE_WINDOW = 10;
const SVG = "http://www.w3.org/2000/svg";
let last = null;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function count(n) { return Number(n).toLocaleString("en-US"); }

function rateText(r) {
  if (r === null) return "–";
  if (r === 0) return "0";
  return r < 10 ? r.toFixed(1) : Math.round(r).toLocaleString("en-US");
}

function age(ms) {
  if (ms < 0) ms = 0;
  const s = ms / 1000;
  if (s < 10) return s.toFixed(1) + " s";
  if (s < 120) return Math.round(s) + " s";
  const m = Math.floor(s / 60);
  if (m < 120) return m + " min";
  const h = Math.floor(m / 60);
  if (h < 48) return h + " h " + (m % 60) + " min";
  return Math.floor(h / 24) + " d";
}

// Records per second over the last complete seconds: the last RATE_WINDOW, fewer for a stream younger than that.
function rate(agent, now) {
  if (!agent.connected) return null;
  const series = agent.records_per_second;
  let window = RATE_WINDOW;
  if (agent.connected_since_ms !== null) {
    window = Math.max(1, Math.min(RATE_WINDOW, Math.floor((now - agent.connected_since_ms) / 1000)));
  }
  const recent = series.slice(-window);
  if (recent.length === 0) return 0;
  return recent.reduce((a, b) => a + b, 0) / recent.length;
}

function sparkline(series) {
  const w = 120, h = 26, pad = 2;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  svg.setAttribute("viewBox", "0 0 " + w + " " + h);
  svg.setAttribute("aria-hidden", "true");
  const max = Math.max(1, ...series);
  const step = series.length > 1 ? (w - 2 * pad) / (series.length - 1) : 0;
  const pts = series.map((v, i) => (pad + i * step).toFixed(1) + "," + (h - pad - (v / max) * (h - 2 * pad)).toFixed(1));
  const area = document.createElementNS(SVG, "polygon");
  area.setAttribute("points", pad + "," + (h - pad) + " " + pts.join(" ") + " " + (w - pad) + "," + (h - pad));
  area.setAttribute("fill", "var(--spark-fill)");
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", pts.join(" "));
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", "var(--spark)");
  line.setAttribute("stroke-width", "1.5");
  line.setAttribute("stroke-linejoin", "round");
  const title = document.createElementNS(SVG, "title");
  title.textContent = "records/s over the last " + series.length + " s, peak " + count(Math.max(0, ...series));
  svg.append(title, area, line);
  return svg;
}

function cell(label, cls, text) {
  const td = el("td", cls, text);
  td.dataset.label = label;
  return td;
}

function countCell(label, value, warnIfAny) {
  const td = cell(label, "num", count(value));
  td.dataset.value = String(value);
  if (value === 0) td.classList.add("zero");
  else if (warnIfAny) td.classList.add("warn");
  return td;
}

function row(agent, now) {
  const tr = el("tr", agent.connected ? "agent streaming" : "agent disconnected");
  tr.dataset.agent = agent.agent;
  tr.dataset.state = agent.connected ? "streaming" : "disconnected";

  const name = cell("Agent", "agent", agent.agent);
  const detail = [agent.http_version, agent.peer].filter(Boolean).join(" · ");
  if (detail) name.append(el("span", "sub", detail));
  tr.append(name);

  const state = cell("State", "state");
  const stateBox = el("span");
  stateBox.append(el("span", "pill", agent.connected ? "streaming" : "disconnected"));
  stateBox.append(el("span", "sub", agent.connected
    ? "for " + age(now - agent.connected_since_ms)
    : (agent.streams_opened === 0 ? "no stream; " : "") + "last seen " + age(now - agent.last_seen_ms) + " ago"));
  state.append(stateBox);
  tr.append(state);

  const r = rate(agent, now);
  const rateCell = cell("Records/s", "num");
  rateCell.dataset.rate = r === null ? "" : String(r);
  const box = el("div", "rate");
  box.append(el("span", r === 0 || r === null ? "zero" : "", rateText(r)), sparkline(agent.records_per_second));
  rateCell.append(box);
  tr.append(rateCell);

  const lagCell = cell("Lag", "num");
  if (agent.newest_record_ms === null) {
    lagCell.textContent = "–";
    lagCell.classList.add("zero");
  } else {
    const lag = now - agent.newest_record_ms;
    lagCell.dataset.lag = String(lag);
    lagCell.textContent = age(lag);
    if (agent.connected && lag > 60000) lagCell.classList.add("bad");
    else if (agent.connected && lag > 10000) lagCell.classList.add("warn");
  }
  lagCell.title = "age of the newest record stored";
  tr.append(lagCell);

  const stored = countCell("Stored", agent.records_stored, false);
  stored.classList.remove("zero");
  stored.dataset.stored = String(agent.records_stored);
  tr.append(stored);
  const missing = countCell("Missing", agent.records_missing, true);
  if (agent.records_missing > 0) missing.classList.replace("warn", "bad");
  missing.title = "records the agent dropped (gaps in its sequence numbers)";
  tr.append(missing);
  const resent = countCell("Resent", agent.resent_discarded, false);
  resent.title = "log lines sent again after a restart and discarded; duplicates discarded: " + count(agent.duplicates_discarded);
  tr.append(resent);
  tr.append(countCell("Rejected", agent.rejected_lines, true));

  tr.append(cell("TLS identity", "identity", agent.tls_identity === null ? "–" : agent.tls_identity));
  tr.append(configCell(agent.config));
  return tr;
}

function shortRevision(rev) { return rev ? rev.replace("sha256:", "").slice(0, 8) : "–"; }

function configCell(config) {
  const td = cell("Config", "config");
  if (!config) {
    td.textContent = "–";
    td.classList.add("zero");
    return td;
  }
  td.dataset.state = config.state;
  const box = el("span");
  box.append(el("span", "pill", config.state.replace("_", " ")));
  box.append(el("span", "sub", shortRevision(config.effective)
    + (config.desired && config.desired !== config.effective ? " → " + shortRevision(config.desired) : "")));
  td.append(box);
  if (config.state === "failed" || config.state === "rolled_back") td.classList.add("bad");
  else if (config.state === "applying") td.classList.add("warn");
  td.title = "desired " + (config.desired || "–") + "\neffective " + (config.effective || "–")
    + "\nlast-known-good " + (config.lkg || "–") + (config.error ? "\nerror: " + config.error : "");
  return td;
}

function render(data) {
  last = data;
  const now = data.now_ms;
  const needle = document.getElementById("filter").value.trim().toLowerCase();
  const agents = data.agents.filter(a => !needle || a.agent.toLowerCase().includes(needle)
    || (a.tls_identity || "").toLowerCase().includes(needle));
  const body = document.createDocumentFragment();
  for (const agent of agents) body.append(row(agent, now));
  document.getElementById("agents").replaceChildren(body);
  document.getElementById("empty").hidden = data.agents.length > 0;

  const streaming = data.agents.filter(a => a.connected);
  const total = streaming.reduce((sum, a) => sum + (rate(a, now) || 0), 0);
  document.getElementById("sum-agents").textContent = count(data.agents.length);
  document.getElementById("sum-streaming").textContent = count(streaming.length);
  document.getElementById("sum-rate").textContent = rateText(total);
  document.getElementById("sum-missing").textContent = count(data.agents.reduce((s, a) => s + a.records_missing, 0));
  document.getElementById("sum-stored").textContent = count(data.agents.reduce((s, a) => s + a.records_stored, 0));
  const bounds = data.agents_evicted > 0
    ? "keeps " + count(data.capacity) + " agents; " + count(data.agents_evicted) + " evicted"
    : "";
  const rollouts = (data.rollouts || []).map(r => "rollout " + r.name + ": stage " + r.stage
    + (r.halted ? " (halted: " + r.reason + ")" : ""));
  document.getElementById("bounds").textContent = [bounds].concat(rollouts).filter(Boolean).join(" · ");
}

function setStatus(text, cls) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.className = cls;
}

async function poll() {
  try {
    const response = await fetch(new URL("/v1/fleet", location.origin), { cache: "no-store", credentials: "same-origin" });
    if (!response.ok) throw new Error("HTTP " + response.status);
    render(await response.json());
    setStatus("live · updated every " + (POLL_MS / 1000) + " s", "live");
  } catch (error) {
    setStatus("cannot reach the collector (" + error.message + "); retrying", "error");
  } finally {
    setTimeout(poll, POLL_MS);
  }
}

document.getElementById("filter").addEventListener("input", () => { if (last) render(last); });
poll();
</script>
</body>
</html>
"""#
}
