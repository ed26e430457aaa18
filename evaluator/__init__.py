"""Evaluation: matches between any players under the seed's protocol (``arena``, batched
where they search), the 55% gate (``gating``), the Elo ladder (``elo``), promotions of a new
best model (``promotion``) and the Ray service that runs them (``service``), configured by
``config``."""
