"""``hopzero serve`` in a real browser: the real server (``hopzero serve --port 0`` in a
subprocess) and Debian's headless Chromium driven by Selenium. A whole game on small-4-3 is
played by clicks against ``greedy``, the board on the page checked against the engine after
every move; then screenshots of play (cc49, star2), analysis and the run view.

The screenshots go to a temporary directory; with ``HOPZERO_SCREENSHOTS=DIR`` they go to DIR
(``docs/images`` refreshes the documentation's), and ``HOPZERO_SCREENSHOT_RUN=RUN_DIR`` shows
that run in the run view instead of the test's small one.
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
from selenium.webdriver.support.ui import WebDriverWait

from ccengine import PASS, new_state, preset
from ccengine.players import GreedyPlayer

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
    return run


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    _browser_or_skip()
    run = Path(os.environ.get("HOPZERO_SCREENSHOT_RUN") or _run_dir(tmp_path_factory.mktemp("runs")))
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hopzero.cli", "serve", "--port", "0", "--run-dir", str(run), "--max-sims", "400"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path_factory.mktemp("cwd"),
    )
    line = proc.stdout.readline()
    match = re.search(r"open (http://127\.0\.0\.1:\d+/)", line)
    if match is None:
        proc.kill()
        pytest.fail(f"hopzero serve printed {line!r}{proc.stdout.read()[:2000]!r}")
    yield match.group(1)
    proc.terminate()
    proc.wait(timeout=20)


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


def _page_board(driver, cells: int) -> list[int]:
    """Who is on each cell as the page draws it (read in one script: the page redraws often)."""
    pieces = driver.execute_script(
        "return [...document.querySelectorAll('circle[data-cell]')].map(c => [+c.dataset.cell, +c.dataset.owner])")
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
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#chart-winrate polyline"))
    assert browser.find_elements(By.CSS_SELECTOR, "#promotions tbody tr, #gates tbody tr")
    _shoot(browser, shots / "web-runs.png")
    for name in ("web-play-cc49.png", "web-analysis.png", "web-play-star2.png", "web-runs.png"):
        assert (shots / name).stat().st_size > 10_000
