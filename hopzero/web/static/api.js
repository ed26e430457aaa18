// Talking to the server: JSON over HTTP, and websockets that reconnect by themselves.
// A dropped socket is tried again after 0.5, 1, 2, 4 and then every 8 s; #connection says so.

export const $ = (id) => document.getElementById(id);

export async function api(method, url, body) {
  const opts = { method, headers: {} };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  const res = await fetch(url, opts); // no answer at all: a TypeError without a status
  const data = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) throw Object.assign(new Error(data.error || `HTTP ${res.status}`), { status: res.status });
  return data;
}

// A line for the person: errors and notices under the board (role="alert").
export function say(text) {
  const box = $("message");
  if (box) box.textContent = text || "";
}

function socketUrl(path) {
  return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${path}`;
}

const links = new Set();

function backoffMs(attempts) { return Math.min(8000, 500 * 2 ** Math.max(0, attempts - 1)); }

function showConnection() {
  const c = $("connection");
  if (!c) return;
  const down = [...links].filter((l) => l.down);
  if (!down.length) {
    c.dataset.state = "connected";
    c.textContent = c.dataset.dropped ? "Connected again." : "";
    c.classList.add("fade"); // the news fades after a few seconds
    return;
  }
  c.classList.remove("fade");
  const attempts = Math.max(...down.map((l) => l.attempts));
  c.dataset.state = "reconnecting";
  c.dataset.dropped = "1";
  c.textContent = `Connection lost: reconnecting (attempt ${attempts}, next in ${(backoffMs(attempts) / 1000).toFixed(1)} s)…`;
}

// A websocket on `path` that reconnects with back-off until closed by `close()`.
// `onMessage(msg)` gets each JSON message, `onOpen()` runs at every (re)connection.
export class Link {
  constructor(path, { onMessage, onOpen }) {
    Object.assign(this, { path, onMessage, onOpen, down: false, attempts: 0, timer: null, ws: null, closed: false });
    links.add(this);
    this.connect();
  }

  connect() {
    const ws = new WebSocket(socketUrl(this.path));
    this.ws = ws;
    ws.onmessage = (ev) => this.onMessage(JSON.parse(ev.data));
    ws.onopen = () => {
      this.down = false;
      this.attempts = 0;
      showConnection();
      if (this.onOpen) this.onOpen();
    };
    ws.onclose = () => {
      if (this.ws !== ws || this.closed) return;
      this.down = true;
      this.attempts += 1;
      showConnection();
      this.timer = setTimeout(() => this.connect(), backoffMs(this.attempts));
    };
  }

  send(msg) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) { this.ws.send(JSON.stringify(msg)); return true; }
    return false;
  }

  get open() { return Boolean(this.ws && this.ws.readyState === WebSocket.OPEN); }

  // Drop the connection as a network would (tests, and a page leaving a room).
  drop() { if (this.ws) this.ws.close(); }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    links.delete(this);
    if (this.ws) this.ws.close();
    showConnection();
  }
}

// Elements: `el("div", {class: "x"}, parent, "text")`; SVG ones with `svg(...)`.
const SVG = "http://www.w3.org/2000/svg";

export function el(name, attrs, parent, text) {
  const node = document.createElement(name);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

export function svg(name, attrs, parent, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

export const pct = (x) => `${Math.round(100 * x)}%`;

// What this browser keeps of a room: the creator's token and the seats' tokens.
export const keys = {
  get(id) {
    try { return JSON.parse(localStorage.getItem(`hopzero.room.${id}`)) || { seats: {} }; } catch { return { seats: {} }; }
  },
  put(id, value) {
    localStorage.setItem(`hopzero.room.${id}`, JSON.stringify(value));
    const mine = keys.rooms().filter((r) => r !== id);
    mine.unshift(id);
    localStorage.setItem("hopzero.rooms", JSON.stringify(mine.slice(0, 50)));
  },
  rooms() {
    try { return JSON.parse(localStorage.getItem("hopzero.rooms")) || []; } catch { return []; }
  },
};
