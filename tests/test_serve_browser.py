"""``hopzero serve`` in a real browser: the real server (``hopzero serve --port 0`` in a subprocess)
and Debian's headless Chromium driven by Selenium, every move made by clicking the board.

- Two browsers (two profiles: two people) join one star3 room by its link, an engine in the third
  seat, and play to the end; both show the same finishing order; the game is in SQLite and opens
  as a replay whose positions step with the arrow keys.
- The analysis board on that game: arrows along hop paths with labels that do not overlap, a top
  move's line previewed, the win-chance graph, a hint.
- star6: one person and five Beginner engines to the end, through a reload, a dropped socket and
  a server restart in the middle.
- A phone (390 x 844): no horizontal overflow, the board fits, a move by tapping.
- The run view's kept games replayed, the Tables view with a star3 tournament.

The screenshots go to a temporary directory; ``HOPZERO_SCREENSHOTS=docs/images`` refreshes the
documentation's (``HOPZERO_SCREENSHOT_RUN=RUN_DIR`` shows that run in the run view's picture).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.actions.interaction import POINTER_TOUCH
from selenium.webdriver.common.actions.pointer_input import PointerInput
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.support.ui import Select, WebDriverWait
from test_cli import hopzero_command

from ccengine import new_state, preset
from ccengine.notation import parse_position
from ccengine.players import GreedyPlayer
from evaluator.arena import play_match
from evaluator.game_log import add_match_games
from evaluator.results import append_result, result_lines
from hopzero.web.store import DB_FILE

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT_S = 60
#: A star3 position 21 plies before the end of a game of greedy players (Red to move): greedy
#: players finish it in 21 plies whatever their tie-breaks.
STAR3_LATE = "11.1......1..1....2..221..1.....2.211.....2.2..................22.........2...........1........00...........000....0.0000 0 135"


def _browser_or_skip() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if not missing:
        return
    message = f"{', '.join(missing)} missing: apt-get install chromium chromium-driver (scripts/quickstart test does)"
    if os.environ.get("CI"):
        pytest.fail(message)  # CI installs them: their absence is a broken setup, not a skip
    pytest.skip(message)


def _chrome() -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1366,900", "--disable-gpu",
                "--force-device-scale-factor=1", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_window_size(1366, 900)
    return driver


class Serve:
    """``hopzero serve`` in a subprocess on ``port`` (0: a free one), games in ``data``."""

    def __init__(self, cwd: Path, data: Path, *args: str, port: int = 0) -> None:
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
        self.data = data
        self.proc = subprocess.Popen(
            hopzero_command() + ["serve", "--port", str(port), "--data", str(data), "--max-sims", "400", *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd)
        line = self.proc.stdout.readline()
        match = re.search(r"open (http://127\.0\.0\.1:(\d+)/)", line)
        if match is None:
            self.proc.kill()
            pytest.fail(f"hopzero serve printed {line!r}{self.proc.stdout.read()[:2000]!r}")
        self.url, self.port = match.group(1), int(match.group(2))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def _run_dir(tmp: Path) -> Path:
    """A small run directory shaped like a training run's, with real kept games."""
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
    for name, a, b, games in (("star2", "greedy", "greedy-stochastic", 1), ("cc49", "mcts:model=shipped,sims=16",
                                                                          "greedy", 1)):
        match = play_match(preset(name), a, b, games=games, seed=1, keep_moves=True)
        add_match_games(run, preset(name), match, kind="greedy", model_versions=(None, None), config_hash="test",
                        software={})
    return run


def _results(tmp: Path) -> list[Path]:
    """A cc49 round robin (``match --out``) and a star3 tournament directory."""
    path = tmp / "results.jsonl"
    players = ("greedy", "random", "alphabeta:depth=1")
    for i, a in enumerate(players):
        for b in players[i + 1:]:
            append_result(path, *result_lines(play_match(preset("cc49"), a, b, games=4, seed=i), {}))
    out = tmp / "ladder-star3"
    subprocess.run(hopzero_command() + ["tournament", "--preset", "star3", "--players", "greedy", "random",
                                        "greedy-stochastic", "alphabeta:depth=1,opponents=still", "--games", "3",
                                        "--random-opening", "0", "--out", str(out), "--seed", "1"],
                   check=True, capture_output=True, timeout=600)
    return [path, out]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    _browser_or_skip()
    tmp = tmp_path_factory.mktemp("serve")
    args = ["--run-dir", str(_run_dir(tmp))]
    if os.environ.get("HOPZERO_SCREENSHOT_RUN"):
        args += ["--run-dir", os.environ["HOPZERO_SCREENSHOT_RUN"]]
    for path in _results(tmp):
        args += ["--results", str(path)]
    serve = Serve(tmp, tmp / "data", *args)
    yield serve
    serve.stop()


@pytest.fixture(scope="module")
def browser():
    _browser_or_skip()
    driver = _chrome()
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    where = os.environ.get("HOPZERO_SCREENSHOTS")
    path = Path(where) if where else tmp_path_factory.mktemp("shots")
    path.mkdir(parents=True, exist_ok=True)
    return path


# ---------------------------------------------------------------------------------------------
# Reading and clicking the page
# ---------------------------------------------------------------------------------------------


def _wait(d, timeout: float = WAIT_S, **kw) -> WebDriverWait:
    """A wait that looks again when the page redrew what it was looking at."""
    return WebDriverWait(d, timeout, ignored_exceptions=(StaleElementReferenceException,), **kw)


def _click(d, css: str) -> None:
    """Click the element ``css`` finds, again if the page redrew it meanwhile."""
    for _ in range(20):
        try:
            element = d.find_element(By.CSS_SELECTOR, css)
            if element.tag_name in ("button", "a"):  # a list's entry may be scrolled under its header
                d.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
            element.click()
            return
        except StaleElementReferenceException:
            continue
    raise AssertionError(f"{css} kept being redrawn")


def _status(d) -> str:
    return d.execute_script("return document.getElementById('status').dataset.state")


def _room(d) -> dict:
    """The room as the page holds it (read-only)."""
    return d.execute_script("const r = window.hopzeroRoom && window.hopzeroRoom.room; return r && "
                            "{id: r.id, start: r.start, moves: r.moves, to_move: r.to_move, over: r.over, "
                            "version: r.version, plies: r.plies, preset: r.preset}")


def _page_board(d, cells: int) -> list[int]:
    pieces = d.execute_script(
        "return [...document.querySelectorAll('#board circle[data-cell]')].map(c => [+c.dataset.cell, +c.dataset.owner])")
    board = [-1] * cells
    for cell, owner in pieces:
        board[cell] = owner
    return board


def _state(room: dict):
    rules = preset(room["preset"])
    state = new_state(rules, parse_position(rules, room["start"]))
    for move in room["moves"]:
        state.play(tuple(move))
    return state


def _settled(d, *, plies: int | None = None) -> str:
    """Wait until the page waits for this person, or the game is over (and has ``plies`` moves)."""
    def ready(drv) -> str | bool:
        state = _status(drv)
        if state in ("your-turn", "over", "waiting") and (plies is None or _room(drv)["plies"] >= plies):
            return state
        return False

    return _wait(d).until(ready)


def _click_move(d, move) -> None:
    s, e = move
    n = _room(d)["plies"]
    _click(d, f'#board circle[data-cell="{s}"]')
    _wait(d).until(lambda drv: drv.find_elements(By.CSS_SELECTOR, f'circle[data-target="{e}"]'))
    _click(d, f'circle[data-target="{e}"]')
    try:
        _wait(d).until(lambda drv: _room(drv)["plies"] > n)
    except TimeoutException:
        message = d.find_element(By.ID, "message").text
        raise AssertionError(f"move {s}-{e} was not played: status {_status(d)!r}, message {message!r}") from None


def _new_game_in_lobby(d, url: str, preset_name: str, seats: list[tuple[str, str | None]], *,
                       position: str | None = None, shot: Path | None = None) -> str:
    """Start a game from the lobby's form: ``seats`` as (who: ``person`` or an engine's label
    start, level or None); engines move at once; ``shot``: a picture of the filled form. Returns
    the room's id."""
    d.get(url)
    _wait(d).until(lambda drv: drv.find_elements(By.CSS_SELECTOR, f'#preset option[value="{preset_name}"]')
                                   and drv.find_elements(By.CSS_SELECTOR, ".seat-row"))
    Select(d.find_element(By.ID, "preset")).select_by_value(preset_name)
    _wait(d).until(lambda drv: len(drv.find_elements(By.CSS_SELECTOR, ".seat-row")) == len(seats)
                                   and drv.find_element(By.ID, "who-0").find_elements(By.TAG_NAME, "option"))
    for i, (who, level) in enumerate(seats):
        choose = Select(d.find_element(By.ID, f"who-{i}"))
        if who == "person":
            choose.select_by_value("person")
        else:
            choose.select_by_visible_text(next(o.text for o in choose.options if o.text.startswith(who)))
        if level is not None:
            Select(d.find_element(By.CSS_SELECTOR, f'.seat-row[data-seat="{i}"] .level')).select_by_value(level)
    Select(d.find_element(By.ID, "pace")).select_by_value("0")
    if position:
        d.find_element(By.CSS_SELECTOR, "#lobby details summary").click()
        d.find_element(By.ID, "start-position").send_keys(position)
    if shot is not None:
        _shoot(d, shot)
    d.find_element(By.ID, "start").click()
    _wait(d).until(lambda drv: "/g/" in drv.current_url and _room(drv))
    return d.current_url.rsplit("/", 1)[1]


def _shoot(d, path: Path) -> None:
    d.execute_script("window.scrollTo(0, 0)")
    d.save_screenshot(str(path))
    assert path.stat().st_size > 10_000


# ---------------------------------------------------------------------------------------------
# Two people and an engine
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def star3_game(server, browser, shots):
    """Two people (two browser profiles) and an engine play a star3 room to its end by clicks."""
    other = _chrome()
    try:
        gid = _new_game_in_lobby(browser, server.url, "star3", [("person", None), ("person", None), ("Greedy", None)],
                                 position=STAR3_LATE)
        other.get(browser.current_url)  # the link
        _wait(other).until(lambda d: d.find_elements(By.CSS_SELECTOR, 'button.take[data-seat="1"]'))
        _click(other, 'button.take[data-seat="1"]')
        _wait(browser).until(lambda d: "here" in d.find_element(By.CSS_SELECTOR, '#seats li[data-seat="1"]').text)
        people = {0: browser, 1: other}
        chooser = GreedyPlayer(preset("star3"), seed=2)
        shot = False
        while True:
            room = _room(browser)
            if room["over"]:
                break
            seat = room["to_move"]
            if seat == 2:  # the engine's turn: both pages hear its move
                _wait(browser).until(lambda d: _room(d)["plies"] > room["plies"])
                continue
            page = people[seat]
            _wait(page).until(lambda d: _status(d) == "your-turn" and _room(d)["plies"] == room["plies"])
            state = _state(_room(page))
            assert _page_board(page, 121) == list(state.board)
            _click_move(page, chooser.select(state))
            if not shot and room["plies"] >= 9:
                _settled(browser)
                _shoot(browser, shots / "web-room-star3.png")
                shot = True
        for page in (browser, other):
            _wait(page).until(lambda d: _status(d) == "over")
        orders = [p.find_element(By.ID, "result").get_attribute("data-order") for p in (browser, other)]
        final = _state(_room(browser))
        assert final.is_terminal() and _room(other)["moves"] == _room(browser)["moves"]
        scores = [float(x) for x in final.scores()]
        expected = sorted(range(3), key=lambda p: (-scores[p], -sum(1 for c in final.rules.geometry.goal(p) if final.board[c] == p), p))
        assert orders[0] == orders[1] == ",".join(map(str, expected))
        assert "Finishing order" in browser.find_element(By.ID, "result").text
        _shoot(other, shots / "web-room-star3-over.png")
    finally:
        other.quit()
    return gid, _room(browser)


def test_two_people_and_an_engine_play_a_star3_room_by_link_to_the_end(server, browser, star3_game):
    gid, room = star3_game
    # kept in SQLite as played
    with sqlite3.connect(server.data / DB_FILE) as db:
        finished, plies = db.execute("SELECT finished, plies FROM games WHERE id = ?", (gid,)).fetchone()
        stored = db.execute("SELECT s, e FROM moves WHERE game = ? ORDER BY ply", (gid,)).fetchall()
    assert finished is not None and plies == len(room["moves"]) and [list(m) for m in stored] == room["moves"]
    # the finished game is listed and opens as a replay, stepped with the arrow keys
    browser.get(server.url)
    _wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, f'#finished-games a[data-game="{gid}"]'))
    _click(browser, f'#finished-games a[data-game="{gid}"]')
    _wait(browser).until(lambda d: _room(d) and _room(d)["id"] == gid and _status(d) == "over")
    rules = preset("star3")
    start = new_state(rules, parse_position(rules, room["start"]))
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.HOME)
    _wait(browser).until(lambda d: d.find_element(By.ID, "board").get_attribute("data-ply") == "0")
    assert _page_board(browser, rules.cells) == list(start.board)
    body.send_keys(Keys.ARROW_RIGHT)
    _wait(browser).until(lambda d: d.find_element(By.ID, "board").get_attribute("data-ply") == "1")
    start.play(tuple(room["moves"][0]))
    assert _page_board(browser, rules.cells) == list(start.board)


def test_the_analysis_board_on_that_game(server, browser, star3_game, shots):
    gid, room = star3_game
    browser.get(server.url + f"g/{gid}")
    _wait(browser).until(lambda d: _room(d) and _status(d) == "over")
    # every position gets its evaluation while the page is open: the graph's lines, one per seat
    _wait(browser).until(
        lambda d: d.execute_script("return Object.keys(window.hopzeroRoom.room.evals).length") >= room["plies"] + 1)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph polyline.series")) == 3
    ply = 4
    _click(browser, f'#move-list button[data-ply="{ply}"]')
    _wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#board polyline.arrow"))
    # arrows follow the moves' hop paths; labels are shares, never overlapping
    state = new_state(preset("star3"), parse_position(preset("star3"), room["start"]))
    for move in room["moves"][:ply]:
        state.play(tuple(move))
    for arrow in browser.find_elements(By.CSS_SELECTOR, "#board polyline.arrow"):
        path = [int(c) for c in arrow.get_attribute("data-path").split("-")]
        assert len(arrow.get_attribute("points").split()) == len(path) and state.board[path[0]] == state.to_move
    labels = browser.execute_script(
        "return [...document.querySelectorAll('#board .arrow-label')].map(t => {const b = t.getBBox(); "
        "return [t.textContent, b.x, b.y, b.width, b.height]})")
    assert labels and all(re.fullmatch(r"\d{1,3}%", text) for text, *_ in labels)
    for i, (_, x, y, w, h) in enumerate(labels):
        for _, x2, y2, w2, h2 in labels[i + 1:]:
            assert x + w <= x2 or x2 + w2 <= x or y + h <= y2 or y2 + h2 <= y, labels
    assert "%" in browser.find_element(By.ID, "winbar").text
    # a deeper analysis of the position on screen, and a top move's line previewed
    browser.find_element(By.TAG_NAME, "body").send_keys("a")
    _wait(browser).until(lambda d: "this page's analysis: 400 simulations" in d.find_element(By.ID, "win-note").text)
    ActionChains(browser).move_to_element(browser.find_element(By.CSS_SELECTOR, "#top-moves tbody tr")).perform()
    _wait(browser).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#board .pv-number")) >= 2)
    browser.find_element(By.TAG_NAME, "body").send_keys("a")


# ---------------------------------------------------------------------------------------------
# Six seats, a reload, a restart
# ---------------------------------------------------------------------------------------------


def test_star6_one_person_and_five_engines_through_a_reload_and_a_restart(browser, tmp_path, shots):
    serve = Serve(tmp_path, tmp_path / "data")
    try:
        seats = [("person", None)] + [("hopzero star6 model", "beginner")] * 5
        gid = _new_game_in_lobby(browser, serve.url, "star6", seats, shot=shots / "web-lobby.png")
        rules = preset("star6")
        chooser = GreedyPlayer(rules, seed=6)
        moves = 0
        while _settled(browser) != "over":
            state = _state(_room(browser))
            assert _page_board(browser, rules.cells) == list(state.board)
            _click_move(browser, chooser.select(state))
            moves += 1
            if moves == 3:  # a reload keeps the game
                before = _room(browser)["moves"]
                browser.refresh()
                _wait(browser).until(lambda d: _room(d) and _room(d)["moves"][:len(before)] == before)
            if moves == 5:  # the socket drops: the page reconnects and the game goes on
                browser.execute_script("window.hopzeroRoom.link.drop()")
                _wait(browser).until(
                    lambda d: d.find_element(By.ID, "connection").text == "Connected again.")
            if moves == 7:  # the server restarts on its port: the page reconnects to the kept game
                _settled(browser)
                before = _room(browser)["moves"]
                serve.stop()
                _wait(browser).until(
                    lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "reconnecting")
                serve = Serve(tmp_path, tmp_path / "data", port=serve.port)
                _wait(browser).until(
                    lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "connected")
                assert _room(browser)["moves"][:len(before)] == before
            if moves == 12:
                _settled(browser)
                _shoot(browser, shots / "web-star6.png")
                _analysis_picture(browser, shots / "web-analysis.png")
            assert moves < 200
        final = _state(_room(browser))
        assert final.is_terminal() and _page_board(browser, rules.cells) == list(final.board)
        order = browser.find_element(By.ID, "result").get_attribute("data-order")
        assert sorted(map(int, order.split(","))) == list(range(6)) and _room(browser)["id"] == gid
    finally:
        serve.stop()


def _analysis_picture(d, path: Path) -> None:
    """The analysis board at work: a deeper analysis of the position, a top move's line shown."""
    body = d.find_element(By.TAG_NAME, "body")
    body.send_keys("a")
    _wait(d).until(lambda drv: "this page's analysis: 400 simulations" in drv.find_element(By.ID, "win-note").text)
    ActionChains(d).move_to_element(d.find_element(By.CSS_SELECTOR, "#top-moves tbody tr")).perform()
    _wait(d).until(lambda drv: len(drv.find_elements(By.CSS_SELECTOR, "#board .pv-number")) >= 3)
    _shoot(d, path)
    ActionChains(d).move_to_element(d.find_element(By.ID, "status")).perform()
    body.send_keys("a")


# ---------------------------------------------------------------------------------------------
# A phone
# ---------------------------------------------------------------------------------------------


def _tap(d, element) -> None:
    """A finger's tap at the middle of ``element``."""
    rect = d.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]",
                            element)
    actions = ActionBuilder(d, mouse=PointerInput(POINTER_TOUCH, "finger"))
    actions.pointer_action.move_to_location(int(rect[0]), int(rect[1])).pointer_down().pointer_up()
    actions.perform()


def test_a_phone_plays_by_tapping_without_overflow(server, browser, shots):
    browser.set_window_size(390, 844)
    try:
        browser.get(server.url + "?preset=star3&play")
        _wait(browser).until(lambda d: _status(d) == "your-turn")
        width = browser.execute_script("return document.documentElement.clientWidth")
        assert browser.execute_script("return document.documentElement.scrollWidth") <= width
        board = browser.execute_script("const r = document.getElementById('board').getBoundingClientRect(); "
                                       "return [r.left, r.right, r.width]")
        assert board[0] >= 0 and board[1] <= width and board[2] >= 0.9 * width
        # the engine panel is under the board; its buttons are big enough for a finger
        assert browser.execute_script("return document.getElementById('winbar').getBoundingClientRect().top > "
                                      "document.getElementById('board').getBoundingClientRect().bottom")
        small = browser.execute_script(
            "return [...document.querySelectorAll('#room-view button, #room-view select, #room-view .button')]"
            ".filter(b => b.offsetParent && b.getBoundingClientRect().height < 44).map(b => b.id || b.textContent)")
        assert small == []
        state = _state(_room(browser))
        s, e = GreedyPlayer(preset("star3"), seed=1).select(state)
        _tap(browser, browser.find_element(By.CSS_SELECTOR, f'#board circle[data-cell="{s}"]'))
        _wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, f'circle[data-target="{e}"]'))
        _tap(browser, browser.find_element(By.CSS_SELECTOR, f'circle[data-target="{e}"]'))
        _wait(browser).until(lambda d: _room(d)["plies"] >= 1 and _room(d)["moves"][0] == [s, e])
        _settled(browser, plies=3)
        _shoot(browser, shots / "web-phone.png")
        for tab in ("runs", "tables"):  # the other views fit too
            browser.get(server.url + f"?tab={tab}")
            _wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, f"#{tab}.active"))
            assert browser.execute_script("const e = document.documentElement; return e.scrollWidth <= e.clientWidth"), tab
    finally:
        browser.set_window_size(1366, 900)


def test_resign_after_a_new_game_resigns_the_new_game(server, browser):
    browser.get(server.url + "?preset=cc49&play")
    _wait(browser).until(lambda d: _status(d) == "your-turn")
    old = _room(browser)["id"]
    browser.find_element(By.LINK_TEXT, "New game").click()
    _wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, '#preset option[value="cc49"]')
                                         and d.find_elements(By.CSS_SELECTOR, ".seat-row"))
    Select(browser.find_element(By.ID, "preset")).select_by_value("cc49")
    _wait(browser).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".seat-row")) == 2)
    browser.find_element(By.ID, "start").click()
    _wait(browser).until(lambda d: _room(d) and _room(d)["id"] != old)
    browser.find_element(By.ID, "resign").click()
    browser.switch_to.alert.accept()
    _wait(browser).until(lambda d: _status(d) == "over")
    assert "Red resigned" in browser.find_element(By.ID, "status").text
    browser.get(server.url + f"g/{old}")
    _wait(browser).until(lambda d: _room(d) and _room(d)["id"] == old)
    assert not _room(browser)["over"]


# ---------------------------------------------------------------------------------------------
# The run view and the tables
# ---------------------------------------------------------------------------------------------


def _replay_ply(d) -> int:
    return int(d.execute_script("return document.getElementById('replay-info').dataset.ply"))


def test_a_runs_games_replay_move_by_move_and_the_tables(server, browser, shots):
    browser.get(server.url + "?tab=runs")
    if os.environ.get("HOPZERO_SCREENSHOT_RUN"):
        _wait(browser).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#run-select option")) == 2)
        Select(browser.find_element(By.ID, "run-select")).select_by_value("1")
        _wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#chart-winrate polyline"))
        _shoot(browser, shots / "web-runs.png")
        Select(browser.find_element(By.ID, "run-select")).select_by_value("0")
    _wait(browser).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#run-games tbody tr")) == 2)
    if not os.environ.get("HOPZERO_SCREENSHOT_RUN"):
        _shoot(browser, shots / "web-runs.png")
    for row in browser.find_elements(By.CSS_SELECTOR, "#run-games tbody tr"):
        game_id = int(row.get_attribute("data-game"))
        row.click()
        _wait(browser).until(lambda d: f"Game {game_id} " in d.find_element(By.ID, "replay-info").text)
        data = browser.execute_script("return window.hopzeroReplay.game")
        rules = preset(data["board"]["preset"])
        state = new_state(rules)
        for k in range(1, 5):  # step by step, each move flown along its path
            browser.find_element(By.ID, "replay-next").click()
            _wait(browser, WAIT_S, poll_frequency=0.05).until(
                lambda d: _replay_ply(d) == k and not d.execute_script("return window.hopzeroReplay.busy"))
            state.play(tuple(data["moves"][k - 1]))
            pieces = browser.execute_script(
                "return [...document.querySelectorAll('#replay-board circle[data-cell]')].map(c => [+c.dataset.cell, +c.dataset.owner])")
            board = [-1] * rules.cells
            for cell, owner in pieces:
                board[cell] = owner
            assert board == list(state.board)
    # the picture: near the end of the last game replayed, its last move drawn
    browser.find_element(By.ID, "replay-last").click()
    browser.find_element(By.ID, "replay-back").click()
    _wait(browser).until(lambda d: _replay_ply(d) == len(data["moves"]) - 1)
    browser.execute_script("document.getElementById('replay').scrollIntoView()")
    browser.save_screenshot(str(shots / "web-replay.png"))
    # the tables: the cc49 round robin, and the star3 ladder of pairwise comparisons
    browser.get(server.url + "?tab=tables")
    _wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#cross-table tbody tr"))
    Select(browser.find_element(By.ID, "tables-preset")).select_by_value("star3")
    _wait(browser).until(lambda d: "pairwise comparisons of finishing order" in d.find_element(By.ID, "tables-info").text)
    assert "bootstrap over whole games" in browser.find_element(By.ID, "tables-info").text   # the tournament's intervals
    assert [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#cross-table th")][3] == "95% interval"
    names = [r.find_elements(By.TAG_NAME, "td")[1].text for r in browser.find_elements(By.CSS_SELECTOR, "#cross-table tbody tr")]
    assert sorted(names) == sorted(["greedy", "random", "greedy-stochastic", "alphabeta:depth=1,opponents=still"])
    _shoot(browser, shots / "web-tables.png")
