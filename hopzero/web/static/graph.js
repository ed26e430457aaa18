// Line charts: the win-chance graph under the board (one line per seat, the marked mistakes, the
// position on screen; a click picks a position) and the run view's charts.

import { svg } from "./api.js";

const MARK_SIZE = { inaccuracy: 3, mistake: 4, blunder: 5 };

// `g`: {plies, evals {ply: {shares}}, marks {move: kind}, movers, colours, names, ply, onPick}.
export function drawWinGraph(root, g) {
  root.innerHTML = "";
  const W = Math.max(240, root.clientWidth || 600), H = 120, L = 30, R = 8, T = 8, B = 18;
  root.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const n = Math.max(1, g.plies);
  const X = (p) => L + (p / n) * (W - L - R), Y = (v) => T + (1 - v) * (H - T - B);
  const players = g.colours.length;
  for (const v of [0, 0.5, 1]) {
    svg("line", { x1: L, x2: W - R, y1: Y(v), y2: Y(v), class: "grid" }, root);
    svg("text", { x: L - 4, y: Y(v) + 4, "text-anchor": "end" }, root, `${Math.round(100 * v)}%`);
  }
  svg("line", { x1: L, x2: W - R, y1: Y(1 / players), y2: Y(1 / players), class: "fair" }, root);
  svg("text", { x: W - R, y: H - 4, "text-anchor": "end" }, root, `ply ${g.plies}`);
  const plies = Object.keys(g.evals).map(Number).filter((p) => p <= g.plies).sort((a, b) => a - b);
  if (!plies.length) {
    svg("text", { x: (L + W) / 2, y: H / 2, "text-anchor": "middle", class: "empty" }, root,
      "no evaluations yet");
  }
  for (let s = 0; s < players; s++) {
    const pts = plies.map((p) => `${X(p)},${Y(g.evals[String(p)].shares[s])}`);
    if (pts.length) svg("polyline", { points: pts.join(" "), class: "series", stroke: g.colours[s], "data-seat": s }, root);
  }
  for (const [move, kind] of Object.entries(g.marks || {})) {
    const p = Number(move) + 1, seat = g.movers[Number(move)];
    const e = g.evals[String(p)];
    if (!e || seat === undefined) continue;
    const dot = svg("circle", { cx: X(p), cy: Y(e.shares[seat]), r: MARK_SIZE[kind] || 3, class: `mark ${kind}`,
      "data-move": move }, root);
    svg("title", {}, dot, `move ${Number(move) + 1} by ${g.names[seat]}: ${kind}`);
  }
  svg("line", { x1: X(g.ply), x2: X(g.ply), y1: T, y2: H - B, class: "cursor" }, root);
  const pick = (ev) => {
    const ctm = root.getScreenCTM();
    if (!ctm) return;
    const p = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(ctm.inverse());
    g.onPick(Math.max(0, Math.min(g.plies, Math.round(((p.x - L) / (W - L - R)) * n))));
  };
  root.onclick = pick;
}

// A run view's chart: points [x, y] (nulls skipped), opts {yMin, yMax, ref, xLabel}.
export function drawChart(root, points, opts) {
  root.innerHTML = "";
  const W = 520, H = 260, L = 44, R = 12, T = 10, B = 30;
  root.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const good = points.filter((p) => p[0] !== null && p[1] !== null);
  if (!good.length) { svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, root, "no data yet"); return; }
  const xs = good.map((p) => p[0]), ys = good.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs, x0 + 1);
  let y0 = opts.yMin !== undefined ? opts.yMin : Math.min(...ys, 0), y1 = opts.yMax !== undefined ? opts.yMax : Math.max(...ys, 0);
  if (y1 - y0 < 1e-9) { y0 -= 1; y1 += 1; }
  const X = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R), Y = (y) => H - B - ((y - y0) / (y1 - y0)) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const v = y0 + ((y1 - y0) * i) / 4;
    svg("line", { x1: L, x2: W - R, y1: Y(v), y2: Y(v), class: "grid" }, root);
    svg("text", { x: L - 4, y: Y(v) + 4, "text-anchor": "end" }, root, v.toFixed(0));
  }
  svg("line", { x1: L, x2: L, y1: T, y2: H - B, class: "axis" }, root);
  svg("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" }, root);
  if (opts.ref !== undefined) svg("line", { x1: L, x2: W - R, y1: Y(opts.ref), y2: Y(opts.ref), class: "ref" }, root);
  svg("text", { x: (L + W) / 2, y: H - 6, "text-anchor": "middle" }, root, opts.xLabel || "minutes since the run started");
  for (const v of [x0, x1]) svg("text", { x: X(v), y: H - B + 14, "text-anchor": "middle" }, root, v.toFixed(0));
  svg("polyline", { points: good.map((p) => `${X(p[0])},${Y(p[1])}`).join(" "), class: "series" }, root);
  for (const p of good) svg("circle", { cx: X(p[0]), cy: Y(p[1]), r: 3, class: "dot" }, root);
}
