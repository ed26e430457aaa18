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
  $("tables-info").textContent = `${t.matches} pairings on ${t.preset} from ${data.files.join(", ")}. Ratings are Elo relative to ${t.anchor} = 0`
    + (t.anchor === "greedy" ? "." : " (greedy did not play: the anchor is the first player by name).") + pairs;
  const head = grid.createTHead().insertRow();
  for (const text of ["#", "player", "Elo", "±", "games", ...t.players.map((_, j) => String(j + 1))]) el("th", {}, head, text);
  const body = grid.createTBody();
  t.players.forEach((p, i) => {
    const tr = body.insertRow();
    for (const text of [i + 1, p.name, fmt(p.elo, 0), fmt(p.stderr, 0), p.games]) tr.insertCell().textContent = String(text);
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
