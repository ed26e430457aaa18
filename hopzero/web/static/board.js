// The board: holes from the server's cell points (the engine's geometry, so the rhombus and the
// star share one drawing), every seat's home tinted in its colour and its goal ringed, pieces,
// the last move's path, the engine's top moves as arrows along their hop paths with labels that
// do not collide, a principal variation as numbered moves, and moves flown hop by hop.
//
// The drawing is turned so that the seat it is drawn for sits at the bottom. A tap picks the
// nearest piece or destination that may be picked, up to 22 px away, so that a finger needs no
// precision on a phone's 121-hole star (the hit area of a hole is 44 px across where holes are
// far enough apart, the whole cell where they are not).

import { svg } from "./api.js";

const STEP_MS = 150; // one leg of a flown move
const TAP_PX = 22;   // how far from a tap a piece or a destination may be

export class BoardView {
  constructor(svgEl, { onTap } = {}) {
    this.svg = svgEl;
    this.onTap = onTap || (() => {});
    this.info = null;
    this.turn = 0;
    this.tappable = [];
    svgEl.addEventListener("pointerup", (ev) => this.tap(ev));
  }

  setInfo(info, seat) {
    const same = this.info && this.info.preset === info.preset;
    this.info = info;
    if (!same || seat !== this.seat) this.setSeat(seat || 0);
  }

  // Turn the board so that `seat`'s home is at the bottom.
  setSeat(seat) {
    this.seat = seat;
    const b = this.info, home = b.homes[seat] || b.homes[0];
    const mean = (cells, k) => cells.reduce((s, c) => s + b.points[c][k], 0) / cells.length;
    const all = b.points.map((_, i) => i);
    const cx = mean(all, 0), cy = mean(all, 1);
    const angle = Math.atan2(mean(home, 1) - cy, mean(home, 0) - cx);
    this.turn = Math.PI / 2 - angle;
    const c = Math.cos(this.turn), s = Math.sin(this.turn);
    this.points = b.points.map(([x, y]) => [(x - cx) * c - (y - cy) * s, (x - cx) * s + (y - cy) * c]);
    this.drawHoles();
  }

  pt(cell) { return this.points[cell]; }

  drawHoles() {
    const root = this.svg, b = this.info;
    root.innerHTML = "";
    const xs = this.points.map((p) => p[0]), ys = this.points.map((p) => p[1]);
    const pad = 0.7;
    const minX = Math.min(...xs) - pad, minY = Math.min(...ys) - pad;
    root.setAttribute("viewBox", `${minX} ${minY} ${Math.max(...xs) - minX + pad} ${Math.max(...ys) - minY + pad}`);
    const defs = svg("defs", {}, root);
    for (const [id, colour] of [["head", "#1b5e7a"], ["head-best", "#0b7a3b"], ["head-hint", "#0b7a3b"]]) {
      const m = svg("marker", { id: `${root.id}-${id}`, viewBox: "0 0 10 10", refX: 5, refY: 5, markerWidth: 2.6,
        markerHeight: 2.6, orient: "auto-start-reverse" }, defs);
      svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: colour }, m);
    }
    const homeOf = {}, goalOf = {};
    b.homes.forEach((cells, p) => cells.forEach((c) => { homeOf[c] = p; }));
    b.goals.forEach((cells, p) => cells.forEach((c) => { goalOf[c] = p; }));
    const holes = svg("g", { class: "holes" }, root);
    this.points.forEach(([x, y], i) => {
      const attrs = { cx: x, cy: y, r: 0.3, class: "hole", "data-hole": i };
      if (i in homeOf) attrs.style = `fill: color-mix(in srgb, ${b.colours[homeOf[i]]} 28%, #ece6d8)`;
      svg("circle", attrs, holes);
      if (i in goalOf) {
        svg("circle", { cx: x, cy: y, r: 0.4, class: "goal-ring", stroke: b.colours[goalOf[i]], "data-goal": goalOf[i] }, holes);
      }
    });
    this.labels = svg("g", { class: "cell-labels" }, root);
    this.points.forEach(([x, y], i) => svg("text", { x, y: y + 0.1, "text-anchor": "middle" }, this.labels, String(i)));
    this.layer = svg("g", {}, root);
  }

  // Draw the pieces and what goes over them. `view`: {board, movable (Set of cells), selected,
  // targets (cells), lastPath, arrows [{path, share, best}], pv [{path, seat}], hint (path),
  // labels (bool)}.
  render(view) {
    const b = this.info, layer = this.layer;
    layer.innerHTML = "";
    this.labels.style.display = view.labels ? "" : "none";
    this.tappable = [];
    if (view.lastPath && view.lastPath.length > 1) {
      const [sx, sy] = this.pt(view.lastPath[0]);
      svg("circle", { cx: sx, cy: sy, r: 0.2, class: "last-start" }, layer);
      svg("polyline", { points: view.lastPath.map((c) => this.pt(c).join(",")).join(" "), class: "last-path" }, layer);
    }
    (view.board || []).forEach((owner, i) => {
      if (owner < 0) return;
      const [x, y] = this.pt(i);
      const movable = view.movable && view.movable.has(i);
      const cls = `piece${movable ? " mine" : ""}${view.selected === i ? " selected" : ""}`;
      svg("circle", { cx: x, cy: y, r: 0.36, class: cls, fill: b.colours[owner], "data-cell": i, "data-owner": owner }, layer);
      if (movable) this.tappable.push({ cell: i, kind: "piece" });
    });
    for (const e of view.targets || []) {
      const [x, y] = this.pt(e);
      svg("circle", { cx: x, cy: y, r: 0.22, class: "target", "data-target": e }, layer);
      this.tappable.push({ cell: e, kind: "target" });
    }
    if (view.hint) this.arrow(layer, view.hint, 0.17, "hint", 1);
    this.drawArrows(layer, view.arrows || []);
    this.drawPv(layer, view.pv || []);
  }

  // An arrow along a hop path, its head a little short of the last hole's centre.
  arrow(layer, path, width, kind, opacity) {
    const pts = path.map((c) => this.pt(c).slice());
    const n = pts.length;
    if (n < 2) return null;
    const [ax, ay] = pts[n - 2], [bx, by] = pts[n - 1];
    const len = Math.hypot(bx - ax, by - ay) || 1, cut = Math.min(0.28, len / 3);
    pts[n - 1] = [bx - ((bx - ax) / len) * cut, by - ((by - ay) / len) * cut];
    const head = kind === "hint" ? "head-hint" : kind === "best" ? "head-best" : "head";
    return svg("polyline", { points: pts.map((p) => p.join(",")).join(" "), class: `arrow ${kind}`,
      "stroke-width": width, "stroke-opacity": opacity,
      "marker-end": kind === "pv" ? null : `url(#${this.svg.id}-${head})`, // a line's moves end in numbered dots
      "data-path": path.join("-") }, layer);
  }

  // The top moves, widest for the most visited; their shares as labels placed where no other
  // label is (tried at the arrow's head, then further back along its path, then beside it).
  drawArrows(layer, arrows) {
    const placed = [];
    const shown = arrows.filter((a) => a.share >= 0.02 && a.path && a.path.length > 1).slice(0, 5);
    shown.forEach((a) => this.arrow(layer, a.path, 0.07 + 0.2 * a.share, a.best ? "best" : "", 0.4 + 0.55 * a.share));
    for (const a of shown) {
      const text = `${Math.round(100 * a.share)}%`;
      const w = 0.19 * text.length + 0.12, h = 0.36;
      const spot = this.labelSpot(a.path, w, h, placed);
      placed.push({ x: spot[0], y: spot[1], w, h });
      svg("rect", { x: spot[0] - w / 2, y: spot[1] - h / 2, width: w, height: h, rx: 0.08, class: `arrow-tag${a.best ? " best" : ""}` }, layer);
      svg("text", { x: spot[0], y: spot[1] + 0.1, class: "arrow-label", "text-anchor": "middle", "data-label": a.path.join("-") }, layer, text);
    }
  }

  labelSpot(path, w, h, placed) {
    const pts = path.map((c) => this.pt(c));
    const along = (f) => { // the point at fraction f of the polyline's length
      const segs = pts.slice(1).map((p, i) => Math.hypot(p[0] - pts[i][0], p[1] - pts[i][1]));
      let d = f * segs.reduce((s, x) => s + x, 0);
      for (let i = 0; i < segs.length; i++) {
        if (d <= segs[i] || i === segs.length - 1) {
          const t = segs[i] ? Math.min(1, d / segs[i]) : 0;
          return [pts[i][0] + (pts[i + 1][0] - pts[i][0]) * t, pts[i][1] + (pts[i + 1][1] - pts[i][1]) * t];
        }
        d -= segs[i];
      }
      return pts[pts.length - 1];
    };
    const free = ([x, y]) => placed.every((p) => Math.abs(p.x - x) * 2 >= p.w + w + 0.04 || Math.abs(p.y - y) * 2 >= p.h + h + 0.04);
    const candidates = [0.8, 0.6, 0.95, 0.45, 0.3].map(along);
    for (const [dx, dy] of [[0, -0.45], [0, 0.45], [0.6, 0], [-0.6, 0]]) {
      const [x, y] = along(0.8);
      candidates.push([x + dx, y + dy]);
    }
    return candidates.find(free) || candidates[0];
  }

  // A principal variation: each move an arrow in its mover's colour, numbered at its head.
  drawPv(layer, pv) {
    const b = this.info;
    pv.forEach((m, k) => {
      if (!m.path || m.path.length < 2) return;
      const line = this.arrow(layer, m.path, 0.09, "pv", 0.95);
      if (line) line.style.stroke = b.colours[m.seat]; // a style: the class's colour would win over an attribute
      const [x, y] = this.pt(m.path[m.path.length - 1]);
      svg("circle", { cx: x, cy: y, r: 0.21, class: "pv-dot", fill: b.colours[m.seat] }, layer);
      svg("text", { x, y: y + 0.09, class: "pv-number", "text-anchor": "middle" }, layer, String(k + 1));
    });
  }

  // A tap: the nearest piece or destination on offer within TAP_PX (or within the cell).
  tap(ev) {
    if (!this.tappable.length) return;
    const ctm = this.svg.getScreenCTM();
    if (!ctm) return;
    const p = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(ctm.inverse());
    const reach = Math.max(0.5, TAP_PX / ctm.a);
    let best = null, dist = Infinity;
    for (const t of this.tappable) {
      const [x, y] = this.pt(t.cell);
      const d = Math.hypot(x - p.x, y - p.y);
      // a destination wins a tie with a piece: after picking a piece, the next tap means "here"
      const score = d - (t.kind === "target" ? 0.05 : 0);
      if (score < dist) { dist = score; best = t; }
    }
    if (best && dist <= reach) this.onTap(best.cell, best.kind);
  }

  // A piece of `owner` flies along `path`, one leg at a time; the piece on the path's start is
  // lifted first.
  fly(path, owner) {
    if (!path || path.length < 2) return Promise.resolve();
    const start = this.layer.querySelector(`circle[data-cell="${path[0]}"]`);
    if (start) start.remove();
    const [x0, y0] = this.pt(path[0]);
    const piece = svg("circle", { cx: x0, cy: y0, r: 0.36, class: "piece flying", fill: this.info.colours[owner] }, this.svg);
    return new Promise((resolve) => {
      let leg = 1;
      const next = () => {
        if (leg >= path.length) { piece.remove(); resolve(); return; }
        const [ax, ay] = this.pt(path[leg - 1]), [bx, by] = this.pt(path[leg]);
        const t0 = performance.now();
        const frame = (now) => {
          const f = Math.min(1, (now - t0) / STEP_MS);
          piece.setAttribute("cx", ax + (bx - ax) * f);
          piece.setAttribute("cy", ay + (by - ay) * f);
          if (f < 1) requestAnimationFrame(frame); else { leg += 1; next(); }
        };
        requestAnimationFrame(frame);
      };
      next();
    });
  }
}

// Boards along a game: the start board and the board after each move.
export function boardsOf(startBoard, moves) {
  const boards = [startBoard.slice()];
  for (const [s, e] of moves) {
    const b = boards[boards.length - 1].slice();
    if (s >= 0) { b[e] = b[s]; b[s] = -1; }
    boards.push(b);
  }
  return boards;
}
