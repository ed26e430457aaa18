// The run view: a training run's win rate and Elo over time, its gates, promotions and ladder,
// sent again whenever the run's files change; its kept evaluation games replayed move by move.

import { $, Link, api, el, say } from "./api.js";
import { BoardView, boardsOf } from "./board.js";
import { drawChart } from "./graph.js";

let feed = null;
const replay = { view: null, game: null, boards: [], ply: 0, busy: false };

const fmt = (x, d) => (x === null || x === undefined ? null : Number(x).toFixed(d));

function fillTable(id, rows) {
  const tbody = $(id).querySelector("tbody");
  tbody.innerHTML = "";
  for (const cells of rows) {
    const tr = el("tr", {}, tbody);
    for (const c of cells) {
      if (c && typeof c === "object") el("td", { class: c.cls }, tr, c.text);
      else el("td", {}, tr, c === null || c === undefined ? "–" : String(c));
    }
  }
}

function resultText(scores) {
  // The result vector by seat: the winners share it, a draw splits it equally.
  if (!Array.isArray(scores)) return "–";
  const best = Math.max(...scores);
  if (scores.every((x) => x === best)) return "draw";
  return scores.flatMap((x, seat) => (x === best ? [`seat ${seat}`] : [])).join(" and ") + " won";
}

function showRun(run) {
  $("run-info").textContent = `${run.name}: preset ${run.preset || "?"}, config ${run.config || "?"}, started ${run.started || "?"}, best model ${run.best || "none yet"}`
    + (run.notes.length ? ` (${run.notes.join("; ")})` : "");
  drawChart($("chart-winrate"), run.greedy.map((e) => [e.minutes, e.score === null ? null : 100 * e.score]), { yMin: 0, yMax: 100, ref: 50 });
  drawChart($("chart-elo"), run.greedy.map((e) => [e.minutes, e.elo]), { ref: 0 });
  fillTable("gates", run.gates.slice().reverse().map((g) => [fmt(g.minutes, 1), g.candidate, g.best, fmt(g.score, 3), g.games,
    { text: g.decision, cls: g.decision === "promote" ? "promote" : "reject" }, g.reason]));
  fillTable("promotions", run.promotions.slice().reverse().map((p) => [p.version, p.promoted_at, fmt(p.score, 3), p.games]));
  fillTable("ratings", run.ratings.map((r) => [r.name, fmt(r.elo, 0), fmt(r.stderr, 0), r.games]));
  const tbody = $("run-games").querySelector("tbody");
  tbody.innerHTML = "";
  for (const g of run.games) {
    const tr = el("tr", { "data-game": g.id, class: replay.game && replay.game.id === g.id ? "chosen" : "" }, tbody);
    const players = Array.isArray(g.players) ? g.players.join(" – ") : "?";
    for (const text of [g.id, g.kind, fmt(g.minutes, 1), players, resultText(g.scores), g.plies]) {
      el("td", {}, tr, text === null || text === undefined ? "–" : String(text));
    }
    tr.addEventListener("click", () => openReplay(run.index, g.id));
  }
  $("no-games").hidden = run.games.length > 0;
}

export function watchRun(index) {
  if (feed) feed.close();
  feed = new Link(`/ws/runs/${index}`, { onMessage: (msg) => (msg.type === "run" ? showRun(msg.run) : say(msg.error)) });
}

async function openReplay(runIndex, id) {
  try {
    const data = await api("GET", `/api/runs/${runIndex}/games/${id}`);
    if (!replay.view) replay.view = new BoardView($("replay-board"));
    Object.assign(replay, { game: data, boards: boardsOf(data.start_board, data.moves), ply: 0, busy: false });
    replay.view.setInfo(data.board, 0);
    document.querySelectorAll("#run-games tbody tr").forEach((tr) => tr.classList.toggle("chosen", Number(tr.dataset.game) === id));
    $("replay").hidden = false;
    drawReplay();
  } catch (err) { say(err.message); }
}

function drawReplay() {
  const d = replay.game, n = d.moves.length;
  replay.view.render({ board: replay.boards[replay.ply], lastPath: replay.ply > 0 ? d.paths[replay.ply - 1] : null });
  const info = $("replay-info");
  const players = Array.isArray(d.players) ? `${d.players.join(" against ")}` : "";
  const last = replay.ply > 0 ? `, last move ${d.paths[replay.ply - 1].join("-") || "pass"}` : "";
  info.dataset.ply = replay.ply;
  info.textContent = `Game ${d.id} (${d.kind}): ${players}. Ply ${replay.ply} of ${n}${last}`
    + (replay.ply === n && d.result ? `; ${d.result.text}.` : ".");
  $("replay-first").disabled = $("replay-back").disabled = replay.ply === 0;
  $("replay-next").disabled = $("replay-last").disabled = replay.ply === n;
}

// One ply forward is flown along its path; any other step jumps.
export async function stepReplay(to) {
  if (replay.busy || !replay.game) return;
  to = Math.max(0, Math.min(replay.game.moves.length, to));
  if (to === replay.ply + 1) {
    replay.busy = true;
    const path = replay.game.paths[replay.ply];
    if (path.length) await replay.view.fly(path, replay.boards[replay.ply][path[0]]);
    replay.busy = false;
  }
  replay.ply = to;
  drawReplay();
  $("replay-info").dataset.busy = "";
}

export function wireRuns(info) {
  const sel = $("run-select");
  $("no-runs").hidden = info.runs.length > 0;
  for (const r of info.runs) el("option", { value: r.index }, sel, `${r.index}: ${r.name}`);
  sel.addEventListener("change", () => watchRun(sel.value));
  $("replay-first").onclick = () => stepReplay(0);
  $("replay-back").onclick = () => stepReplay(replay.ply - 1);
  $("replay-next").onclick = () => stepReplay(replay.ply + 1);
  $("replay-last").onclick = () => stepReplay(Infinity);
  window.hopzeroReplay = replay; // for the browser tests
}
