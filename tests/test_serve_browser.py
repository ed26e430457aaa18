"""``hopzero serve`` in a real browser: the real server (``hopzero serve --port 0`` in a
subprocess) and Debian's headless Chromium driven by Selenium. A whole game on small-4-3 is
played by clicks against ``greedy``, the board on the page checked against the engine after
every move; a run's kept games are replayed step by step (cc49 and the star) against the engine;
the Tables view shows match results; the page reconnects when its link drops and when the server
restarts; then screenshots of play (cc49, star2), analysis, the run view, a replay and the tables.

The screenshots go to a temporary directory; with ``HOPZERO_SCREENSHOTS=DIR`` they go to DIR
(``docs/images`` refreshes the documentation's), and ``HOPZERO_SCREENSHOT_RUN=RUN_DIR`` serves
that run too (run 1) and shows it in the run view's screenshot instead of the test's small one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from ccengine import PASS, new_state, preset
from ccengine.players import GreedyPlayer
from evaluator.arena import play_match
from evaluator.game_log import add_match_games
from evaluator.results import append_result, result_lines

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT_S = 60


def _browser_or_skip() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if not missing:
        return
    message = f"{', '.join(missing)} missing: apt-get install chromium chromium-driver (scripts/quickstart test does)"
    if os.environ.get("CI"):
        pytest.fail(message)  # CI installs them: their absence is a broken setup, not a skip
    pytest.skip(message)


def _run_dir(tmp: Path) -> Path:
    """A small run directory shaped like a training run's."""
    run = tmp / "run-demo"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"preset": "cc49", "config": "demo", "started": "2026-11-24T06:00:00Z"}))
    wall, lines = 1795500000.0, []
    for i, (score, elo) in enumerate([(0.35, -105), (0.5, 0), (0.6, 70), (0.75, 190)]):
        lines.append({"kind": "gate", "wall": wall + 500 * i + 200, "candidate": i + 2, "best": i + 1, "score": 0.58,
                      "games": 40, "decision": "promote", "reason": "score >= 0.55"})
        lines.append({"kind": "greedy", "wall": wall + 500 * i + 300, "version": i + 1, "score": score, "elo": elo,
                      "games": 40})
    (run / "evaluations.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    # real games kept as the evaluator keeps them: the shipped model against greedy, and a star game
    for name, a, b, games in (("star2", "greedy", "greedy-stochastic", 1), ("cc49", SHIPPED_16, "greedy", 2)):
        match = play_match(preset(name), a, b, games=games, seed=1, keep_moves=True)
        add_match_games(run, preset(name), match, kind="greedy", model_versions=(None, None), config_hash="test",
                        software={})
    return run


SHIPPED_16 = "mcts:model=shipped,sims=16"
#: The round robin of the Tables view: every pair of these on cc49.
ROUND_ROBIN = ("greedy", "greedy-stochastic", "random", "alphabeta:depth=1")


def _results(tmp: Path) -> Path:
    """Match results as ``hopzero match --out`` writes them: a round robin on cc49."""
    path = tmp / "results.jsonl"
    for i, a in enumerate(ROUND_ROBIN):
        for b in ROUND_ROBIN[i + 1:]:
            append_result(path, *result_lines(play_match(preset("cc49"), a, b, games=6, seed=i), {}))
    return path


def _start_server(cwd: Path, *args: str, port: int = 0) -> tuple[subprocess.Popen, str]:
    """``hopzero serve`` in a subprocess and the address it prints."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hopzero.cli", "serve", "--port", str(port), "--max-sims", "400", *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd,
    )
    line = proc.stdout.readline()
    match = re.search(r"open (http://127\.0\.0\.1:\d+/)", line)
    if match is None:
        proc.kill()
        pytest.fail(f"hopzero serve printed {line!r}{proc.stdout.read()[:2000]!r}")
    return proc, match.group(1)


def _stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    _browser_or_skip()
    runs = ["--run-dir", str(_run_dir(tmp_path_factory.mktemp("runs")))]
    if os.environ.get("HOPZERO_SCREENSHOT_RUN"):  # run 1, shown in the run view's screenshot
        runs += ["--run-dir", os.environ["HOPZERO_SCREENSHOT_RUN"]]
    results = _results(tmp_path_factory.mktemp("results"))
    proc, url = _start_server(tmp_path_factory.mktemp("cwd"), *runs, "--results", str(results))
    yield url
    _stop_server(proc)


@pytest.fixture(scope="module")
def browser():
    _browser_or_skip()
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900",
                "--disable-gpu", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    where = os.environ.get("HOPZERO_SCREENSHOTS")
    path = Path(where) if where else tmp_path_factory.mktemp("shots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _status(driver) -> str:
    return driver.execute_script("return document.getElementById('status').dataset.state")


def _page_board(driver, cells: int, attr: str = "cell") -> list[int]:
    """Who is on each cell as the page draws it (read in one script: the page redraws often);
    ``attr="replay-cell"``: the replay board's."""
    pieces = driver.execute_script(
        "const a = `data-${arguments[0]}`;"
        "return [...document.querySelectorAll(`circle[${a}]`)].map(c => [+c.getAttribute(a), +c.dataset.owner])", attr)
    board = [-1] * cells
    for cell, owner in pieces:
        board[cell] = owner
    return board


def _page_moves(driver) -> list[str]:
    return driver.execute_script("return [...document.querySelectorAll('#move-list li')].map(li => li.textContent)")


def _settled(driver, plies: int | None = None):
    """Wait until it is the person's turn or the game is over (and, given, ``plies`` are listed)."""

    def ready(d) -> bool:
        if _status(d) not in ("your-turn", "over"):
            return False
        return plies is None or len(_page_moves(d)) >= plies

    WebDriverWait(driver, WAIT_S).until(ready)


def _shoot(driver, path: Path) -> None:
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(path))


def _click_move(driver, move: tuple[int, int]) -> None:
    if move == PASS:
        driver.find_element(By.ID, "pass").click()
        return
    s, e = move
    driver.find_element(By.CSS_SELECTOR, f'circle[data-cell="{s}"]').click()
    target = WebDriverWait(driver, WAIT_S).until(lambda d: d.find_element(By.CSS_SELECTOR, f'circle[data-target="{e}"]'))
    target.click()


def _replay(rules, moves: list[str]):
    state = new_state(rules)
    for text in moves:
        state.play(PASS if text == "pass" else tuple(int(c) for c in text.split("-")))
    return state


def test_a_whole_game_by_clicks_against_greedy(server, browser):
    rules = preset("small-4-3")
    browser.get(server + "?preset=small-4-3&play")
    chooser = GreedyPlayer(rules, seed=3)
    _settled(browser)
    played = 0
    while _status(browser) != "over":
        moves = _page_moves(browser)
        state = _replay(rules, moves)  # the engine's own game from the moves the page lists
        assert _page_board(browser, rules.cells) == list(state.board), f"after {moves}"
        assert state.to_move == 0 and not state.is_terminal()
        _click_move(browser, chooser.select(state))
        played += 1
        _settled(browser, plies=len(moves) + 1)
        assert played < rules.max_plies
    moves = _page_moves(browser)
    state = _replay(rules, moves)
    assert state.is_terminal() and _page_board(browser, rules.cells) == list(state.board)
    expected = "draw" if state.result() == 0 else ("x wins" if state.result() > 0 else "o wins")
    assert expected in browser.find_element(By.ID, "status").text


def test_screenshots_of_play_analysis_and_runs(server, browser, shots):
    # cc49 against the shipped model: two moves by clicks, the engine's arrows and win chance
    rules = preset("cc49")
    browser.get(server + "?preset=cc49")
    WebDriverWait(browser, WAIT_S).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#opponent option")) > 5)
    options = browser.find_elements(By.CSS_SELECTOR, "#opponent option")
    next(o for o in options if "shipped" in o.text).click()
    strength = browser.find_element(By.ID, "strength")
    strength.clear()
    strength.send_keys("100")
    browser.find_element(By.ID, "new-game").click()
    _settled(browser)
    chooser = GreedyPlayer(rules, seed=1)
    for _ in range(2):
        state = _replay(rules, _page_moves(browser))
        _click_move(browser, chooser.select(state))
        _settled(browser, plies=state.ply + 2)
    assert "%" in browser.find_element(By.ID, "win-text").text  # the model's win chance after its move
    _shoot(browser, shots / "web-play-cc49.png")
    sims = browser.find_element(By.ID, "analyze-sims")
    sims.clear()
    sims.send_keys("300")
    browser.find_element(By.ID, "analyze").click()
    WebDriverWait(browser, WAIT_S).until(
        lambda d: "300 simulations" in d.find_element(By.ID, "think-info").text and _status(d) == "your-turn")
    assert browser.find_elements(By.CSS_SELECTOR, "line.arrow")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#top-moves tbody tr")) >= 1
    _shoot(browser, shots / "web-analysis.png")

    # the star: its 121 holes drawn from the same code, a move by clicks
    star = preset("star2")
    browser.get(server + "?preset=star2&play")
    _settled(browser)
    assert len(browser.find_elements(By.CSS_SELECTOR, "circle[data-hole]")) == star.cells
    chooser = GreedyPlayer(star, seed=1)
    for _ in range(3):
        state = _replay(star, _page_moves(browser))
        _click_move(browser, chooser.select(state))
        _settled(browser, plies=state.ply + 2)
    assert _page_board(browser, star.cells) == list(_replay(star, _page_moves(browser)).board)
    _shoot(browser, shots / "web-play-star2.png")

    # the run view
    browser.get(server + "?tab=runs")
    if os.environ.get("HOPZERO_SCREENSHOT_RUN"):
        WebDriverWait(browser, WAIT_S).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#run-select option")) == 2)
        Select(browser.find_element(By.ID, "run-select")).select_by_value("1")
        name = Path(os.environ["HOPZERO_SCREENSHOT_RUN"]).resolve().name
        WebDriverWait(browser, WAIT_S).until(lambda d: d.find_element(By.ID, "run-info").text.startswith(name + ":"))
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#chart-winrate polyline"))
    assert browser.find_elements(By.CSS_SELECTOR, "#promotions tbody tr, #gates tbody tr")
    _shoot(browser, shots / "web-runs.png")
    for name in ("web-play-cc49.png", "web-analysis.png", "web-play-star2.png", "web-runs.png"):
        assert (shots / name).stat().st_size > 10_000


# ---------------------------------------------------------------------------------------------
# Replays, tables, reconnecting
# ---------------------------------------------------------------------------------------------


def _replay_ply(driver) -> int:
    return int(driver.execute_script("return document.getElementById('replay-info').dataset.ply"))


def _open_replay(driver, row):
    """Open the game of a row of the run view's list; its rules and moves from the server."""
    game_id = int(row.get_attribute("data-game"))
    row.click()
    WebDriverWait(driver, WAIT_S).until(lambda d: f"Game {game_id} " in d.find_element(By.ID, "replay-info").text)
    data = driver.execute_script("return replay.game")
    return preset(data["board"]["preset"]), data["moves"]


def _step(driver, button: str, ply: int) -> None:
    driver.find_element(By.ID, button).click()
    WebDriverWait(driver, WAIT_S, poll_frequency=0.05).until(
        lambda d: _replay_ply(d) == ply and not d.execute_script("return replay.busy"))


def test_a_runs_games_replay_move_by_move(server, browser, shots):
    browser.get(server + "?tab=runs")
    WebDriverWait(browser, WAIT_S).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#run-games tbody tr")) == 3)
    rows = browser.find_elements(By.CSS_SELECTOR, "#run-games tbody tr")
    assert "mcts:model=shipped" in rows[0].text  # newest first
    for row in (rows[-1], rows[0]):  # the star game, then a cc49 game
        rules, moves = _open_replay(browser, row)
        state = new_state(rules)
        assert _replay_ply(browser) == 0 and _page_board(browser, rules.cells, "replay-cell") == list(state.board)
        for k in range(1, 9):  # step by step, each move flown along its path
            _step(browser, "replay-next", k)
            state.play(tuple(moves[k - 1]))
            assert _page_board(browser, rules.cells, "replay-cell") == list(state.board)
        _step(browser, "replay-back", 7)
        assert _page_board(browser, rules.cells, "replay-cell") == list(_replay(rules, _texts(moves[:7])).board)
        _step(browser, "replay-last", len(moves))
        final = _replay(rules, _texts(moves))
        assert final.is_terminal() and _page_board(browser, rules.cells, "replay-cell") == list(final.board)
        assert browser.find_element(By.ID, "replay-next").get_attribute("disabled")
    assert len(browser.find_elements(By.CSS_SELECTOR, "circle[data-replay-hole]")) == preset("cc49").cells
    browser.execute_script("stepReplay(21)")  # a jump, then one ply flown for the picture
    _step(browser, "replay-next", 22)
    browser.execute_script("document.getElementById('replay').scrollIntoView()")
    browser.save_screenshot(str(shots / "web-replay.png"))
    assert (shots / "web-replay.png").stat().st_size > 10_000


def _texts(moves) -> list[str]:
    return ["pass" if tuple(m) == PASS else f"{m[0]}-{m[1]}" for m in moves]


def test_the_tables_view_crosses_the_match_results(server, browser, shots):
    browser.get(server + "?tab=tables")
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#cross-table tbody tr"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#cross-table tbody tr")
    names = [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows]
    assert sorted(names) == sorted(ROUND_ROBIN)
    assert rows[names.index("greedy")].find_elements(By.TAG_NAME, "td")[2].text == "0"  # the anchor
    assert "relative to greedy = 0" in browser.find_element(By.ID, "tables-info").text
    scores = browser.execute_script(
        "return [...document.querySelectorAll('#cross-table td.score')].map(td => +td.dataset.score)")
    assert len(scores) == len(ROUND_ROBIN) * (len(ROUND_ROBIN) - 1) and sum(scores) == pytest.approx(len(scores) / 2)
    _shoot(browser, shots / "web-tables.png")
    assert (shots / "web-tables.png").stat().st_size > 10_000


def _connection(driver) -> str:
    return driver.execute_script("return document.getElementById('connection').dataset.state")


def test_the_page_reconnects_when_its_link_drops_and_when_the_server_restarts(browser, tmp_path):
    rules = preset("small-4-3")
    chooser = GreedyPlayer(rules, seed=5)
    proc, url = _start_server(tmp_path)
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    try:
        browser.get(url + "?preset=small-4-3&play")
        _settled(browser)
        _click_move(browser, chooser.select(new_state(rules)))
        _settled(browser, plies=2)
        # the link drops, the server keeps the game: the page reconnects and plays on
        browser.execute_script("ui.socket.close()")
        WebDriverWait(browser, WAIT_S).until(
            lambda d: _connection(d) == "connected" and "again" in d.find_element(By.ID, "connection").text)
        state = _replay(rules, _page_moves(browser))
        _click_move(browser, chooser.select(state))
        _settled(browser, plies=4)
        assert _page_board(browser, rules.cells) == list(_replay(rules, _page_moves(browser)).board)

        # the server goes away: the page says so and keeps trying
        _stop_server(proc)
        WebDriverWait(browser, WAIT_S).until(lambda d: _connection(d) == "reconnecting")
        assert "reconnecting" in browser.find_element(By.ID, "connection").text
        WebDriverWait(browser, WAIT_S).until(lambda d: "attempt 2" in d.find_element(By.ID, "connection").text)
        # back on the same port: the page reconnects and says the game (in the old server's memory) is lost
        proc, _ = _start_server(tmp_path, port=port)
        WebDriverWait(browser, WAIT_S).until(lambda d: _connection(d) == "connected" and _status(d) == "lost")
        assert "New game" in browser.find_element(By.ID, "message").text
        browser.find_element(By.ID, "new-game").click()
        _settled(browser)
        _click_move(browser, chooser.select(new_state(rules)))
        _settled(browser, plies=2)
    finally:
        _stop_server(proc)
