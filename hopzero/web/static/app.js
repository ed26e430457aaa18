// hopzero's page: play against a player, see what it thinks, watch a training run and replay its
// games, read the tables of match results.
// Plain JavaScript, no libraries, no network beyond this server. The board is drawn from the
// cell points the server sends (the engine's geometry), so the rhombus and the star share it.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);
const STEP_MS = 170; // one leg of an animated move

const ui = {
  board: null,     // {points, homes, cells, kind, preset}
  game: null,      // the server's snapshot
  id: null,        // game id
  selected: null,  // start cell of the piece the person picked
  thought: null,   // the engine's last statistics, drawn as arrows
  socket: null,
  busy: false,     // an animation or a request is under way
  thinking: false,
  lost: false,     // the server no longer has this game (it restarted)
  opponents: [],
};

// ---------------------------------------------------------------------------------------------
// Talking to the server
// ---------------------------------------------------------------------------------------------

async function api(method, url, body) {
  const opts = { method, headers: {} };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(url, opts); // no answer at all: a TypeError without a status
  const data = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) throw Object.assign(new Error(data.error || `HTTP ${res.status}`), { status: res.status });
  return data;
}

function say(text) { $("message").textContent = text || ""; }

function socketUrl(path) {
  return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${path}`;
}

// ---------------------------------------------------------------------------------------------
// Connections: when a websocket drops (the server restarted, the network went away) the page
// tries again after 0.5, 1, 2, 4, 8, 8, ... s and says so in #connection.
// ---------------------------------------------------------------------------------------------

const links = {};  // "game" | "run" -> {down, attempts, timer}

function backoffMs(attempts) { return Math.min(8000, 500 * 2 ** Math.max(0, attempts - 1)); }

function showConnection() {
  const c = $("connection"), down = Object.values(links).filter((l) => l.down);
  if (!down.length) {
    c.dataset.state = "connected";
    c.textContent = c.dataset.dropped ? "Connected to the server again." : "";
    return;
  }
  const attempts = Math.max(...down.map((l) => l.attempts));
  c.dataset.state = "reconnecting";
  c.dataset.dropped = "1";
  c.textContent = `Connection to the server lost: reconnecting (attempt ${attempts}, next in ${(backoffMs(attempts) / 1000).toFixed(1)} s)…`;
}

// Call `retry` after the next back-off delay of link `name`.
function linkDown(name, retry) {
  const l = links[name] || (links[name] = { down: false, attempts: 0, timer: null });
  clearTimeout(l.timer);
  l.down = true;
  l.attempts += 1;
  l.timer = setTimeout(retry, backoffMs(l.attempts));
  showConnection();
}

function linkUp(name) {
  const l = links[name];
  if (!l) return;
  clearTimeout(l.timer);
  l.down = false;
  l.attempts = 0;
  showConnection();
}

function openSocket() {
  if (ui.socket) { ui.socket.onclose = null; ui.socket.close(); }
  const ws = new WebSocket(socketUrl(`/ws/games/${ui.id}`));
  ui.socket = ws;
  ws.onmessage = (ev) => onSocket(JSON.parse(ev.data));
  ws.onclose = () => { if (ui.socket === ws) gameLinkLost(); };
  return new Promise((resolve) => { ws.onopen = () => { linkUp("game"); resolve(); }; });
}

function gameLinkLost() {
  ui.socket = null;
  ui.thinking = false; // the server stops a search whose client left; asked again once back
  setStatus();
  linkDown("game", resumeGame);
}

// Back on line: the game as the server has it now, or the news that it is gone.
async function resumeGame() {
  let data;
  try {
    data = await api("GET", `/api/games/${ui.id}`);
  } catch (err) {
    if (err.status === 404) {
      linkUp("game"); // the server answers: the link is fine, the game is gone
      ui.lost = true;
      ui.thinking = false;
      say("The server no longer has this game (it restarted, and games live in its memory): press New game.");
      draw();
      setStatus();
      return;
    }
    linkDown("game", resumeGame);
    return;
  }
  ui.game = data.game;
  await openSocket();
  say("");
  afterChange(); // asks for the engine's move again if it was thinking when the link dropped
}

function send(msg) {
  if (ui.socket && ui.socket.readyState === WebSocket.OPEN) ui.socket.send(JSON.stringify(msg));
}

async function onSocket(msg) {
  if (msg.type === "thinking") {
    showThought(msg.thought, false);
  } else if (msg.type === "analysis") {
    ui.thinking = false;
    showThought(msg.thought, true);
    setStatus();
  } else if (msg.type === "moved") {
    ui.thinking = false;
    showThought(msg.thought, true);
    await animate(msg.path, ui.game.board);
    ui.game = msg.game;
    afterChange();
  } else if (msg.type === "error") {
    ui.thinking = false;
    say(msg.error);
    setStatus();
  }
}

// ---------------------------------------------------------------------------------------------
// Drawing a board: the play board and the replay board share these
// ---------------------------------------------------------------------------------------------

function el(name, attrs, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

// The empty board of `board` ({points, homes}) on `svg`, cells placed by `P(cell)`.
function drawHoles(svg, board, P, holeAttr) {
  svg.innerHTML = "";
  const pts = board.points.map((_, i) => P(i));
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  const pad = 0.8;
  const minX = Math.min(...xs) - pad, minY = Math.min(...ys) - pad;
  svg.setAttribute("viewBox", `${minX} ${minY} ${Math.max(...xs) - minX + pad} ${Math.max(...ys) - minY + pad}`);
  const defs = el("defs", {}, svg);
  const marker = el("marker", { id: `head-${svg.id}`, viewBox: "0 0 10 10", refX: 6, refY: 5, markerWidth: 3, markerHeight: 3, orient: "auto-start-reverse" }, defs);
  el("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#8a5a00" }, marker);
  const homeOf = {};
  board.homes.forEach((cells, p) => cells.forEach((c) => { homeOf[c] = p; }));
  const holes = el("g", {}, svg);
  pts.forEach(([x, y], i) => {
    const cls = "hole" + (i in homeOf ? ` home-${homeOf[i]}` : "");
    el("circle", { cx: x, cy: y, r: 0.34, class: cls, [holeAttr]: i }, holes);
  });
}

// The path of the last move, dashed, its start ringed.
function drawLastPath(layer, path, P) {
  if (!path || path.length < 2) return;
  const [sx, sy] = P(path[0]);
  el("circle", { cx: sx, cy: sy, r: 0.22, class: "last-start" }, layer);
  el("polyline", { points: path.map((c) => P(c).join(",")).join(" "), class: "last-path" }, layer);
}

// The person's home at the bottom: turn the board half round when it is at the top.
function flipped() {
  const b = ui.board, home = b.homes[ui.game ? ui.game.human : 0];
  const mean = (cells) => cells.reduce((s, c) => s + b.points[c][1], 0) / cells.length;
  const all = b.points.map((_, i) => i);
  return mean(home) < mean(all);
}

function pt(cell) {
  const [x, y] = ui.board.points[cell];
  return flipped() ? [-x, -y] : [x, y];
}

function draw() {
  const svg = $("board");
  if (!ui.board) { svg.innerHTML = ""; return; }
  drawHoles(svg, ui.board, pt, "data-hole");
  const pts = ui.board.points.map((_, i) => pt(i));
  const g = ui.game;
  if (!g) return;

  const layer = el("g", {}, svg);
  drawLastPath(layer, g.last_path, pt);
  const mine = !g.over && !ui.lost && g.to_move === g.human && !ui.thinking;
  g.board.forEach((owner, i) => {
    if (owner < 0) return;
    const [x, y] = pts[i];
    const movable = mine && owner === g.human && String(i) in g.legal;
    const cls = `piece p${owner}` + (movable ? " mine" : "") + (ui.selected === i ? " selected" : "");
    const c = el("circle", { cx: x, cy: y, r: 0.3, class: cls, "data-cell": i, "data-owner": owner }, layer);
    if (movable) c.addEventListener("click", () => pick(i));
  });
  if (ui.selected !== null && g.legal[String(ui.selected)]) {
    for (const e of g.legal[String(ui.selected)]) {
      const [x, y] = pts[e];
      const t = el("circle", { cx: x, cy: y, r: 0.24, class: "target", "data-target": e }, layer);
      t.addEventListener("click", () => playMove(ui.selected, e));
    }
  }
  drawArrows(svg);
}

function drawArrows(svg) {
  const t = ui.thought;
  if (!t || !t.top || !t.top.length || !ui.game || t.version !== ui.game.version) return;
  const layer = el("g", {}, svg);
  for (const m of t.top.slice(0, 5)) {
    if (m.share < 0.02) continue;
    const a = pt(m.move[0]), b = pt(m.move[1]);
    const dx = b[0] - a[0], dy = b[1] - a[1], len = Math.hypot(dx, dy) || 1;
    const shrink = Math.min(0.3, len / 3);
    const x2 = b[0] - (dx / len) * shrink, y2 = b[1] - (dy / len) * shrink;
    el("line", { x1: a[0], y1: a[1], x2, y2, class: "arrow", "stroke-width": 0.05 + 0.18 * m.share,
      "stroke-opacity": 0.35 + 0.6 * m.share, "marker-end": "url(#head-board)" }, layer);
    // the share sits near the arrow's head, where arrows from one piece part
    const lbl = el("text", { x: a[0] + 0.72 * dx, y: a[1] + 0.72 * dy + 0.08, class: "arrow-label", "text-anchor": "middle" }, layer);
    lbl.textContent = `${Math.round(100 * m.share)}%`;
  }
}

// A piece of `owner` flies along `path` on `svg` (cells placed by `P`), one leg at a time; the
// piece standing on the path's start (`pieceAttr` = that cell) is lifted first.
function fly(svg, P, path, owner, pieceAttr) {
  if (!path || path.length < 2) return Promise.resolve();
  const start = svg.querySelector(`circle[${pieceAttr}="${path[0]}"]`);
  if (start) start.remove();
  const [x0, y0] = P(path[0]);
  const piece = el("circle", { cx: x0, cy: y0, r: 0.3, class: `piece p${owner} flying` }, svg);
  return new Promise((resolve) => {
    let leg = 1;
    const stepOnce = () => {
      if (leg >= path.length) { piece.remove(); resolve(); return; }
      const [ax, ay] = P(path[leg - 1]), [bx, by] = P(path[leg]);
      const t0 = performance.now();
      const frame = (now) => {
        const f = Math.min(1, (now - t0) / STEP_MS);
        piece.setAttribute("cx", ax + (bx - ax) * f);
        piece.setAttribute("cy", ay + (by - ay) * f);
        if (f < 1) requestAnimationFrame(frame); else { leg += 1; stepOnce(); }
      };
      requestAnimationFrame(frame);
    };
    stepOnce();
  });
}

// A move on the play board, the page busy meanwhile.
async function animate(path, boardBefore) {
  if (!path || path.length < 2) return;
  ui.busy = true;
  await fly($("board"), pt, path, boardBefore[path[0]], "data-cell");
  ui.busy = false;
}

// ---------------------------------------------------------------------------------------------
// Playing
// ---------------------------------------------------------------------------------------------

function setStatus() {
  const g = ui.game, s = $("status");
  if (!g) return;
  let state, text;
  if (ui.lost) { state = "lost"; text = "This game was lost when the server restarted."; }
  else if (g.over) { state = "over"; text = `Game over: ${g.result_text}.`; }
  else if (ui.thinking) { state = "thinking"; text = "The engine is thinking…"; }
  else if (g.to_move === g.human) { state = "your-turn"; text = `Your move (${"xo"[g.human]}), ply ${g.ply}.`; }
  else { state = "engine-turn"; text = "The engine's move."; }
  if (ui.busy && state !== "over") state = "busy";
  s.dataset.state = state;
  s.textContent = text;
  const gone = ui.lost || !ui.socket;
  $("undo").disabled = gone || ui.thinking || g.moves.length === 0;
  $("resign").disabled = gone || ui.thinking || g.over;
  $("swap").disabled = gone || ui.thinking;
  $("restart").disabled = gone || ui.thinking;
  $("pass").hidden = !(g.must_pass && g.to_move === g.human && !g.over && !gone);
  $("analyze").disabled = gone || ui.thinking || g.over;
  $("stop").disabled = !ui.thinking;
}

function afterChange() {
  const g = ui.game;
  ui.selected = null;
  $("position").value = g.position;
  const list = $("move-list");
  list.innerHTML = "";
  g.moves.forEach((m) => { const li = document.createElement("li"); li.textContent = m; list.appendChild(li); });
  list.scrollTop = list.scrollHeight;
  draw();
  setStatus();
  if (!g.over && !ui.lost && g.to_move !== g.human && !ui.thinking && ui.socket) engineMove();
}

function engineMove() {
  ui.thinking = true;
  setStatus();
  draw();
  send({ type: "reply" });
}

function pick(cell) {
  if (ui.busy || ui.thinking) return;
  ui.selected = ui.selected === cell ? null : cell;
  say("");
  draw();
}

async function playMove(s, e) {
  if (ui.busy) return;
  const before = ui.game.board;
  ui.busy = true;
  try {
    const data = await api("POST", `/api/games/${ui.id}/move`, { move: [s, e], version: ui.game.version });
    ui.selected = null;
    ui.busy = false;
    await animate(data.path, before);
    ui.game = data.game;
    ui.thought = null;
    showThought(null);
    afterChange();
  } catch (err) {
    ui.busy = false;
    say(err.message);
    setStatus();
  }
}

async function action(name, body) {
  if (ui.busy || !ui.id) return;
  try {
    const data = await api("POST", `/api/games/${ui.id}/${name}`, body);
    ui.game = data.game;
    ui.thought = null;
    showThought(null);
    say("");
    afterChange();
  } catch (err) { say(err.message); }
}

function opponentChoice() {
  const item = ui.opponents[Number($("opponent").value)];
  const choice = Object.assign({}, item.choice);
  const n = Number($("strength").value);
  if (choice.kind === "alphabeta") choice.depth = n;
  else if (choice.kind === "mcts" || choice.kind === "mcts-rollout") choice.sims = n;
  return choice;
}

function strengthField() {
  const item = ui.opponents[Number($("opponent").value)];
  if (!item) return;
  const kind = item.choice.kind, label = $("strength-label"), input = $("strength");
  label.hidden = !(kind === "alphabeta" || kind === "mcts" || kind === "mcts-rollout");
  label.firstChild.textContent = kind === "alphabeta" ? "Depth " : "Simulations ";
  input.value = kind === "alphabeta" ? item.choice.depth : item.choice.sims;
}

async function loadPreset() {
  const data = await api("GET", `/api/presets/${$("preset").value}`);
  ui.opponents = data.opponents;
  const sel = $("opponent");
  sel.innerHTML = "";
  data.opponents.forEach((o, i) => { const opt = document.createElement("option"); opt.value = i; opt.textContent = o.label; sel.appendChild(opt); });
  strengthField();
}

async function newGame() {
  say("");
  try {
    const data = await api("POST", "/api/games", { preset: $("preset").value, side: $("side").value, opponent: opponentChoice() });
    ui.id = data.id;
    ui.board = data.board;
    ui.game = data.game;
    ui.thought = null;
    ui.thinking = false;
    ui.lost = false;
    showThought(null);
    $("status").title = data.opponent;
    await openSocket();
    afterChange();
  } catch (err) { say(err.message); }
}

// ---------------------------------------------------------------------------------------------
// What the engine thinks
// ---------------------------------------------------------------------------------------------

function showThought(t, final) {
  ui.thought = t;
  const tbody = $("top-moves").querySelector("tbody");
  tbody.innerHTML = "";
  if (!t || t.value === null || t.value === undefined) {
    $("winbar-fill").style.width = "50%";
    $("win-text").textContent = t ? "no win chance: press Analyse" : "no search yet";
    $("think-info").textContent = "";
    draw();
    return;
  }
  // the root value is the side to move's; the bar shows x's chance
  const g = ui.game, mover = t.mover !== undefined ? t.mover : g.to_move;
  const xChance = mover === 0 ? t.win_chance : 1 - t.win_chance;
  $("winbar-fill").style.width = `${(100 * xChance).toFixed(1)}%`;
  $("win-text").textContent = `x ${(100 * xChance).toFixed(0)}% · o ${(100 * (1 - xChance)).toFixed(0)}%`;
  const net = t.prior_value === null ? "" : `; before search the evaluator gave ${"xo"[mover]} ${t.prior_value.toFixed(2)}`;
  $("think-info").textContent = `${t.simulations} simulations${final ? "" : " so far"}${t.stopped ? " (stopped)" : ""}${net}`;
  for (const m of t.top) {
    const tr = document.createElement("tr");
    const q = m.q === null ? "–" : m.q.toFixed(2);
    tr.innerHTML = `<td>${m.path.join("-")}</td><td>${(100 * m.share).toFixed(1)}%</td><td>${(100 * m.prior).toFixed(1)}%</td><td>${q}</td>`;
    tbody.appendChild(tr);
  }
  draw();
}

// ---------------------------------------------------------------------------------------------
// Watching a run
// ---------------------------------------------------------------------------------------------

let runSocket = null;

function chart(svg, points, opts) {
  svg.innerHTML = "";
  const W = 520, H = 260, L = 44, R = 12, T = 10, B = 30;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const good = points.filter((p) => p[0] !== null && p[1] !== null);
  if (!good.length) { const t = el("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, svg); t.textContent = "no data yet"; return; }
  const xs = good.map((p) => p[0]), ys = good.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs, x0 + 1);
  let y0 = opts.yMin !== undefined ? opts.yMin : Math.min(...ys, 0), y1 = opts.yMax !== undefined ? opts.yMax : Math.max(...ys, 0);
  if (y1 - y0 < 1e-9) { y0 -= 1; y1 += 1; }
  const X = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R), Y = (y) => H - B - ((y - y0) / (y1 - y0)) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const v = y0 + ((y1 - y0) * i) / 4;
    el("line", { x1: L, x2: W - R, y1: Y(v), y2: Y(v), class: "grid" }, svg);
    const t = el("text", { x: L - 4, y: Y(v) + 4, "text-anchor": "end" }, svg); t.textContent = v.toFixed(0);
  }
  el("line", { x1: L, x2: L, y1: T, y2: H - B, class: "axis" }, svg);
  el("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" }, svg);
  if (opts.ref !== undefined) el("line", { x1: L, x2: W - R, y1: Y(opts.ref), y2: Y(opts.ref), class: "ref" }, svg);
  const xl = el("text", { x: (L + W) / 2, y: H - 6, "text-anchor": "middle" }, svg); xl.textContent = "minutes since the run started";
  for (const v of [x0, x1]) { const t = el("text", { x: X(v), y: H - B + 14, "text-anchor": "middle" }, svg); t.textContent = v.toFixed(0); }
  el("polyline", { points: good.map((p) => `${X(p[0])},${Y(p[1])}`).join(" "), class: "series" }, svg);
  for (const p of good) el("circle", { cx: X(p[0]), cy: Y(p[1]), r: 3, class: "dot" }, svg);
}

function fillTable(id, rows) {
  const tbody = $(id).querySelector("tbody");
  tbody.innerHTML = "";
  for (const cells of rows) {
    const tr = document.createElement("tr");
    for (const c of cells) {
      const td = document.createElement("td");
      if (c && typeof c === "object") { td.textContent = c.text; td.className = c.cls; } else td.textContent = c === null || c === undefined ? "–" : c;
      tr.appendChild(td);
    }
    tbody.appendChild(tr);
  }
}

const fmt = (x, d) => (x === null || x === undefined ? null : Number(x).toFixed(d));

function showRun(run) {
  $("run-info").textContent = `${run.name}: preset ${run.preset || "?"}, config ${run.config || "?"}, started ${run.started || "?"}, best model ${run.best || "none yet"}`
    + (run.notes.length ? ` (${run.notes.join("; ")})` : "");
  chart($("chart-winrate"), run.greedy.map((e) => [e.minutes, e.score === null ? null : 100 * e.score]), { yMin: 0, yMax: 100, ref: 50 });
  chart($("chart-elo"), run.greedy.map((e) => [e.minutes, e.elo]), { ref: 0 });
  fillTable("gates", run.gates.slice().reverse().map((g) => [fmt(g.minutes, 1), g.candidate, g.best, fmt(g.score, 3), g.games,
    { text: g.decision, cls: g.decision === "promote" ? "promote" : "reject" }, g.reason]));
  fillTable("promotions", run.promotions.slice().reverse().map((p) => [p.version, p.promoted_at, fmt(p.score, 3), p.games]));
  fillTable("ratings", run.ratings.map((r) => [r.name, fmt(r.elo, 0), fmt(r.stderr, 0), r.games]));
  showGames(run);
}

function watchRun(index) {
  if (runSocket) { runSocket.onclose = null; runSocket.close(); }
  const ws = new WebSocket(socketUrl(`/ws/runs/${index}`));
  runSocket = ws;
  ws.onopen = () => linkUp("run");
  ws.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    if (msg.type === "run") showRun(msg.run); else say(msg.error);
  };
  ws.onclose = () => { if (runSocket === ws) linkDown("run", () => watchRun(index)); };
}

// ---------------------------------------------------------------------------------------------
// Replaying a run's games
// ---------------------------------------------------------------------------------------------

const replay = { run: null, game: null, boards: [], ply: 0, busy: false };

function resultText(scores) {
  // The result vector by seat: the winners share it, a draw splits it equally.
  if (!Array.isArray(scores)) return "–";
  const best = Math.max(...scores);
  if (scores.every((x) => x === best)) return "draw";
  return scores.flatMap((x, seat) => (x === best ? [`seat ${seat}`] : [])).join(" and ") + " won";
}

function showGames(run) {
  const tbody = $("run-games").querySelector("tbody");
  tbody.innerHTML = "";
  for (const g of run.games) {
    const tr = document.createElement("tr");
    tr.dataset.game = g.id;
    if (replay.game && replay.run === run.index && replay.game.id === g.id) tr.className = "chosen";
    const players = Array.isArray(g.players) ? `${g.players[0]} (x) – ${g.players[1]} (o)` : "?";
    for (const text of [g.id, g.kind, fmt(g.minutes, 1), players, resultText(g.scores), g.plies]) {
      const td = document.createElement("td");
      td.textContent = text === null || text === undefined ? "–" : text;
      tr.appendChild(td);
    }
    tr.addEventListener("click", () => openReplay(run.index, g.id));
    tbody.appendChild(tr);
  }
  $("no-games").hidden = run.games.length > 0;
}

async function openReplay(runIndex, id) {
  try {
    const data = await api("GET", `/api/runs/${runIndex}/games/${id}`);
    const boards = [data.start_board];
    for (const [s, e] of data.moves) {
      const b = boards[boards.length - 1].slice();
      if (s >= 0) { b[e] = b[s]; b[s] = -1; }
      boards.push(b);
    }
    Object.assign(replay, { run: runIndex, game: data, boards, ply: 0, busy: false });
    document.querySelectorAll("#run-games tbody tr").forEach((tr) => tr.classList.toggle("chosen", Number(tr.dataset.game) === id));
    $("replay").hidden = false;
    drawReplay();
  } catch (err) { say(err.message); }
}

function replayPoint(cell) { return replay.game.board.points[cell]; }

function drawReplay() {
  const d = replay.game, svg = $("replay-board");
  drawHoles(svg, d.board, replayPoint, "data-replay-hole");
  const layer = el("g", {}, svg);
  if (replay.ply > 0) drawLastPath(layer, d.paths[replay.ply - 1], replayPoint);
  replay.boards[replay.ply].forEach((owner, i) => {
    if (owner < 0) return;
    const [x, y] = replayPoint(i);
    el("circle", { cx: x, cy: y, r: 0.3, class: `piece p${owner}`, "data-replay-cell": i, "data-owner": owner }, layer);
  });
  const n = d.moves.length, info = $("replay-info");
  const players = Array.isArray(d.players) ? `${d.players[0]} (x) against ${d.players[1]} (o)` : "";
  const last = replay.ply > 0 ? `, last move ${d.paths[replay.ply - 1].join("-") || "pass"}` : "";
  info.dataset.ply = replay.ply;
  info.textContent = `Game ${d.id} (${d.kind}): ${players}. Ply ${replay.ply} of ${n}${last}` + (replay.ply === n ? `; ${resultText(d.scores)}.` : ".");
  $("replay-first").disabled = $("replay-back").disabled = replay.ply === 0;
  $("replay-next").disabled = $("replay-last").disabled = replay.ply === n;
}

// One ply forward is flown along its path; any other step jumps.
async function stepReplay(to) {
  if (replay.busy || !replay.game) return;
  to = Math.max(0, Math.min(replay.game.moves.length, to));
  if (to === replay.ply + 1) {
    replay.busy = true;
    const path = replay.game.paths[replay.ply];
    if (path.length) await fly($("replay-board"), replayPoint, path, replay.boards[replay.ply][path[0]], "data-replay-cell");
    replay.busy = false;
  }
  replay.ply = to;
  drawReplay();
}

// ---------------------------------------------------------------------------------------------
// Tables: match results
// ---------------------------------------------------------------------------------------------

async function showTables(preset) {
  const data = await api("GET", "/api/tables" + (preset ? `?preset=${encodeURIComponent(preset)}` : ""));
  const sel = $("tables-preset");
  sel.innerHTML = "";
  for (const p of data.presets) { const o = document.createElement("option"); o.value = o.textContent = p; sel.appendChild(o); }
  const t = data.table;
  $("tables-notes").textContent = data.notes.join("; ");
  const grid = $("cross-table");
  grid.innerHTML = "";
  if (!t || !t.players.length) {
    $("tables-info").textContent = data.files.length ? "No match results in the files yet." : "No results files: start the server with hopzero serve --results FILE (written by hopzero match --out FILE).";
    return;
  }
  sel.value = t.preset;
  $("tables-info").textContent = `${t.matches} matches on ${t.preset} from ${data.files.join(", ")}. Ratings are Elo relative to ${t.anchor} = 0` + (t.anchor === "greedy" ? "." : ` (greedy did not play: the anchor is the first player by name).`);
  const head = grid.createTHead().insertRow();
  for (const text of ["#", "player", "Elo", "±", "games", ...t.players.map((_, j) => String(j + 1))]) {
    const th = document.createElement("th"); th.textContent = text; head.appendChild(th);
  }
  const body = grid.createTBody();
  t.players.forEach((p, i) => {
    const tr = body.insertRow();
    for (const text of [i + 1, p.name, fmt(p.elo, 0), fmt(p.stderr, 0), p.games]) tr.insertCell().textContent = text === null ? "–" : text;
    t.cells[i].forEach((c, j) => {
      const td = tr.insertCell();
      td.className = "score";
      if (i === j) { td.textContent = "×"; td.className = "self"; return; }
      if (!c) { td.textContent = ""; return; }
      td.textContent = `${(100 * c.score).toFixed(0)}%`;
      td.title = `${p.name} against ${t.players[j].name}: ${c.wins} won, ${c.draws} drawn, ${c.losses} lost`;
      td.dataset.score = c.score;
      td.appendChild(Object.assign(document.createElement("small"), { textContent: ` ${c.wins}-${c.draws}-${c.losses}` }));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Wiring
// ---------------------------------------------------------------------------------------------

function download(format) {
  if (!ui.id) return;
  const a = document.createElement("a");
  a.href = `/api/games/${ui.id}/download?format=${format}`;
  a.click();
}

async function init() {
  const info = await api("GET", "/api/info");
  const params = new URLSearchParams(location.search);
  for (const p of info.presets) { const o = document.createElement("option"); o.value = o.textContent = p; $("preset").appendChild(o); }
  if (params.get("preset")) {
    const want = params.get("preset");
    if (!info.presets.includes(want)) { const o = document.createElement("option"); o.value = o.textContent = want; $("preset").appendChild(o); }
    $("preset").value = want;
  }
  $("analyze-sims").max = info.limits.max_simulations;
  await loadPreset();
  $("preset").addEventListener("change", loadPreset);
  $("opponent").addEventListener("change", strengthField);
  $("new-game").addEventListener("click", newGame);
  $("undo").addEventListener("click", () => action("undo"));
  $("resign").addEventListener("click", () => action("resign"));
  $("swap").addEventListener("click", () => action("swap"));
  $("restart").addEventListener("click", () => action("restart"));
  $("pass").addEventListener("click", () => playMove(-1, -1));
  $("load-position").addEventListener("click", () => action("position", { text: $("position").value.trim() }));
  $("download-json").addEventListener("click", () => download("json"));
  $("download-moves").addEventListener("click", () => download("moves"));
  $("analyze").addEventListener("click", () => {
    ui.thinking = true; setStatus();
    send({ type: "analyze", sims: Number($("analyze-sims").value) });
  });
  $("stop").addEventListener("click", () => send({ type: "stop" }));
  document.querySelectorAll(".tab").forEach((b) => b.addEventListener("click", () => {
    document.querySelectorAll(".tab").forEach((x) => x.classList.toggle("active", x === b));
    document.querySelectorAll(".panel").forEach((p) => p.classList.toggle("active", p.id === b.dataset.tab));
  }));
  $("replay-first").addEventListener("click", () => stepReplay(0));
  $("replay-back").addEventListener("click", () => stepReplay(replay.ply - 1));
  $("replay-next").addEventListener("click", () => stepReplay(replay.ply + 1));
  $("replay-last").addEventListener("click", () => stepReplay(Infinity));
  $("tables-preset").addEventListener("change", () => showTables($("tables-preset").value).catch((err) => say(err.message)));
  $("tab-tables").addEventListener("click", () => showTables($("tables-preset").value || null).catch((err) => say(err.message)));
  const runSel = $("run-select");
  $("no-runs").hidden = info.runs.length > 0;
  for (const r of info.runs) { const o = document.createElement("option"); o.value = r.index; o.textContent = `${r.index}: ${r.name}`; runSel.appendChild(o); }
  runSel.addEventListener("change", () => watchRun(runSel.value));
  if (info.runs.length) watchRun(0);
  if (params.get("tab") === "runs") $("tab-runs").click();
  if (params.get("tab") === "tables") $("tab-tables").click();
  if (params.get("play") !== null) await newGame();
}

init().catch((err) => say(err.message));
