from __future__ import annotations

from pathlib import Path

import pytest

from core.settings.config import ConfigError, Settings, load_settings, setting_fields


def test_settings_read_prefixed_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NEWSLOOP_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("NEWSLOOP_DATA", "/some/folder")
    monkeypatch.setenv("NEWSLOOP_MAX_LENGTH", "128")
    settings = load_settings()
    assert settings.storage.home == (tmp_path / "state").resolve()
    assert settings.data.source == "/some/folder"
    assert settings.train.max_length == 128
    assert settings.paths.feedback_db == settings.storage.home / "feedback.db"


def test_loading_settings_creates_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NEWSLOOP_HOME", str(tmp_path / "not-yet"))
    load_settings()
    assert not (tmp_path / "not-yet").exists()


def test_invalid_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEWSLOOP_MAX_LENGTH", "lots")
    with pytest.raises(ConfigError, match="NEWSLOOP_MAX_LENGTH"):
        load_settings()


def test_out_of_range_value_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEWSLOOP_VAL_FRACTION", "0.9")
    with pytest.raises(ConfigError, match="NEWSLOOP_VAL_FRACTION"):
        load_settings()


def test_defaults_work_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for item in setting_fields():
        monkeypatch.delenv(item.env, raising=False)  # CI sets NEWSLOOP_DATA
    settings = Settings()
    assert settings.data.source == "ag_news"
    assert settings.model.base_model == ""  # the packaged all-MiniLM-L6-v2
    assert settings.train.max_length == 256 and settings.train.reading.tail == 127  # head and tail
    assert not settings.hosting.admin_enabled


def test_mlflow_uri_defaults_to_sqlite_in_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    settings = load_settings(home=tmp_path)
    assert settings.tracking_uri == f"sqlite:///{tmp_path.resolve() / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://example.invalid")
    assert load_settings(home=tmp_path).tracking_uri == "http://example.invalid"


def test_one_article_length_for_classify_answers_the_queue_and_imports() -> None:
    from core.settings.config import read_settings

    default = read_settings({})
    assert default.store_limits().max_text_chars == default.serving.max_input_chars == 20_000
    raised = read_settings({"NEWSLOOP_MAX_INPUT_CHARS": "50000"})
    assert raised.store_limits().max_text_chars == 50_000
    # The store's old variable, where a host set it to take long articles, now raises Classify's limit with it.
    old = read_settings({"NEWSLOOP_MAX_FEEDBACK_CHARS": "30000"})
    assert old.serving.max_input_chars == old.store_limits().max_text_chars == 30_000
