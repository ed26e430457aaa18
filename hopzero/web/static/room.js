// A room: the game on the board, its seats, the moves and the win-chance graph, kept in step with
// the server over the room's websocket.
//
// Every message names the room and its version. A move comes as a small `moved` message that
// must follow the version the page has; anything else that changes the room comes whole (`room`).
// A message of another room, or older than what the page shows, is dropped; a gap means the
// page missed something, and it fetches the room again.

import { $, Link, api, el, keys, say } from "./api.js";
import { Analysis, MARK_GLYPH } from "./analysis.js";
import { BoardView, boardsOf } from "./board.js";
import { drawWinGraph } from "./graph.js";

const ui = {
  room: null,       // the server's snapshot, kept up to date
  boards: [],       // the board after each move (0: the start)
  ply: 0,           // the position on screen
  keys: { seats: {} },
  held: null,       // the seats the server says this page's tokens hold (null: not heard yet)
  selected: null,   // the piece picked for a move
  link: null,
  view: null,       // BoardView
  analysis: null,
  queue: Promise.resolve(), // room messages, handled one after the other
  pending: 0,
  busy: false,      // a move is flying or being sent
  labels: false,
  seat: null,       // the seat the board is drawn for
  deadline: null,   // when the person to move runs out of time (this page's clock, ms)
};

const host = {
  room: () => ui.room,
  ply: () => ui.ply,
  redraw: () => render(),
  drawBoard: () => drawBoard(),
  seatAfter: (s) => (s + 1) % ui.room.board_info.players,
};

// -- the seats this page holds --------------------------------------------------------------------

const mine = () => (ui.held !== null ? [...ui.held] : Object.keys(ui.keys.seats).map(Number))
  .filter((s) => ui.room && s < ui.room.seats.length);
const isMine = (s) => mine().includes(s) && ui.room.seats[s].kind === "person";
const live = () => ui.ply === ui.room.plies;

function myTurn() {
  const r = ui.room;
  return !r.over && isMine(r.to_move) && !r.engine_error;
}

function chooseSeat() {
  const r = ui.room, held = mine().filter((s) => r.seats[s].kind === "person");
  if (held.includes(r.to_move)) return r.to_move; // hot-seat: the board turns to whoever moves
  if (ui.seat !== null && ui.seat < r.seats.length) return ui.seat;
  return held.length ? Math.min(...held) : 0;
}

// -- opening a room ---------------------------------------------------------------------------------

export async function openRoom(id) {
  ui.view = new BoardView($("board"), { onTap });
  ui.analysis = new Analysis(host);
  ui.keys = keys.get(id);
  wire();
  document.body.dataset.view = "room";
  $("room-link").value = location.href.split("?")[0];
  try {
    const data = await api("GET", `/api/games/${id}`);
    setRoom(data.room);
  } catch (err) {
    gone(err.status === 404 ? err.message : `The game cannot be shown: ${err.message}`);
    if (err.status === 404) return;
  }
  ui.link = new Link(`/ws/rooms/${id}`, {
    onMessage: (msg) => enqueue(msg),
    onOpen: () => ui.link.send({ type: "hello", tokens: ui.keys.seats }),
  });
  ui.analysis.connect(id);
  window.hopzeroRoom = ui; // for the browser tests: the page's state, read-only by convention
}

function gone(text) {
  document.body.dataset.view = "room";
  $("status").dataset.state = "lost";
  $("status").textContent = text;
}

function setRoom(room) {
  const first = !ui.room;
  const wasLive = first || live();
  ui.room = room;
  ui.boards = boardsOf(room.start_board, room.moves);
  if (wasLive || ui.ply > room.plies) ui.ply = room.plies;
  ui.selected = null;
  ui.analysis.resetFor(room);
  ui.seat = chooseSeat();
  ui.view.setInfo(room.board_info, ui.seat);
  setClock(room.deadline_in);
  document.body.dataset.roomVersion = room.version;
  render();
  if (first) ui.analysis.follow(ui.ply);
}

// -- messages ---------------------------------------------------------------------------------------

function enqueue(msg) {
  ui.pending += 1;
  ui.queue = ui.queue.then(() => handle(msg)).catch((err) => say(err.message)).finally(() => { ui.pending -= 1; });
}

async function refetch() {
  const data = await api("GET", `/api/games/${ui.room.id}`);
  if (data.room.version >= ui.room.version) setRoom(data.room);
}

async function handle(msg) {
  const r = ui.room;
  if (!r || (msg.id !== undefined && msg.id !== r.id)) return;
  if (msg.type === "room") {
    if (msg.version >= r.version) setRoom(msg.room);
  } else if (msg.type === "moved") {
    if (msg.version === r.version + 1) await applyMoved(msg);
    else if (msg.version > r.version + 1) await refetch();
  } else if (msg.type === "thinking") {
    ui.analysis.onRoomMessage(msg);
    if (live()) render();
  } else if (msg.type === "eval") {
    if (msg.line !== r.line) return;
    r.evals[String(msg.ply)] = { shares: msg.eval.shares, sims: msg.eval.sims, exact: msg.eval.exact, engine: msg.eval.engine };
    r.marks = msg.marks;
    ui.analysis.onRoomMessage(msg);
    render();
  } else if (msg.type === "held") {
    ui.held = new Set(msg.seats);
    ui.seat = chooseSeat();
    if (ui.view.seat !== ui.seat) ui.view.setSeat(ui.seat);
    render();
  } else if (msg.type === "presence") {
    r.seats.forEach((s) => { if (s.kind === "person") s.connected = msg.connected.includes(s.seat); });
    renderSeats();
  } else if (msg.type === "clock") {
    if (msg.version === r.version) { setClock(msg.deadline_in); renderStatus(); }
  } else if (msg.type === "error") {
    if (msg.gone) gone(msg.error); else say(msg.error);
  }
}

async function applyMoved(msg) {
  const r = ui.room, rec = msg.record, follow = live();
  const before = ui.boards[ui.boards.length - 1];
  r.moves.push(rec.move);
  r.paths.push(rec.path);
  r.movers.push(rec.seat);
  r.by.push(rec.by);
  for (const k of ["version", "line", "board", "to_move", "ply", "plies", "legal", "must_pass", "over", "result",
    "position", "home", "deadline_in", "engine_error"]) r[k] = msg[k];
  ui.boards.push(msg.board);
  ui.selected = null;
  ui.analysis.thinking = null;
  ui.analysis.hint = null;
  document.body.dataset.roomVersion = r.version;
  setClock(r.deadline_in);
  if (follow) {
    // fly the move unless more messages wait (a fast engines' game: the page catches up)
    if (ui.pending <= 1 && rec.path.length > 1) {
      ui.busy = true;
      $("status").dataset.state = "moving"; // nobody's turn until the piece has landed
      ui.view.render({ board: before, labels: ui.labels });
      await ui.view.fly(rec.path, before[rec.path[0]]);
      ui.busy = false;
    }
    ui.ply = r.plies;
    if (isMine(r.to_move) && !r.over) ui.seat = chooseSeat();
    if (ui.view.seat !== ui.seat) ui.view.setSeat(ui.seat);
    ui.analysis.follow(ui.ply);
  }
  render();
}

// -- moving -----------------------------------------------------------------------------------------

function onTap(cell, kind) {
  if (ui.busy || !live() || !myTurn()) return;
  if (kind === "piece") {
    ui.selected = ui.selected === cell ? null : cell;
    say("");
    drawBoard();
  } else if (kind === "target" && ui.selected !== null) {
    playMove(ui.selected, cell);
  }
}

async function playMove(s, e) {
  const r = ui.room, seat = r.to_move;
  ui.busy = true;
  try {
    const moved = await api("POST", `/api/games/${r.id}/move`,
      { seat, token: ui.keys.seats[seat], move: [s, e], version: r.version });
    ui.busy = false;
    enqueue(moved); // the socket's copy of it comes later and is dropped as old
  } catch (err) {
    ui.busy = false;
    say(err.message);
    if (err.status === 400) await refetch().catch(() => {});
  }
}

async function post(path, body, done) {
  try {
    const data = await api("POST", `/api/games/${ui.room.id}/${path}`, body || {});
    say("");
    if (done) done(data);
  } catch (err) { say(err.message); }
}

function goTo(ply) {
  const r = ui.room;
  ui.ply = Math.max(0, Math.min(r.plies, ply));
  ui.selected = null;
  ui.analysis.follow(ui.ply);
  render();
}

// -- drawing ----------------------------------------------------------------------------------------

function drawBoard() {
  const r = ui.room;
  if (!r || ui.busy) return;
  const here = live();
  const movable = new Set(here && myTurn() ? Object.keys(r.legal).map(Number) : []);
  const targets = here && ui.selected !== null ? r.legal[String(ui.selected)] || [] : [];
  const over = ui.analysis.overlay(ui.ply);
  ui.view.render({
    board: ui.boards[ui.ply], movable, selected: ui.selected, targets,
    lastPath: ui.ply > 0 ? r.paths[ui.ply - 1] : null, labels: ui.labels, ...over,
  });
  $("board").dataset.ply = ui.ply;
}

function seatDot(seat, parent) {
  return el("span", { class: "dot", style: `background:${ui.room.board_info.colours[seat]}` }, parent);
}

// The finishing order: by share of the result, then by pieces home (who was closest).
function renderResult(r) {
  const box = $("result");
  box.innerHTML = "";
  box.hidden = !r.over;
  box.dataset.order = r.over ? r.result.order.join(",") : "";
  box.dataset.scores = r.over ? r.result.scores.join(",") : "";
  if (!r.over) return;
  el("strong", {}, box, "Finishing order");
  const list = el("ol", {}, box);
  for (const s of r.result.order) {
    const li = el("li", { "data-seat": s }, list);
    seatDot(s, li);
    el("span", {}, li, ` ${r.board_info.names[s]} (${isMine(s) ? "you" : r.seats[s].label}): score ${+r.result.scores[s].toFixed(3)}, ${r.result.home[s]} home`);
  }
}

function renderStatus() {
  const r = ui.room, s = $("status"), names = r.board_info.names;
  s.innerHTML = "";
  let state, text;
  const who = r.seats[r.to_move];
  if (r.over) { state = "over"; text = `Game over: ${r.result.text}.`; }
  else if (r.engine_error) { state = "error"; text = `${names[r.to_move]}'s engine could not move: ${r.engine_error}`; }
  else if (myTurn()) { state = "your-turn"; text = `Your move, ${names[r.to_move]}${r.must_pass ? " (no move but the pass)" : ""}.`; }
  else if (who.kind === "engine") { state = "engine"; text = `${names[r.to_move]} (${who.label}) is thinking…`; }
  else { state = "waiting"; text = `${names[r.to_move]} to move: ${who.taken ? (who.connected ? "their player is thinking" : "their player is away") : "a free seat: share the link"}.`; }
  s.dataset.state = state;
  if (!r.over) seatDot(r.to_move, s);
  el("span", {}, s, text);
  if (ui.deadline && !r.over) el("span", { id: "clock", class: "clock" }, s, clockText());
  renderResult(r);
  $("retry").hidden = !r.engine_error;
  $("pass").hidden = !(live() && myTurn() && r.must_pass);
  const view = $("ply-info");
  view.textContent = live() ? `ply ${r.plies}` : `ply ${ui.ply} of ${r.plies} (press End to return)`;
}

function renderSeats() {
  const r = ui.room, list = $("seats"), creator = Boolean(ui.keys.creator), manage = creator && $("manage").checked;
  list.innerHTML = "";
  r.seats.forEach((seat, i) => {
    const own = isMine(i);
    const li = el("li", { "data-seat": i, class: r.to_move === i && !r.over ? "to-move" : "" }, list);
    seatDot(i, li);
    const name = el("div", { class: "seat-name", title: seat.label }, li);
    el("strong", {}, name, r.board_info.names[i]);
    el("span", {}, name, ` ${own ? "you" : seat.label}`);
    el("span", { class: "home" }, li, `${r.home[i]}/${r.board_info.homes[i].length} home`);
    const acts = el("span", { class: "seat-actions" }, li);
    if (seat.kind === "person" && !seat.taken && !r.over) {
      el("button", { class: "take", "data-seat": i }, acts, "Take seat").onclick = () => takeSeat(i);
    } else if (seat.kind === "person" && seat.taken) {
      el("span", { class: `presence ${seat.connected ? "here" : "away"}` }, acts, seat.connected ? "here" : "away");
    }
    if (r.over) return;
    if (seat.kind === "person" && (own ? manage || r.board_info.players > 2 : manage && (!seat.taken || !seat.connected))) {
      el("button", { class: "to-engine" }, acts, own ? "Let an engine play for me" : "Give to an engine").onclick = () =>
        post(`seats/${i}/engine`, { token: own ? ui.keys.seats[i] : ui.keys.creator, engine: defaultEngine() });
    }
    if (seat.kind === "engine" && manage) {
      el("button", { class: "to-person" }, acts, "Give to people").onclick = () => post(`seats/${i}/person`, { creator: ui.keys.creator });
    }
  });
  $("name-field").hidden = r.over || !r.seats.some((s) => s.kind === "person" && !s.taken);
  $("manage-field").hidden = !creator || r.over;
}

function defaultEngine() {
  const r = ui.room, engines = r.seats.filter((s) => s.kind === "engine");
  return engines.length ? engines[0].engine : { kind: "greedy" };
}

async function takeSeat(i) {
  const name = ($("my-name").value || "").trim() || undefined;
  await post(`seats/${i}/take`, { name }, (data) => {
    ui.keys.seats[data.seat] = data.token;
    keys.put(ui.room.id, ui.keys);
    ui.link.send({ type: "hello", tokens: ui.keys.seats });
    ui.seat = data.seat;
  });
}

function renderMoves() {
  const r = ui.room, list = $("move-list");
  list.innerHTML = "";
  const players = r.board_info.players;
  list.style.setProperty("--seats", players);
  list.dataset.seats = players;
  const head = el("div", { class: "moves-head" }, list);
  el("span", {}, head, "#");
  for (let s = 0; s < players; s++) { const c = el("span", {}, head); seatDot(s, c); }
  let row = null, last = players, round = 0;
  r.moves.forEach((m, i) => {
    const seat = r.movers[i];
    if (!row || seat <= last) {
      round += 1;
      row = el("div", { class: "moves-row" }, list);
      el("span", { class: "round" }, row, String(round));
      for (let s = 0; s < players; s++) el("span", { class: "cell", "data-col": s }, row);
    }
    last = seat;
    const mark = r.marks[String(i)];
    const text = (m[0] < 0 ? "pass" : `${m[0]}-${m[1]}`) + (mark ? MARK_GLYPH[mark] : "");
    const b = el("button", { class: `move${mark ? ` ${mark}` : ""}${ui.ply === i + 1 ? " current" : ""}`,
      "data-ply": i + 1, title: `${r.board_info.names[seat]}: ${r.paths[i].join("-") || "pass"}${mark ? ` (${mark})` : ""}` },
    row.querySelector(`[data-col="${seat}"]`), text);
    b.onclick = () => goTo(i + 1);
  });
  if (!r.moves.length) el("div", { class: "muted" }, list, "No moves yet.");
  const current = list.querySelector(".current");
  if (live()) list.scrollTop = list.scrollHeight;
  else if (current) current.scrollIntoView({ block: "nearest" });
}

function renderGraph() {
  const r = ui.room;
  drawWinGraph($("graph"), { plies: r.plies, evals: r.evals, marks: r.marks, movers: r.movers,
    colours: r.board_info.colours, names: r.board_info.names, ply: ui.ply, onPick: goTo });
}

function renderActions() {
  const r = ui.room, held = mine().filter((s) => r.seats[s].kind === "person");
  const others = r.seats.some((s, i) => s.kind === "person" && s.taken && !held.includes(i));
  const myMoves = r.movers.some((s, i) => held.includes(s) && r.by[i] === "person");
  $("undo").disabled = !held.length || others || !myMoves;
  $("resign").hidden = r.board_info.players !== 2;
  $("resign").disabled = r.over || !held.length;
  $("hint").disabled = r.over || !live();
  $("stop").disabled = !ui.analysis.running();
  $("first").disabled = $("back").disabled = ui.ply === 0;
  $("next").disabled = $("last").disabled = live();
  $("load-position").disabled = !held.length || others;
  $("position").placeholder = r.position;
}

function render() {
  if (!ui.room) return;
  renderStatus();
  renderSeats();
  renderMoves();
  renderGraph();
  renderActions();
  ui.analysis.render();
  drawBoard();
}

// -- the timer --------------------------------------------------------------------------------------

function setClock(seconds) {
  ui.deadline = seconds === null || seconds === undefined ? null : Date.now() + 1000 * seconds;
}

function clockText() {
  const left = Math.max(0, Math.round((ui.deadline - Date.now()) / 1000));
  return `${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}`;
}

setInterval(() => {
  const c = document.getElementById("clock");
  if (c && ui.deadline) c.textContent = clockText();
}, 500);

// -- controls ---------------------------------------------------------------------------------------

function wire() {
  $("first").onclick = () => goTo(0);
  $("back").onclick = () => goTo(ui.ply - 1);
  $("next").onclick = () => goTo(ui.ply + 1);
  $("last").onclick = () => goTo(ui.room.plies);
  $("undo").onclick = () => post("undo", { tokens: ui.keys.seats });
  $("resign").onclick = () => {
    const seat = mine().find((s) => ui.room.seats[s].kind === "person");
    if (seat !== undefined && confirm("Resign this game?")) post("resign", { seat, token: ui.keys.seats[seat] });
  };
  $("retry").onclick = () => post("retry");
  $("pass").onclick = () => playMove(-1, -1);
  $("hint").onclick = () => ui.analysis.askHint();
  $("analyse").onclick = () => ui.analysis.toggle();
  $("stop").onclick = () => ui.analysis.stop();
  $("flip").onclick = () => flip();
  $("labels").onchange = () => { ui.labels = $("labels").checked; drawBoard(); };
  $("manage").onchange = () => renderSeats();
  $("show-arrows").onchange = () => drawBoard();
  $("load-position").onclick = () => post("position", { tokens: ui.keys.seats, text: $("position").value.trim() || null });
  $("copy-link").onclick = async () => {
    $("room-link").select();
    try { await navigator.clipboard.writeText($("room-link").value); say("Link copied: anyone who opens it watches, or takes a free seat."); }
    catch { say("Select the link and copy it."); }
  };
  $("download-json").onclick = () => { location.href = `/api/games/${ui.room.id}/download?format=json`; };
  $("download-moves").onclick = () => { location.href = `/api/games/${ui.room.id}/download?format=moves`; };
  window.addEventListener("resize", () => ui.room && renderGraph());
  document.addEventListener("keydown", onKey);
}

function flip() {
  ui.seat = (ui.view.seat + 1) % ui.room.board_info.players;
  ui.view.setSeat(ui.seat);
  drawBoard();
}

// Keyboard shortcuts (listed in the page's help): arrows step through the game.
function onKey(ev) {
  if (!ui.room || ev.target.matches("input, textarea, select") || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const act = {
    ArrowLeft: () => goTo(ui.ply - 1), ArrowRight: () => goTo(ui.ply + 1),
    ArrowUp: () => goTo(0), Home: () => goTo(0), ArrowDown: () => goTo(ui.room.plies), End: () => goTo(ui.room.plies),
    a: () => ui.analysis.toggle(), h: () => ui.analysis.askHint(), f: () => flip(),
    l: () => { $("labels").checked = !$("labels").checked; ui.labels = $("labels").checked; drawBoard(); },
    x: () => { $("show-arrows").checked = !$("show-arrows").checked; drawBoard(); },
    Escape: () => { ui.selected = null; drawBoard(); },
    "?": () => { $("help").open = !$("help").open; },
  }[ev.key];
  if (act) { ev.preventDefault(); act(); }
}

