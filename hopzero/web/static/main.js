// hopzero's page: the lobby (/) and a room (/g/ID) under Play, the run view, the Tables view.
// Plain JavaScript modules, no libraries, no network beyond this server.

import { $, api, say } from "./api.js";
import { openLobby } from "./lobby.js";
import { openRoom } from "./room.js";
import { watchRun, wireRuns } from "./runs.js";
import { showTables } from "./tables.js";

let runsInfo = null;
let watching = false;

function showTab(name) {
  document.querySelectorAll(".tab").forEach((b) => b.classList.toggle("active", b.dataset.tab === name));
  document.querySelectorAll(".panel").forEach((p) => p.classList.toggle("active", p.id === name));
  if (name === "tables") showTables($("tables-preset").value || null).catch((err) => say(err.message));
  if (name === "runs" && runsInfo && runsInfo.runs.length && !watching) { watching = true; watchRun(0); }
}

// The analysis's simulations: the model's named levels above Beginner, and the server's limit.
function analysisLevels(info) {
  const sel = $("analysis-sims"), max = info.limits.max_simulations, numbers = info.levels.model.numbers;
  const choices = [["Club", numbers[1]], ["Strong", numbers[2]], ["Max", numbers[3]]].filter(([, n]) => n <= max);
  if (!choices.length || max > choices[choices.length - 1][1]) choices.push(["server's limit", max]);
  sel.innerHTML = "";
  for (const [name, n] of choices) sel.appendChild(Object.assign(document.createElement("option"), { value: n, textContent: `${name} (${n})` }));
  sel.value = String(choices[Math.min(2, choices.length - 1)][1]);
}

async function init() {
  const params = new URLSearchParams(location.search);
  const room = location.pathname.match(/^\/g\/([A-Za-z0-9_-]{1,64})$/);
  document.querySelectorAll(".tab").forEach((b) => b.addEventListener("click", () => showTab(b.dataset.tab)));
  $("tables-preset").addEventListener("change", () => showTables($("tables-preset").value).catch((err) => say(err.message)));
  if (room) {
    await openRoom(room[1]); // the board first: the rest of the page's data can wait
  }
  const info = await api("GET", "/api/info");
  runsInfo = info;
  wireRuns(info);
  analysisLevels(info);
  if (params.get("tab")) showTab(params.get("tab"));
  if (!room) await openLobby(info, params);
}

init().catch((err) => say(err.message));
