"""``hopzero serve``: play Chinese Checkers with two to six seats, people and engines together, in
rooms anyone joins by link; analyse games; watch training runs; read the tables (docs/WEB.md).

The game and its people:

- :mod:`~hopzero.web.game`: one game of 2-6 seats, its moves with their hop paths, its result;
- :mod:`~hopzero.web.seats`: a seat (a person's or an engine's) and the secrets that hold it;
- :mod:`~hopzero.web.rooms`: a room (game, seats, settings, evaluations) and who may change what;
- :mod:`~hopzero.web.hall`: the rooms in memory and in the database, and the pages watching them;
- :mod:`~hopzero.web.turns`: the engine seats played and the turn timers kept by the server;
- :mod:`~hopzero.web.store`: kept games in SQLite; :mod:`~hopzero.web.gamefile`: game files.

Engines and analysis:

- :mod:`~hopzero.web.engines`: the engines a seat may get, their named levels, how they are built;
- :mod:`~hopzero.web.models`: one copy of each network per process, loaded off the event loop;
- :mod:`~hopzero.web.thinking`: a search in chunks, its statistics and principal variations;
- :mod:`~hopzero.web.analysis`: stored evaluations and the marked mistakes;
  :mod:`~hopzero.web.evals`: the worker that evaluates every position;
- :mod:`~hopzero.web.searches`: the thread pools and the limit on analyses.

The server: :mod:`~hopzero.web.app` (the application and ``serve``), one router per view
(:mod:`~hopzero.web.routes_games`, :mod:`~hopzero.web.routes_analysis`,
:mod:`~hopzero.web.routes_runs`, :mod:`~hopzero.web.routes_tables`), :mod:`~hopzero.web.server`
(the parts they share), :mod:`~hopzero.web.messages` (every request and message),
:mod:`~hopzero.web.sockets`, :mod:`~hopzero.web.security` (Host and Origin), :mod:`~hopzero.web.limits`;
:mod:`~hopzero.web.geometry` and :mod:`~hopzero.web.palette` (the board and the seats' colours as
the page draws them); :mod:`~hopzero.web.runs` and :mod:`~hopzero.web.tables` (the run view and
the Tables view's data).

The page itself is plain HTML, CSS and JavaScript modules under ``hopzero/web/static`` (no build
step, no network at run time). Outside this package only ``hopzero.cli`` and
``hopzero.bench.reply``/``hopzero.bench.rooms`` (which time and measure the server's engines and
rooms as it builds them) import it.
"""
