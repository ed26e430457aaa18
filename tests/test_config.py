"""The training configuration tree: named configs, strict overrides, and the two rule sets."""

from __future__ import annotations

import pytest

from hopzero.config import CONFIG_NAMES, ConfigError, load_config, named_config_data


@pytest.mark.parametrize("name", [name for name in CONFIG_NAMES if name not in ("star4", "star6")])  # race plans
def test_named_configs_load_on_every_training_preset(name):
    for preset_name in ("cc49", "paper", "small-4-3"):
        config = load_config(name, preset_name=preset_name, seed=5)
        assert (config.name, config.preset, config.seed) == (name, preset_name, 5)
        assert config.game_rules().name == preset_name


def test_a_teacher_that_needs_more_players_is_refused_on_two_before_the_run_starts():
    """star6's and star4's stage-1 teacher plans a race of three or more players: the config loads
    on every preset of three or more and names the teacher on a two-player game."""
    for preset_name in ("star3", "star4", "star6"):
        assert load_config("star6", preset_name=preset_name).stage1.teacher == "alphabeta:depth=2,opponents=still"
    assert load_config("star4").stage1 == load_config("star6").stage1  # star4 learns from the race plan too
    for preset_name in ("cc49", "star2"):
        for name in ("star4", "star6"):
            with pytest.raises(ConfigError, match=r"^stage1.teacher: .*opponents=still plans a race among three or more"):
                load_config(name, preset_name=preset_name)
    with pytest.raises(ConfigError, match=r"^stage1.teacher: .*opponents=still"):
        load_config("star3", preset_name="star2", overrides=["stage1.teacher=alphabeta:opponents=still"])


def test_overrides_are_strict():
    assert load_config("demo", overrides=["learner.lr=0.05"]).learner.lr == 0.05
    with pytest.raises(ConfigError, match=r"^learner.lrr: unknown key; valid: amp, "):
        load_config("demo", overrides=["learner.lrr=0.05"])
    with pytest.raises(ConfigError, match="^learner.batch_size: must be an integer >= 1, got .big.$"):
        load_config("demo", overrides=["learner.batch_size=big"])
    with pytest.raises(ConfigError, match="must be key=value"):
        load_config("demo", overrides=["learner.lr"])


def test_selfplay_rules_change_the_training_games_only():
    plain = load_config("demo", preset_name="paper")
    assert plain.training_rules() == plain.game_rules()
    config = load_config("fast", preset_name="paper")  # fast scores cut-off training games by distance
    game, training = config.game_rules(), config.training_rules()
    assert (game.adjudicate, training.adjudicate) == ("none", "distance")
    assert training.replace(adjudicate="none") == game  # nothing else differs


@pytest.mark.parametrize("name", ["fast", "star2", "star3", "star6"])
@pytest.mark.parametrize("preset_name", ["star3", "star4", "star6"])
def test_named_configs_adjudicate_multi_player_training_games_too(name, preset_name):
    """Distance adjudication scores games of any number of players: a named config on a preset of
    three or more keeps it for the training games; evaluation plays the preset's own rules."""
    config = load_config(name, preset_name=preset_name)
    game, training = config.game_rules(), config.training_rules()
    assert (game.name, game.adjudicate, training.adjudicate) == (preset_name, "none", "distance")
    assert training.replace(adjudicate="none") == game
    with pytest.raises(ConfigError, match="equal_turn=True is a two-player rule; players=3 needs it off"):
        load_config(name, preset_name="star3", overrides=["selfplay.rules.equal_turn=true"])


def test_bad_selfplay_rules_are_named_before_the_run_starts():
    with pytest.raises(ConfigError, match="^selfplay.rules.adjudicat: unknown key; valid: "):
        load_config("fast", overrides=["selfplay.rules.adjudicat=distance"])
    with pytest.raises(ConfigError, match="^selfplay.rules.adjudicate: must be one of .none., .distance., got .fast.$"):
        load_config("fast", overrides=["selfplay.rules.adjudicate=fast"])


def test_a_config_says_only_what_differs_from_its_base():
    """star3 is star2 for three players with a longer stage 1: its file names its base and the
    values that differ, and the resolved tree is star2's with those values."""
    star2, star3 = load_config("star2", preset_name="star3"), load_config("star3")
    assert star3.stage1.keep_fraction == 0.5 and star2.stage1.keep_fraction == 0.1
    assert star3.replay == star2.replay and star3.evaluation == star2.evaluation and star3.search == star2.search
    data = named_config_data("star6")
    assert data["preset"] == "star6" and data["stage1"]["steps"] == 8000  # from star3, from star2's base
    assert data["search"]["c_puct"] == 1.0  # from fast, star2's base


def test_a_base_cycle_or_an_unknown_base_is_one_line(tmp_path, monkeypatch):
    import hopzero.config as config

    (tmp_path / "a.yaml").write_text("base: b\n")
    (tmp_path / "b.yaml").write_text("base: a\n")
    (tmp_path / "c.yaml").write_text("base: nosuch\n")
    monkeypatch.setattr(config, "_CONFIGS", tmp_path)
    monkeypatch.setattr(config, "CONFIG_NAMES", ("a", "b", "c"))
    with pytest.raises(ConfigError, match=r"base configs form a cycle \(a -> b -> a\)"):
        named_config_data("a")
    with pytest.raises(ConfigError, match="unknown config 'nosuch'"):
        named_config_data("c")


def test_the_docs_table_of_presets_is_the_presets_table():
    """docs/RULES.md shows the presets as ``ccengine.rules.PRESETS`` defines them, and every preset
    name the command line takes builds its rules."""
    from pathlib import Path

    from ccengine.rules import PRESET_NAMES, preset, presets_markdown, presets_text

    rules_md = (Path(__file__).resolve().parents[1] / "docs" / "RULES.md").read_text()
    assert presets_markdown() in rules_md
    for name in PRESET_NAMES:
        assert name in presets_text()
        if name != "small-N-k":
            assert preset(name).name == name


def test_the_outside_opponent_leaves_the_network_a_seat():
    config = load_config("star4", overrides=["selfplay.opponent=greedy", "selfplay.opponent_fraction=0.5",
                                             "selfplay.opponent_seats=3"])
    assert config.selfplay.opponent_seats == 3
    with pytest.raises(ConfigError, match=r"^selfplay.opponent_seats: must leave the network a seat: below the 4"):
        load_config("star4", overrides=["selfplay.opponent=greedy", "selfplay.opponent_fraction=0.5",
                                        "selfplay.opponent_seats=4"])
    with pytest.raises(ConfigError, match=r"selfplay.opponent_seats"):
        load_config("star4", overrides=["selfplay.opponent_seats=0"])
