// The Tables view: match and tournament results as a cross table with ratings; on star3, star4
// and star6 the cells are pairwise comparisons of finishing order (the multi-player ladder).

import { $, api, el } from "./api.js";

const fmt = (x, d) => (x === null || x === undefined ? "–" : Number(x).toFixed(d));

export async function showTables(preset) {
  const data = await api("GET", "/api/tables" + (preset ? `?preset=${encodeURIComponent(preset)}` : ""));
  const sel = $("tables-preset");
  sel.innerHTML = "";
  for (const p of data.presets) el("option", { value: p }, sel, p);
  const t = data.table;
  $("tables-notes").textContent = data.notes.join("; ");
  const grid = $("cross-table");
  grid.innerHTML = "";
  if (!t || !t.players.length) {
    $("tables-info").textContent = data.files.length ? "No match results in the files yet."
      : "No results: start the server with hopzero serve --results FILE (hopzero match --out FILE) or --results DIR (hopzero tournament --out DIR).";
    return;
  }
  sel.value = t.preset;
  const pairs = data.pairwise
    ? " Each cell counts pairwise comparisons of finishing order: in every game of a group, the player with the larger share of the result beats the other (equal shares: a draw)."
    : "";
  const intervals = t.intervals === "games"
    ? " The 95% intervals come from the tournament's bootstrap over whole games."
    : data.pairwise
      ? " The 95% intervals are the fit's, which takes the comparisons of one game as independent: too narrow with three or more players (a tournament directory alone gives intervals over whole games)."
      : " The 95% intervals are the fit's.";
  $("tables-info").textContent = `${t.matches} pairings on ${t.preset} from ${data.files.join(", ")}. Ratings are Elo relative to ${t.anchor} = 0`
    + (t.anchor === "greedy" ? "." : t.intervals === "games" ? " (the tournament's anchor)."
      : " (greedy did not play: the anchor is the first player by name).") + pairs + intervals;
  const head = grid.createTHead().insertRow();
  for (const text of ["#", "player", "Elo", "95% interval", "games", ...t.players.map((_, j) => String(j + 1))]) el("th", {}, head, text);
  const body = grid.createTBody();
  t.players.forEach((p, i) => {
    const tr = body.insertRow();
    const interval = p.low === null || p.low === undefined ? "–" : `${fmt(p.low, 0)} .. ${fmt(p.high, 0)}`;
    for (const text of [i + 1, p.name, fmt(p.elo, 0), interval, p.games]) tr.insertCell().textContent = String(text);
    t.cells[i].forEach((c, j) => {
      const td = tr.insertCell();
      td.className = "score";
      if (i === j) { td.textContent = "×"; td.className = "self"; return; }
      if (!c) return;
      td.textContent = `${(100 * c.score).toFixed(0)}%`;
      td.title = `${p.name} against ${t.players[j].name}: ${c.wins} won, ${c.draws} drawn, ${c.losses} lost`;
      td.dataset.score = c.score;
      el("small", {}, td, ` ${c.wins}-${c.draws}-${c.losses}`);
    });
  });
}
