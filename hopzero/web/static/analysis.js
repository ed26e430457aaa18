// The engine panel of the analysis board: every seat's win chance for the position on screen, the
// top moves (arrows on the board, a table whose rows preview their principal variation), a
// deeper analysis of any position of the game on request, a one-click hint.
//
// What it shows for a position, best first: this page's own analysis of it (live, as it grows),
// the thinking of the engine whose turn it is, the evaluation the server keeps of it.

import { $, Link, api, el, pct, say } from "./api.js";

const MARK_GLYPH = { inaccuracy: "?!", mistake: "?", blunder: "??" };
export { MARK_GLYPH };

export class Analysis {
  // `host`: {room() -> snapshot, ply() -> viewed ply, redraw() (everything), drawBoard(),
  // seatAfter(seat)}
  constructor(host) {
    this.host = host;
    this.req = 0;
    this.result = null;    // {req, ply, line, thought, final}
    this.thinking = null;  // the engine to move: {version, seat, engine, thought}
    this.full = new Map(); // ply -> the stored evaluation with its top moves
    this.on = false;       // analyse every position shown
    this.hint = null;      // {ply, path}
    this.wantHint = null;  // the request number of a hint on its way
    this.hover = null;     // the top move whose line is previewed
    this.link = null;
  }

  connect(id) {
    if (this.link) this.link.close();
    this.link = new Link(`/ws/analysis/${id}`, {
      onMessage: (m) => this.onMessage(m),
      onOpen: () => { if (this.on) this.ask(this.host.ply()); },
    });
  }

  sims() { return Number($("analysis-sims").value) || 400; }

  // Ask for the analysis of position `ply` (a new request: answers to older ones are dropped).
  ask(ply, sims) {
    const room = this.host.room();
    if (!room) return;
    this.req += 1;
    this.result = { req: this.req, ply, line: room.line, thought: null, final: false };
    if (!this.link.send({ type: "analyze", req: this.req, ply, line: room.line, sims: sims || this.sims() })) {
      say("Not connected to the server: the analysis starts when the connection is back.");
    }
    this.host.redraw();
  }

  toggle() {
    this.on = !this.on;
    $("analyse").setAttribute("aria-pressed", String(this.on));
    $("analyse").textContent = this.on ? "Analysing: on" : "Analyse";
    if (this.on) this.ask(this.host.ply()); else { this.stop(); this.host.redraw(); }
  }

  stop() {
    if (this.link) this.link.send({ type: "stop" });
  }

  // Whether an analysis of this page is on or on its way.
  running() {
    return this.on || Boolean(this.result && !this.result.final && this.result.req === this.req);
  }

  askHint() {
    const room = this.host.room();
    if (!room || room.over) return;
    this.hint = null;
    this.ask(room.plies, Number($("hint").dataset.sims) || 200);
    this.wantHint = this.req;
  }

  // The position on screen changed.
  follow(ply) {
    this.hover = null;
    if (this.on && (!this.result || this.result.ply !== ply)) this.ask(ply);
    if (!this.full.has(ply)) this.fetch(ply);
    this.render();
  }

  async fetch(ply) {
    const room = this.host.room();
    if (!room || !room.evals[String(ply)] || this.full.has(ply)) return;
    try {
      const data = await api("GET", `/api/games/${room.id}/evals/${ply}`);
      const now = this.host.room();
      if (now && now.id === data.id && now.line === data.line && data.eval) {
        this.full.set(ply, data.eval);
        if (this.host.ply() === ply) this.host.redraw();
      }
    } catch { /* the graph still has the shares */ }
  }

  onMessage(msg) {
    const room = this.host.room();
    if (!room || msg.id !== room.id) return;
    if (msg.type === "error") {
      if (msg.req === null || msg.req === this.req) { say(msg.error); if (this.result) this.result.final = true; this.render(); }
      return;
    }
    if (msg.type !== "analysis" || msg.req !== this.req || msg.line !== room.line) return; // an answer to an old question
    this.result = { req: msg.req, ply: msg.ply, line: msg.line, thought: msg.thought, final: msg.final };
    if (msg.final && this.wantHint === msg.req) {
      this.wantHint = null;
      const best = msg.thought.top && msg.thought.top[0];
      if (best) {
        this.hint = { ply: msg.ply, path: best.path };
        say(`Hint: ${best.path.join("-")} (${pct(best.share)} of ${msg.thought.simulations} simulations).`);
      }
    }
    this.host.redraw();
  }

  // The room's messages about engines and evaluations.
  onRoomMessage(msg) {
    if (msg.type === "thinking") this.thinking = msg;
    if (msg.type === "eval") this.full.set(msg.ply, msg.eval);
  }

  resetFor(room) {
    if (this.line !== room.line || this.roomId !== room.id) this.full.clear();
    this.line = room.line;
    this.roomId = room.id;
  }

  // The best statistics known for position `ply`: {thought-like {shares, top, simulations, mover}, source}.
  view(ply) {
    const room = this.host.room();
    if (!room) return null;
    const r = this.result;
    if (r && r.thought && r.ply === ply && r.line === room.line) {
      return { data: r.thought, source: r.final ? "analysis" : "analysing" };
    }
    const t = this.thinking;
    if (t && ply === room.plies && !room.over && t.version === room.version && t.seat === room.to_move) {
      return { data: t.thought, source: "thinking", engine: t.engine };
    }
    const full = this.full.get(ply);
    if (full) return { data: { ...full, simulations: full.sims }, source: "stored", engine: full.engine };
    const compact = room.evals[String(ply)];
    if (compact) {
      return { data: { shares: compact.shares, top: [], simulations: compact.sims, exact: compact.exact }, source: "stored",
        engine: compact.engine };
    }
    return null;
  }

  // Arrows and the previewed line for the board.
  overlay(ply) {
    const v = this.view(ply);
    const top = v && v.data.top ? v.data.top : [];
    const arrows = top.map((m, i) => ({ path: m.path, share: m.share, best: i === 0 }));
    let pv = [];
    if (this.hover !== null && top[this.hover] && top[this.hover].pv) {
      let seat = v.data.mover;
      pv = top[this.hover].pv.map((path) => { const m = { path, seat }; seat = this.host.seatAfter(seat); return m; });
    }
    const hint = this.hint && this.hint.ply === ply ? this.hint.path : null;
    // a previewed line is drawn alone: the other arrows would hide it
    return { arrows: $("show-arrows").checked && !pv.length ? arrows : [], pv, hint };
  }

  render() {
    const room = this.host.room();
    if (!room) return;
    const info = room.board_info, ply = this.host.ply();
    const v = this.view(ply);
    const bar = $("winbar"), note = $("win-note");
    bar.innerHTML = "";
    if (v && v.data.shares) {
      const px = bar.clientWidth || 300;
      v.data.shares.forEach((share, s) => {
        const seg = el("div", { class: "seg", style: `width:${(100 * share).toFixed(2)}%; background:${info.colours[s]}`,
          title: `${info.names[s]} ${pct(share)}`, "data-seat": s }, bar);
        // the name where it fits, else the number alone, else nothing (the title has both)
        const full = `${info.names[s]} ${pct(share)}`;
        const text = share * px >= 8 * full.length + 8 ? full : share * px >= 34 ? pct(share) : "";
        if (text) el("span", {}, seg, text);
      });
      const by = v.data.exact ? "the result of the game" : v.source === "thinking" ? `${v.engine}, thinking: ${v.data.simulations} simulations so far`
        : v.source === "analysing" ? `this page's analysis: ${v.data.simulations} simulations so far`
          : v.source === "analysis" ? `this page's analysis: ${v.data.simulations} simulations${v.data.stopped ? " (stopped)" : ""}`
            : `${v.engine || room.analyst}, kept with the game`;
      note.textContent = `Win chances (each seat's expected share of the result): ${by}.`;
    } else {
      bar.appendChild(el("div", { class: "seg empty" }));
      note.textContent = this.on || (this.result && this.result.ply === ply && !this.result.final)
        ? "The analysis of this position is on its way…"
        : `No evaluation of this position yet. The server's analysis engine (${room.analyst}) judges every position `
          + "of the game in turn while someone watches; press Analyse (A) for a deeper look now.";
    }
    this.renderTop(v);
  }

  renderTop(v) {
    const body = $("top-moves").querySelector("tbody");
    body.innerHTML = "";
    const top = v && v.data.top ? v.data.top : [];
    $("top-empty").hidden = top.length > 0;
    top.forEach((m, i) => {
      const tr = el("tr", { tabindex: 0, "data-index": i }, body);
      const cell = el("td", { title: m.path.join("-") }, tr, `${m.move[0]}-${m.move[1]}`);
      if (m.path.length > 2) el("span", { class: "hops" }, cell, ` ${m.path.length - 1} hops`);
      el("td", {}, tr, pct(m.share));
      el("td", {}, tr, m.win === null || m.win === undefined ? "–" : pct(m.win));
      el("td", { class: "pv-text" }, tr, (m.pv || []).slice(1, 4).map((p) => p.length ? `${p[0]}-${p[p.length - 1]}` : "pass").join(" "));
      const preview = (on) => {
        this.hover = on ? i : null;
        body.querySelectorAll("tr").forEach((row) => row.classList.toggle("previewed", Number(row.dataset.index) === this.hover));
        this.host.drawBoard();
      };
      tr.addEventListener("mouseenter", () => preview(true));
      tr.addEventListener("mouseleave", () => preview(false));
      tr.addEventListener("focus", () => preview(true));
      tr.addEventListener("blur", () => preview(false));
      tr.addEventListener("click", () => preview(this.hover !== i));
      if (this.hover === i) tr.classList.add("previewed");
    });
  }
}
