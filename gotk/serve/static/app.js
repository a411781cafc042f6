// gotk serve front-end: hash routes over the JSON API; boards arrive as SVG drawn by gotk.serve.draw.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const main = () => $("#main");
let INFO = null;
let keyHandler = null;

function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

function showError(msg) {
  const el = $("#error");
  if (msg) { el.textContent = msg; el.hidden = false; } else { el.textContent = ""; el.hidden = true; }
}

async function api(path, body) {
  const opts = body === undefined ? {} : {method: "POST", headers: {"Content-Type": "application/json"},
                                          body: JSON.stringify(body)};
  let res;
  try { res = await fetch(path, opts); } catch (e) { throw new Error("the server cannot be reached: " + e.message); }
  const text = await res.text();
  let data = null;
  try { data = JSON.parse(text); } catch (e) { /* not JSON (e.g. SGF) */ }
  if (!res.ok) throw new Error((data && data.error) || `${res.status} ${res.statusText}`);
  return data === null ? text : data;
}

function parseHash() {
  const h = location.hash.replace(/^#/, "") || "/";
  const [path, query] = h.split("?");
  return {parts: path.split("/").filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(query || "")};
}

async function route() {
  showError("");
  if (keyHandler) { document.removeEventListener("keydown", keyHandler); keyHandler = null; }
  const {parts, query} = parseHash();
  try {
    if (!INFO) INFO = await api("/api/info");
    if (parts[0] === "d" && parts.length === 2) await datasetPage(parts[1]);
    else if (parts[0] === "d" && parts[2] === "g") await viewerPage(parts[1], parts[3], parseInt(parts[4] || "0", 10), query);
    else if (parts[0] === "analyse") await analysePage(query);
    else if (parts[0] === "play") await playPage();
    else homePage();
  } catch (e) { showError(e.message); }
}

// --- home ---------------------------------------------------------------------------------------

function homePage() {
  const ds = INFO.datasets.map(d => `<li><a class="dataset-link" href="#/d/${encodeURIComponent(d.id)}">${esc(d.name)}</a>
    <span class="muted">${esc(d.encoder)} · ${d.board_size}×${d.board_size} · ${d.games.toLocaleString()} games ·
    ${d.rows.toLocaleString()} positions</span></li>`).join("") || "<li class='muted'>no dataset given on the command line</li>";
  const ag = INFO.agents.map(a => `<li>${esc(a.name)} <span class="muted">${a.board_size ? a.board_size + "×" + a.board_size : "any size"}
    ${a.model ? "· " + esc(a.model) + " · " + esc(a.encoder) : ""}${a.has_value ? " · value head" : ""}${a.conditioned ? " · conditioned on metadata: plays as a profile" : ""}</span></li>`).join("");
  main().innerHTML = `<h2>Datasets</h2><ul>${ds}</ul><h2>Agents</h2><ul>${ag}</ul>
    <p><a href="#/analyse">Analyse a position</a> · <a href="#/play">Play against an agent</a></p>`;
}

// --- dataset: summary + games table -------------------------------------------------------------

const COLS = ["date", "black", "black_rank", "white", "white_rank", "result", "handicap", "komi", "num_moves", "split"];
const tableState = {};

async function datasetPage(id) {
  const s = await api(`/api/datasets/${encodeURIComponent(id)}`);
  const st = tableState[id] || (tableState[id] = {sort: "date", desc: false, offset: 0, limit: 50});
  main().innerHTML = `<h2>${esc(s.name)}</h2><pre class="summary">${esc(s.lines.join("\n"))}</pre>
    <h3>Statistics</h3><div id="stats" class="muted">loading the games' statistics…</div>
    <h3>Games</h3>
    <form class="filters" id="filters">
      <label>player<input name="player" value="${esc(st.player || "")}"></label>
      <label>rank<input name="rank" placeholder="e.g. 5d" value="${esc(st.rank || "")}"></label>
      <label>date from<input name="date_from" placeholder="2017-02-01" value="${esc(st.date_from || "")}"></label>
      <label>date to<input name="date_to" placeholder="2017-02" value="${esc(st.date_to || "")}"></label>
      <label>result<input name="result" placeholder="B+, W+R" value="${esc(st.result || "")}"></label>
      <label>split<input name="split" placeholder="train" value="${esc(st.split || "")}"></label>
      <button type="submit">filter</button>
    </form>
    <div id="games"></div>`;
  $("#filters").addEventListener("submit", ev => {
    ev.preventDefault();
    for (const [k, v] of new FormData(ev.target)) st[k] = v.trim();
    st.offset = 0;
    loadGames(id);
  });
  loadStats(id);
  await loadGames(id);
}

async function loadStats(id) {
  // the gotk stats report of the dataset's games: its charts (PNG, drawn by gotk.stats.plots) and its tables
  let r;
  try { r = await api(`/api/datasets/${encodeURIComponent(id)}/stats`); } catch (e) { showError(e.message); return; }
  const box = $("#stats");
  if (!box) return;  // the page changed meanwhile
  const g = r.report;
  box.className = "";
  box.innerHTML = `<p id="stats-headline">${g.games.toLocaleString()} games · ${(g.positions ?? 0).toLocaleString()} positions ·
      ${(100 * (g.bots.share || 0)).toFixed(1)}% with a program · mean length ${g.length.mean} moves</p>
    <div class="charts">${r.charts.map(u => `<img class="stats-chart" alt="${esc(u.split("/").pop())}" src="${esc(u)}">`).join("")}</div>
    <details><summary>all tables (as <code>gotk stats</code> prints them)</summary><pre class="summary" id="stats-text">${esc(r.text)}</pre></details>`;
}

async function loadGames(id) {
  const st = tableState[id];
  const q = new URLSearchParams();
  for (const k of ["player", "rank", "date_from", "date_to", "result", "split"]) if (st[k]) q.set(k, st[k]);
  q.set("sort", st.sort); q.set("desc", st.desc ? "1" : "0"); q.set("offset", st.offset); q.set("limit", st.limit);
  const box = $("#games");
  let r;
  try { r = await api(`/api/datasets/${encodeURIComponent(id)}/games?${q}`); } catch (e) { showError(e.message); return; }
  showError("");
  const head = COLS.map(c => `<th data-col="${c}">${c}${st.sort === c ? (st.desc ? " ▼" : " ▲") : ""}</th>`).join("");
  const rows = r.rows.map(g => `<tr data-game="${esc(g.game_id)}">${COLS.map(c =>
    `<td>${c === "date" ? `<a class="game-link" href="#/d/${encodeURIComponent(id)}/g/${encodeURIComponent(g.game_id)}/0">${esc(g[c] || "?")}</a>` : esc(g[c])}</td>`).join("")}</tr>`).join("");
  const last = Math.min(r.offset + r.limit, r.total);
  box.innerHTML = `<p class="muted" id="games-count">${r.total.toLocaleString()} games; showing ${r.total ? r.offset + 1 : 0}–${last}</p>
    <table class="games"><thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table>
    <p><button id="prev" ${r.offset === 0 ? "disabled" : ""}>◀ previous</button>
       <button id="next" ${last >= r.total ? "disabled" : ""}>next ▶</button></p>`;
  box.querySelectorAll("th").forEach(th => th.addEventListener("click", () => {
    const c = th.dataset.col;
    if (st.sort === c) st.desc = !st.desc; else { st.sort = c; st.desc = false; }
    st.offset = 0; loadGames(id);
  }));
  $("#prev").addEventListener("click", () => { st.offset = Math.max(0, st.offset - st.limit); loadGames(id); });
  $("#next").addEventListener("click", () => { st.offset += st.limit; loadGames(id); });
}

// --- game viewer ----------------------------------------------------------------------------------

async function viewerPage(id, game, k, query) {
  const planes = (query.get("planes") || "").split(",").filter(Boolean);
  const q = new URLSearchParams({move: String(k)});
  if (planes.length) q.set("planes", planes.join(","));
  const r = await api(`/api/datasets/${encodeURIComponent(id)}/games/${encodeURIComponent(game)}/position?${q}`);
  const g = r.game;
  const colour = Object.fromEntries(r.legend.map(l => [l.plane, l.colour]));
  const go = (kk, pl = planes) => {
    const kk2 = Math.max(0, Math.min(r.count - 1, kk));
    location.hash = `#/d/${encodeURIComponent(id)}/g/${encodeURIComponent(game)}/${kk2}` + (pl.length ? `?planes=${pl.map(encodeURIComponent).join(",")}` : "");
  };
  const planeList = r.planes.map(n => `<label><input type="checkbox" class="plane-toggle" data-plane="${esc(n)}"
      ${planes.includes(n) ? "checked" : ""}>${colour[n] ? `<span class="swatch" style="background:${colour[n]}"></span>` : ""}${esc(n)}
      <span class="muted">(${r.plane_counts[n]})</span></label>`).join("");
  main().innerHTML = `<p><a href="#/d/${encodeURIComponent(id)}">◀ ${esc(id)}</a></p>
    <h2>${esc(g.black)} ${esc(g.black_rank || "")} (B) vs ${esc(g.white)} ${esc(g.white_rank || "")} (W) · ${esc(g.date || "")} · ${esc(g.result || "")}</h2>
    <div class="viewer"><div class="board-wrap" id="board">${r.svg}</div>
    <div class="side">
      <div class="controls">
        <button id="first" title="Home">|◀</button><button id="back10" title="↑">−10</button><button id="back" title="←">◀</button>
        <button id="fwd" title="→">▶</button><button id="fwd10" title="↓">+10</button><button id="last" title="End">▶|</button>
      </div>
      <p id="position-info">position <b id="pos">${r.move + 1}</b> of ${r.count} · move number ${r.move_number + 1} ·
        <b>${r.to_play === "B" ? "Black" : "White"}</b> to play · recorded next move <b id="next-move">${esc(r.next)}</b> ·
        value target ${r.value > 0 ? "+1" : r.value}</p>
      ${r.stones_known ? "" : "<p class='muted'>this encoder has no stone planes: the board shows only the marks</p>"}
      <p><a id="analyse-link" href="#/analyse?ds=${encodeURIComponent(id)}&g=${encodeURIComponent(game)}&k=${r.move}">agents on this position ▶</a></p>
      <h4>planes (${esc(INFO.datasets.find(d => d.id === id)?.encoder || "")})</h4><div class="planes">${planeList}</div>
      <p class="muted">keys: ← → step, ↑ ↓ jump 10, Home / End</p>
    </div></div>`;
  $("#first").onclick = () => go(0);
  $("#back10").onclick = () => go(r.move - 10);
  $("#back").onclick = () => go(r.move - 1);
  $("#fwd").onclick = () => go(r.move + 1);
  $("#fwd10").onclick = () => go(r.move + 10);
  $("#last").onclick = () => go(r.count - 1);
  main().querySelectorAll(".plane-toggle").forEach(cb => cb.addEventListener("change", () => {
    const n = cb.dataset.plane;
    go(r.move, cb.checked ? [...planes, n] : planes.filter(p => p !== n));
  }));
  keyHandler = ev => {
    if (ev.target.tagName === "INPUT") return;
    const step = {ArrowRight: 1, ArrowLeft: -1, ArrowDown: 10, ArrowUp: -10}[ev.key];
    if (step !== undefined) { ev.preventDefault(); go(r.move + step); }
    else if (ev.key === "Home") go(0);
    else if (ev.key === "End") go(r.count - 1);
  };
  document.addEventListener("keydown", keyHandler);
}

// --- agents on a position -------------------------------------------------------------------------

const setup = {size: 19, komi: 7.5, moves: [], visits: 0, profile: "", compare: ""};

// human-SL profiles (gotk.encoders.metadata_inputs.profile) offered in the profile boxes; any other valid name works
const PROFILES = ["rank_20k", "rank_15k", "rank_10k", "rank_5k", "rank_3k", "rank_1k", "rank_1d", "rank_3d", "rank_5d",
                  "rank_7d", "rank_9d", "rank_1k_5d", "preaz_5k", "preaz_1d", "preaz_5d", "proyear_1990", "proyear_2010",
                  "proyear_2020", "proyear_2023"];

function profileList() {
  return `<datalist id="profile-names">${PROFILES.map(p => `<option value="${p}">`).join("")}</datalist>`;
}

const anyConditioned = () => INFO.agents.some(a => a.conditioned);

async function analysePage(query) {
  let source;
  const fromData = query.get("ds");
  if (fromData) source = {dataset: fromData, game: query.get("g") || "", move: parseInt(query.get("k") || "0", 10)};
  else source = {size: setup.size, komi: setup.komi, handicap: 0, moves: setup.moves};
  main().innerHTML = `<h2>Agents on a position</h2>
    ${fromData ? `<p>position ${source.move + 1} of game <a href="#/d/${encodeURIComponent(fromData)}/g/${encodeURIComponent(source.game)}/${source.move}">${esc(source.game.slice(0, 12))}</a> in ${esc(fromData)}
       · <a href="#/analyse">set up a position instead</a></p>`
    : `<p>Click the board to play moves (colours alternate) ·
       size <input id="size" type="number" min="2" max="25" value="${setup.size}" style="width:4em">
       <button id="pass">pass</button> <button id="undo">undo</button> <button id="clear">clear</button></p>`}
    <p>search <input id="visits" type="number" min="0" max="5000" step="1" value="${setup.visits}" style="width:6em"> visits
       per agent with a value head (0: the network alone) <button id="search">search</button>
       <span id="search-status" class="muted"></span></p>
    <p id="profiles" ${anyConditioned() ? "" : "hidden"}>profile <input id="profile" list="profile-names" value="${esc(setup.profile)}"
       placeholder="${fromData ? "recorded" : "e.g. rank_3d"}" style="width:9em"> compare with
       <input id="compare" list="profile-names" value="${esc(setup.compare)}" placeholder="e.g. rank_9d" style="width:9em">
       <button id="show-profiles">show</button>
       <span class="muted">for agents conditioned on metadata${fromData ? "; empty: the position's recorded players" : ""}</span>
       ${profileList()}</p>
    <div class="analyse"><div class="board-wrap" id="board">…</div><div class="agents" id="agents"></div></div>`;
  const refresh = async () => {
    const src = fromData ? source : {size: setup.size, komi: setup.komi, handicap: 0, moves: setup.moves};
    const body = {source: src, top: 10, visits: setup.visits};
    if (anyConditioned() && setup.profile) body.profile = setup.profile;
    if (anyConditioned() && setup.compare) body.compare = setup.compare;
    const r = await api("/api/analyse", body);
    $("#board").innerHTML = `<p class="status">${r.to_play === "B" ? "Black" : "White"} to play</p>` + r.svg;
    $("#agents").innerHTML = r.results.map(a => agentCard(a, r.to_play)).join("");
    if (!fromData) {
      $("#board").querySelectorAll(".target").forEach(t => t.addEventListener("click", async () => {
        setup.moves.push(t.dataset.point);
        try { await refresh(); showError(""); } catch (e) { setup.moves.pop(); showError(e.message); }
      }));
    }
  };
  const runSearch = () => {
    const v = parseInt($("#visits").value, 10);
    setup.visits = Number.isFinite(v) ? v : 0;
    $("#search").disabled = true;
    $("#search-status").textContent = setup.visits ? `searching ${setup.visits} visits…` : "";
    refresh().then(() => showError("")).catch(e => showError(e.message)).finally(() => {
      if (!$("#search")) return;  // the page changed meanwhile
      $("#search").disabled = false;
      $("#search-status").textContent = "";
    });
  };
  $("#search").onclick = runSearch;
  $("#visits").addEventListener("keydown", ev => { if (ev.key === "Enter") runSearch(); });
  const showProfiles = () => {
    setup.profile = $("#profile").value.trim();
    setup.compare = $("#compare").value.trim();
    refresh().then(() => showError("")).catch(e => showError(e.message));
  };
  $("#show-profiles").onclick = showProfiles;
  for (const box of ["#profile", "#compare"]) $(box).addEventListener("keydown", ev => { if (ev.key === "Enter") showProfiles(); });
  if (!fromData) {
    $("#pass").onclick = () => { setup.moves.push("pass"); refresh().catch(e => { setup.moves.pop(); showError(e.message); }); };
    $("#undo").onclick = () => { setup.moves.pop(); refresh().catch(e => showError(e.message)); };
    $("#clear").onclick = () => { setup.moves = []; refresh().catch(e => showError(e.message)); };
    $("#size").onchange = ev => { setup.size = parseInt(ev.target.value, 10); setup.moves = []; refresh().catch(e => showError(e.message)); };
  }
  await refresh();
}

function agentCard(a, toPlay) {
  // one agent: its policy (heat map and top moves) beside its search, so that a search's result shows
  // without scrolling; the random player has no policy to draw, and says so; a conditioned agent shows the
  // policy of its profile, or of two profiles side by side with the moves that change most between them
  const head = `<div class="agent-card" data-agent="${esc(a.agent)}"><h3>${esc(a.name)}</h3>`;
  if (a.error) return head + `<p class="muted agent-error">${esc(a.error)}</p></div>`;
  const search = a.search ? searchBox(a.search, toPlay) : "";
  const note = a.profile_note ? `<p class="muted profile-note">${esc(a.profile_note)}</p>` : "";
  if (a.uniform) return head + note + `<p class="no-policy">${esc(a.note)}</p>${search}</div>`;
  const who = toPlay === "B" ? "Black" : "White";
  const val = v => v === null ? "no value head" : v.toFixed(3);
  if (a.compare) {
    const c = a.compare;
    return head + `<p>value (${who}'s view): as ${esc(a.profile)} <b class="value">${val(a.value)}</b> · as ${esc(c.profile)}
      <b class="value-compare">${val(c.value)}</b> · pass ${(100 * a.pass).toFixed(1)}% / ${(100 * c.pass).toFixed(1)}%</p>
      <div class="card-body"><div class="profile-pair">${policyBox(a, a.profile)}${policyBox(c, c.profile)}</div>
      ${diffTable(a)}${search}</div></div>`;
  }
  return head + note + `<p>value (${who}'s view): <b class="value">${val(a.value)}</b> · pass ${(100 * a.pass).toFixed(1)}%</p>
    <div class="card-body">${policyBox(a, a.profile)}${search}</div></div>`;
}

function policyBox(p, profile) {
  // a policy's heat map and top moves, headed by the profile it is the policy of (if any)
  const title = profile ? `policy as <span class="profile-name">${esc(profile)}</span>` : "policy";
  return `<div class="policy"${profile ? ` data-profile="${esc(profile)}"` : ""}><h4>${title}</h4>${p.svg}
    <ol class="top-moves">${p.top.map(t => `<li data-move="${esc(t.move)}">${esc(t.move)} ${(100 * t.prob).toFixed(2)}%</li>`).join("")}</ol></div>`;
}

function diffTable(a) {
  // the moves whose probability changes most from the profile to the compared one
  const pct = x => (100 * x).toFixed(2) + "%";
  return `<table class="profile-diff"><caption>largest changes</caption><thead><tr><th>move</th><th>${esc(a.profile)}</th>
    <th>${esc(a.compare.profile)}</th><th>change (points)</th></tr></thead>
    <tbody>${a.diff.map(d => `<tr data-move="${esc(d.move)}"><td>${esc(d.move)}</td><td>${pct(d.prob)}</td><td>${pct(d.compare_prob)}</td>
      <td>${d.change > 0 ? "+" : ""}${(100 * d.change).toFixed(2)}</td></tr>`).join("")}</tbody></table>`;
}

function searchBox(sr, toPlay) {
  if (sr.error) return `<p class="muted search-error">${esc(sr.error)}</p>`;
  const who = toPlay === "B" ? "Black" : "White";
  return `<div class="search" data-visits="${sr.visits}"><h4>search: ${sr.visits.toLocaleString()} visits, ${sr.seconds.toFixed(2)} s ·
      ${who}'s win rate <b class="search-winrate">${(100 * sr.winrate).toFixed(1)}%</b></h4>
    ${sr.svg}
    <table class="search-moves"><thead><tr><th>move</th><th>visits</th><th>win rate</th><th>prior</th><th>principal variation</th></tr></thead>
    <tbody>${sr.moves.map(m => `<tr data-move="${esc(m.move)}" data-visits="${m.visits}"><td>${esc(m.move)}</td><td>${m.visits}</td>
      <td>${(100 * m.winrate).toFixed(1)}%</td><td>${(100 * m.prior).toFixed(2)}%</td><td>${esc(m.pv.join(" "))}</td></tr>`).join("")}</tbody></table></div>`;
}

// --- play against an agent --------------------------------------------------------------------------

const game = {agent: null, human: "B", size: 9, komi: 7.5, handicap: 0, visits: 0, moves: [], over: false, result: null,
              profile: "rank_3d", argmax: false, seed: 0};
const newSeed = () => Math.floor(Math.random() * 2 ** 31);  // per game: a game's moves replay alike (undo)

async function playPage() {
  if (game.agent === null) {  // the first agent file given to gotk serve, on its board size; else the random player
    const first = INFO.agents.find(a => a.id !== "random" && a.id !== "mcts") || INFO.agents[0];
    game.agent = first.id;
    game.size = first.board_size || game.size;
  }
  const opts = INFO.agents.map(a => `<option value="${esc(a.id)}" ${a.id === game.agent ? "selected" : ""}>${esc(a.name)}</option>`).join("");
  main().innerHTML = `<h2>Play against an agent</h2>
    <form class="filters" id="newgame">
      <label>agent<select name="agent" id="agent">${opts}</select></label>
      <label>you play<select name="human" id="human"><option value="B">Black</option><option value="W" ${game.human === "W" ? "selected" : ""}>White</option></select></label>
      <label>size<input name="size" id="psize" type="number" min="2" max="25" value="${game.size}"></label>
      <label>komi<input name="komi" id="komi" type="number" step="0.5" value="${game.komi}"></label>
      <label>handicap<input name="handicap" id="handicap" type="number" min="0" max="9" value="${game.handicap}"></label>
      <label>search visits<input name="visits" id="pvisits" type="number" min="0" max="5000" value="${game.visits}" title="0: the network alone; search needs a value head"></label>
      <label id="profile-label">profile<input name="profile" id="pprofile" list="profile-names" value="${esc(game.profile)}"
        title="the human-SL profile a conditioned agent plays as"></label>
      <label id="argmax-label">most probable move<input type="checkbox" id="pargmax" ${game.argmax ? "checked" : ""}
        title="play the profile's most probable move instead of sampling its policy"></label>
      <button type="submit" id="start">new game</button>
      ${profileList()}
    </form>
    <div class="viewer"><div class="board-wrap" id="board"></div>
    <div class="side"><p class="status" id="status"></p>
      <p class="controls"><button id="pass">pass</button><button id="undo">undo</button><button id="resign">resign</button>
      <button id="save">save SGF</button></p>
      <p class="muted" id="moves"></p></div></div>`;
  const fixSize = () => {  // the size of a trained agent; the profile boxes of a conditioned one (which never searches)
    const a = INFO.agents.find(x => x.id === $("#agent").value);
    $("#psize").disabled = !!a.board_size;
    if (a.board_size) $("#psize").value = a.board_size;
    $("#profile-label").hidden = $("#argmax-label").hidden = !a.conditioned;
    $("#pvisits").disabled = !!a.conditioned;
    if (a.conditioned) $("#pvisits").value = 0;
  };
  // a profile changed mid-game plays the agent's next move; a new game keeps it
  $("#pprofile").addEventListener("change", () => { game.profile = $("#pprofile").value.trim(); });
  $("#pargmax").addEventListener("change", () => { game.argmax = $("#pargmax").checked; });
  fixSize();
  // choosing another agent starts a new game with it at once (the page never shows one agent and plays another)
  $("#agent").addEventListener("change", () => { fixSize(); $("#newgame").requestSubmit(); });
  $("#newgame").addEventListener("submit", async ev => {
    ev.preventDefault();
    const agentSel = $("#agent").value;
    const a = INFO.agents.find(x => x.id === agentSel);
    Object.assign(game, {agent: agentSel, human: $("#human").value, size: a.board_size || parseInt($("#psize").value, 10),
                         komi: parseFloat($("#komi").value), handicap: parseInt($("#handicap").value, 10) || 0,
                         visits: parseInt($("#pvisits").value, 10) || 0, profile: $("#pprofile").value.trim(),
                         argmax: $("#pargmax").checked, seed: newSeed(), moves: [], over: false, result: null});
    await send(null);
  });
  $("#pass").onclick = () => send("pass");
  $("#undo").onclick = async () => {
    // back to the last position where the human was to move (drop the agent's reply and the human's move)
    const humanFirst = (game.human === "B") === (game.handicap < 2);
    let n = game.moves.length - 1;
    while (n >= 0 && (n % 2 === 0) !== humanFirst) n--;
    game.moves = game.moves.slice(0, Math.max(0, n));
    game.over = false; game.result = null;
    await send(null);
  };
  $("#resign").onclick = () => {
    if (game.over) return;
    game.over = true; game.result = (game.human === "B" ? "W" : "B") + "+R";
    $("#status").textContent = `you resigned: ${game.result}`;
    $("#board").querySelectorAll(".target").forEach(t => t.remove());
  };
  $("#save").onclick = async () => {
    const a = INFO.agents.find(x => x.id === game.agent);
    const them = "gotk " + a.name + (a.conditioned ? " as " + game.profile : "");
    const names = game.human === "B" ? ["you", them] : [them, "you"];
    try {
      const text = await api("/api/sgf", {size: game.size, komi: game.komi, handicap: game.handicap, moves: game.moves,
                                          result: game.result || "", black: names[0], white: names[1]});
      const link = document.createElement("a");
      link.href = URL.createObjectURL(new Blob([text], {type: "application/x-go-sgf"}));
      link.download = "gotk-game.sgf"; link.id = "sgf-download";
      document.body.appendChild(link); link.click(); link.remove();
      window.lastSgf = text;
    } catch (e) { showError(e.message); }
  };
  await send(null);
}

let playSeq = 0;  // only the latest request's answer is drawn (a new game may be asked for while one is pending)

async function send(move) {
  if (move !== null && game.over) return;
  const seq = ++playSeq;
  let r;
  try {
    const a = INFO.agents.find(x => x.id === game.agent);
    r = await api("/api/play", {agent: game.agent, human: game.human, size: game.size, komi: game.komi,
                               handicap: game.handicap, moves: game.moves, move, visits: game.visits,
                               profile: a && a.conditioned ? game.profile : undefined, argmax: game.argmax, seed: game.seed});
  } catch (e) { if (seq === playSeq) showError(e.message); return; }
  if (seq !== playSeq || !$("#board")) return;
  showError("");
  game.moves = r.moves; game.over = r.over; game.result = r.result;
  $("#board").innerHTML = r.svg;
  $("#board").querySelectorAll(".target").forEach(t => t.addEventListener("click", () => send(t.dataset.point)));
  $("#status").textContent = r.over ? `game over: ${r.result}` :
    `${r.to_play === "B" ? "Black" : "White"} to play` + (r.agent_move ? ` · agent played ${r.agent_move}` : "") +
    (r.profile ? ` as ${r.profile}` : "") +
    (r.search ? ` (searched ${r.search.visits} visits; the agent's win rate ${(100 * r.search.moves[0].winrate).toFixed(1)}%)` : "") +
    ` · captures B ${r.captures[0]} W ${r.captures[1]}`;
  $("#moves").textContent = `${r.moves.length} moves: ${r.moves.join(" ")}`;
  $("#board").dataset.moves = String(r.moves.length);
}

window.addEventListener("hashchange", route);
route();
