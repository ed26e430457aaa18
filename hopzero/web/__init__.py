"""``hopzero serve``: play, analyse and watch training runs in a browser (docs/WEB.md).

- :mod:`hopzero.web.board`: the board as the page draws it (cell coordinates from the engine's
  geometry, legal moves by start cell, hop paths) and one game's life (:class:`Game`).
- :mod:`hopzero.web.opponents`: the players a client may choose, as validated choices that the
  server turns into player SPECs (a client never writes a SPEC, so never a file name).
- :mod:`hopzero.web.thinking`: a search run in chunks, its statistics after each chunk, stoppable.
- :mod:`hopzero.web.runs`: what the run view shows, read from a run directory's own files, and
  its kept games replayed with the engine.
- :mod:`hopzero.web.tables`: the Tables view of the ``--results`` files (match results).
- :mod:`hopzero.web.app`: the FastAPI application (HTTP and websockets) and ``serve``.

The page itself is plain HTML, CSS and JavaScript under ``hopzero/web/static`` (no build step, no
network at run time). Outside this package only ``hopzero.cli`` and ``hopzero.bench.reply`` (which
times the engine's reply as the server builds it) import it.
"""
