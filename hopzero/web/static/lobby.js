// The lobby: a new game (the board, who sits in each seat, engines at named levels, a timer,
// hot-seat), the games this browser plays, the finished games the server keeps, a game file to
// load back. A new game is a new room: the page goes to its link, /g/ID.

import { $, api, el, keys, say } from "./api.js";
import { BoardView } from "./board.js";

const lobby = { info: null, preset: null, catalogue: [], defaultEngine: null, preview: null };
const UNIT = { simulations: (n) => `${n} sims`, depth: (n) => `depth ${n}` };

const TIMERS = [[0, "no timer"], [15, "15 s a move"], [30, "30 s a move"], [60, "1 min a move"], [120, "2 min a move"], [300, "5 min a move"]];
const PACES = [[600, "engines move at a watchable pace"], [0, "engines move at once"], [1500, "engines move slowly"]];

export async function openLobby(info, params) {
  lobby.info = info;
  document.body.dataset.view = "lobby";
  const sel = $("preset");
  for (const p of info.presets) el("option", { value: p }, sel, p);
  const want = params.get("preset");
  if (want && !info.presets.includes(want)) el("option", { value: want }, sel, want);
  sel.value = want || "star3";
  for (const [v, t] of TIMERS) el("option", { value: v }, $("timer"), t);
  for (const [v, t] of PACES) el("option", { value: v }, $("pace"), t);
  sel.onchange = () => loadPreset().catch((err) => say(err.message));
  $("start").onclick = () => start(false);
  $("watch").onclick = () => start(true);
  $("import").onchange = importFile;
  if (params.get("play") !== null) {
    await quickStart(sel.value);
    return;
  }
  await loadPreset();
  listGames().catch((err) => say(err.message));
}

// `/?preset=NAME&play`: a person in seat 0, the preset's default engine in the others, at once.
async function quickStart(preset) {
  try {
    const data = await api("POST", "/api/games", { preset });
    enter(data);
  } catch (err) {
    say(err.message);
    await loadPreset();
  }
}

function enter(data) {
  keys.put(data.id, { creator: data.creator, seats: data.tokens });
  location.replace(`/g/${data.id}`);
}

async function loadPreset() {
  const data = await api("GET", `/api/presets/${encodeURIComponent($("preset").value)}`);
  lobby.preset = data.board;
  lobby.catalogue = data.engines;
  lobby.defaultEngine = data.default_engine;
  const box = $("seat-editor");
  box.innerHTML = "";
  data.board.names.forEach((name, i) => seatRow(box, i, name, data.board.colours[i], i === 0 ? "person" : "engine"));
  $("analyst-note").textContent = `Analysis of these games: ${data.analyst}.`;
  // the board with every seat's pieces at home, Red (the first seat) at the bottom
  if (!lobby.preview) lobby.preview = new BoardView($("preview"));
  lobby.preview.setInfo(data.board, 0);
  const start = Array(data.board.cells).fill(-1);
  data.board.homes.forEach((cells, p) => cells.forEach((c) => { start[c] = p; }));
  lobby.preview.render({ board: start });
}

function seatRow(box, i, name, colour, kind) {
  const row = el("div", { class: "seat-row", "data-seat": i }, box);
  el("span", { class: "dot", style: `background:${colour}` }, row);
  el("label", { for: `who-${i}` }, row, name);
  const who = el("select", { id: `who-${i}`, class: "who" }, row);
  el("option", { value: "person" }, who, "Person");
  lobby.catalogue.forEach((c, k) => el("option", { value: String(k) }, who, c.label));
  const level = el("select", { class: "level", "aria-label": `${name}'s level` }, row);
  const number = el("input", { class: "number", type: "number", min: 1, "aria-label": `${name}'s strength`, hidden: "" }, row);
  const refill = () => {
    level.innerHTML = "";
    const entry = lobby.catalogue[Number(who.value)];
    level.hidden = !entry || !entry.levels;
    number.hidden = true;
    if (!entry || !entry.levels) return;
    for (const l of entry.levels) el("option", { value: l.level }, level, `${l.label} · ${UNIT[entry.unit](l.number)}`);
    el("option", { value: "custom" }, level, `Custom ${entry.unit}`);
    level.value = "club";
    number.max = entry.max_number;
    number.value = entry.levels[1].number;
  };
  level.onchange = () => { number.hidden = level.value !== "custom"; };
  who.onchange = refill;
  if (kind === "engine") {
    const def = lobby.catalogue.findIndex((c) => c.choice.kind === lobby.defaultEngine.kind);
    who.value = String(Math.max(0, def));
  }
  refill();
}

function seatChoices(allEngines) {
  return [...document.querySelectorAll("#seat-editor .seat-row")].map((row) => {
    const who = row.querySelector(".who").value;
    if (who === "person" && !allEngines) return { kind: "person" };
    const entry = who === "person" ? lobby.catalogue.find((c) => c.choice.kind === lobby.defaultEngine.kind) || lobby.catalogue[0]
      : lobby.catalogue[Number(who)];
    const engine = { ...entry.choice };
    if (entry.levels) {
      const level = row.querySelector(".level").value;
      if (level === "custom") engine.number = Number(row.querySelector(".number").value);
      else engine.level = who === "person" ? "club" : level;
    }
    return { kind: "engine", engine };
  });
}

async function start(watch) {
  const seats = seatChoices(watch);
  const people = seats.map((s, i) => (s.kind === "person" ? i : -1)).filter((i) => i >= 0);
  const body = {
    preset: $("preset").value, seats,
    take: $("hot-seat").checked ? people : people.slice(0, 1),
    settings: { timer_s: Number($("timer").value), pace_ms: Number($("pace").value) },
  };
  const name = $("lobby-name").value.trim();
  if (name) body.name = name;
  const position = $("start-position").value.trim();
  if (position) body.position = position;
  try { enter(await api("POST", "/api/games", body)); } catch (err) { say(err.message); }
}

async function importFile() {
  const file = $("import").files[0];
  if (!file) return;
  try {
    const data = await api("POST", "/api/games/import", await file.text());
    enter(data);
  } catch (err) { say(err.message); }
}

function gameRow(table, g) {
  const tr = el("tr", {}, table);
  const a = el("a", { href: `/g/${g.id}` }, el("td", {}, tr), g.preset);
  a.dataset.game = g.id;
  el("td", {}, tr, g.seats.map((s) => s.label).join(" · "));
  el("td", {}, tr, g.result ? g.result.text : `ply ${g.plies}, in progress`);
  el("td", {}, tr, new Date(1000 * (g.finished || g.updated)).toLocaleString());
}

async function listGames() {
  const ids = keys.rooms();
  const mineTable = $("my-games").querySelector("tbody");
  mineTable.innerHTML = "";
  if (ids.length) {
    const data = await api("GET", `/api/games/summaries?ids=${ids.join(",")}`);
    for (const g of data.games) gameRow(mineTable, g);
  }
  $("no-my-games").hidden = ids.length > 0;
  const done = await api("GET", "/api/games/finished");
  const table = $("finished-games").querySelector("tbody");
  table.innerHTML = "";
  for (const g of done.games) gameRow(table, g);
  $("finished-note").textContent = done.games.length
    ? `Kept ${done.keep_days ? `for ${done.keep_days} days after they end` : "for good"}; a click opens one as a replay.`
    : "No finished games yet.";
}
