"""Retrain end to end on tiny models: promotion, refusal, locking, crashes, MLflow, hot swap, rollback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.data import load_seed
from core.labels import LABELS
from core.registry.stages import RunRecord, read_last_run
from core.registry.versions import ModelRegistry
from core.settings.config import PROJECT_ROOT, Settings
from core.settings.policies import StoreLimits
from core.storage.paths import HomePaths
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from retrain.inputs import RetrainSetup
from retrain.run import retrain
from retrain.state import RetrainBusy, retrain_lock
from retrain.training.targets import replay_targets
from testkit.models import tiny_settings

pytestmark = pytest.mark.e2e

# A recipe under which the 2-layer test model learns the seed set in seconds, so a challenger is
# clearly better than the barely trained tiny champion.
LEARNING = {"retrain_epochs": 12.0, "retrain_lr_encoder": 3e-3, "retrain_lr_head": 3e-3, "retrain_base_rows": 0, "retrain_max_minutes": 0.0,
            # The seed set validates on 57 rows, 10-18 a label: too few to rule out a 1- or 3-point loss even when
            # nothing changes, so the non-inferiority margins are wide here (a real validation set has ~400 a label).
            "gate_base_margin": 0.2, "gate_recall_margin": 0.5}


def settings_for(home: Path, **overrides: object) -> Settings:
    return tiny_settings(home, **(LEARNING | overrides))


def run_retrain(settings: Settings, *, track: bool = False) -> RunRecord:
    return retrain(RetrainSetup.from_settings(settings), track=track)


def add_feedback(settings: Settings, *, flip: bool, n: int = 40) -> None:
    """Answers on seed texts: their true labels (corrective) or a wrong label (flipped)."""
    store = FeedbackStore(settings.paths.feedback_db, StoreLimits(writes_per_minute=10_000))
    corpus = load_seed()
    for i, ex in enumerate(corpus.train[:n]):
        label = LABELS[(ex.label + 1) % 4] if flip else LABELS[ex.label]
        store.answers.record(AnswerInput(text=ex.text, user_label=label, annotator=f"tester-{i % 3}", kind="correct"))
    store.close()


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "NEWSLOOP_HOME": str(home), "NEWSLOOP_DATA": "seed", "NEWSLOOP_MAX_LENGTH": "64",
        "NEWSLOOP_RETRAIN_BASE_ROWS": "0", "NEWSLOOP_RETRAIN_MAX_MINUTES": "0",
        "MLFLOW_TRACKING_URI": f"sqlite:///{home}/mlflow.db", "PYTHONPATH": str(PROJECT_ROOT),
    })
    env.update(extra)
    return env


def test_run_without_feedback_is_refused_and_changes_nothing(tiny_home_copy: Path) -> None:
    settings = settings_for(tiny_home_copy)
    before = (tiny_home_copy / "models" / "registry.json").read_text()
    result = run_retrain(settings)
    assert result.decision == "refused"
    assert result.reasons == ["There is no trusted feedback to learn from yet."]
    assert (tiny_home_copy / "models" / "registry.json").read_text() == before
    assert read_last_run(settings.paths).decision == "refused"


def test_corrective_feedback_promotes_a_better_challenger(tiny_home_copy: Path) -> None:
    settings = settings_for(tiny_home_copy)
    add_feedback(settings, flip=False)
    result = run_retrain(settings)
    assert result.decision == "promoted", result.reasons
    assert result.champion_before == "v0001" and result.champion_after == "v0002"
    assert result.gate.delta >= settings.gate.margin and result.gate.p_value < settings.gate.alpha
    assert read_last_run(settings.paths).gate == result.gate  # the state file holds every rule's numbers
    assert result.rows["feedback_train"] + result.rows["feedback_holdout"] == 40
    registry = ModelRegistry(settings.paths.models_dir)
    assert registry.champion().version == "v0002"
    assert registry.status()["previous"] == ["v0001"]
    assert list((tiny_home_copy / "backups").glob("feedback-*.db")), "feedback database was not backed up"


def test_replayed_base_rows_are_pulled_toward_the_champion_and_feedback_rows_are_not(tiny_home_copy: Path) -> None:
    import numpy as np

    from core.serving.classifier import OnnxClassifier

    champion = ModelRegistry(tiny_home_copy / "models").champion()
    seed = load_seed().train
    base, feedback = seed[:6], seed[6:10]
    def replay(base: list, feedback: list, **overrides: object) -> np.ndarray:
        setup = RetrainSetup.from_settings(settings_for(tiny_home_copy, **overrides))
        return replay_targets(
            champion, base, feedback, label_smoothing=setup.train.label_smoothing,
            distill_weight=setup.policy.distill_weight,
        )

    targets = replay(base, feedback, distill_weight=1.0, label_smoothing=0.0)
    assert np.allclose(targets[:6], OnnxClassifier(champion.path).predict_proba([e.text for e in base]), atol=1e-6)
    assert np.array_equal(targets[6:], np.eye(4)[[e.label for e in feedback]])
    plain = replay(base, [], distill_weight=0.0, label_smoothing=0.0)
    assert np.array_equal(plain, np.eye(4)[[e.label for e in base]])


def test_flipped_feedback_is_refused_with_reasons(tiny_home_copy: Path) -> None:
    # First a good champion, then a burst of wrong labels that outweighs the replayed base rows.
    settings = settings_for(tiny_home_copy)
    add_feedback(settings, flip=False)
    assert run_retrain(settings).decision == "promoted"
    poisoned = settings_for(tiny_home_copy, feedback_weight=10.0, retrain_base_rows=40)
    store = FeedbackStore(settings.paths.feedback_db, StoreLimits(writes_per_minute=10_000))
    for i, ex in enumerate(load_seed().train[40:160]):
        store.answers.record(AnswerInput(text=ex.text, user_label=LABELS[(ex.label + 1) % 4], annotator=f"mob-{i % 3}", kind="correct"))
    result = run_retrain(poisoned)
    assert result.decision == "refused"
    assert any("recall" in r or "macro-F1" in r for r in result.reasons), result.reasons
    registry = ModelRegistry(settings.paths.models_dir)
    assert registry.champion().version == "v0002"
    assert registry.status()["events"][-1]["action"] == "refused"
    assert registry.status()["events"][-1]["reasons"] == result.reasons


def test_second_run_is_refused_while_one_holds_the_lock(tiny_home_copy: Path) -> None:
    settings = settings_for(tiny_home_copy)
    with retrain_lock(settings.paths), pytest.raises(RetrainBusy):
        run_retrain(settings)


def test_lock_of_a_killed_process_is_released(tiny_home_copy: Path) -> None:
    code = "import sys, time; from pathlib import Path; from core.storage.paths import HomePaths\n" \
           "from retrain.state import retrain_lock\n" \
           "with retrain_lock(HomePaths(Path(sys.argv[1]))):\n    print('held', flush=True); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code, str(tiny_home_copy)], cwd=PROJECT_ROOT, stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"held"
    with pytest.raises(RetrainBusy), retrain_lock(HomePaths(tiny_home_copy)):
        pass
    proc.kill()
    proc.wait()
    with retrain_lock(HomePaths(tiny_home_copy)):
        pass


def wait_for_stage(home: Path, stage: str, proc: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.time() + timeout
    progress = HomePaths(home).retrain_progress
    while time.time() < deadline:
        assert proc.poll() is None, "retrain exited before reaching the stage"
        if progress.is_file() and json.loads(progress.read_text())["stage"] == stage:
            return
        time.sleep(0.2)
    raise AssertionError(f"retrain never reached {stage}")


def test_kill_during_training_leaves_the_champion_serving(tiny_home_copy: Path) -> None:
    settings = settings_for(tiny_home_copy)
    add_feedback(settings, flip=False)
    before = (tiny_home_copy / "models" / "registry.json").read_text()
    env = cli_env(tiny_home_copy, NEWSLOOP_RETRAIN_EPOCHS="20")
    proc = subprocess.Popen([sys.executable, "-m", "retrain", "run"], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_stage(tiny_home_copy, "training", proc)
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (tiny_home_copy / "models" / "registry.json").read_text() == before
    assert ModelRegistry(settings.paths.models_dir).champion().version == "v0001"
    # The next run is not blocked by the dead one's lock, cleans up, and completes.
    result = run_retrain(settings)
    assert result.decision == "promoted", result.reasons
    assert not any((tiny_home_copy / "models" / "staging").iterdir())


def test_kill_in_the_middle_of_promotion_keeps_a_consistent_registry(tiny_home_copy: Path) -> None:
    settings = settings_for(tiny_home_copy)
    add_feedback(settings, flip=False)
    # Die just before the champion record is replaced: the worst moment of a promotion.
    code = (
        "import os, signal, sys\n"
        "import core.registry.versions as reg\n"
        "real = os.replace\n"
        "def dying_replace(src, dst):\n"
        "    if str(dst).endswith('registry.json') and 'v0002' in open(src).read():\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return real(src, dst)\n"
        "reg.os.replace = dying_replace\n"
        "from retrain.__main__ import main\n"
        "sys.exit(main(['run']))\n"
    )
    env = cli_env(tiny_home_copy, **{f"NEWSLOOP_{k.upper()}": str(v) for k, v in LEARNING.items()})
    proc = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, env=env, capture_output=True, timeout=400)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    registry = ModelRegistry(settings.paths.models_dir)
    assert registry.champion().version == "v0001"  # the record is the old one, whole
    assert "v0002" in registry.versions()  # the challenger was committed but never became champion
    result = run_retrain(settings)
    assert result.decision == "promoted" and registry.champion().version == "v0003"


def test_mlflow_run_records_params_metrics_tags_artifacts_and_aliases(tiny_home_copy: Path) -> None:
    import mlflow

    settings = settings_for(tiny_home_copy)
    add_feedback(settings, flip=False)
    result = run_retrain(settings, track=True)
    assert result.decision == "promoted"
    mlflow.set_tracking_uri(settings.tracking_uri)
    client = mlflow.MlflowClient()
    run = client.get_run(result.mlflow_run_id)
    for key in ("base_model", "lr_encoder", "lr_head", "epochs", "batch_size", "max_length", "label_smoothing",
                "dropout", "seed", "rows_base_train", "rows_feedback_train", "rows_feedback_holdout"):
        assert key in run.data.params, key
    metrics = run.data.metrics
    for key in ("challenger_accuracy", "challenger_macro_f1", "challenger_macro_auroc", "challenger_sports_recall",
                "champion_validation_accuracy", "champion_validation_macro_f1", "champion_validation_world_auprc",
                "train_loss", "val_loss", "val_macro_f1"):
        assert key in metrics, key
    history = client.get_metric_history(run.info.run_id, "train_loss")
    assert len(history) >= 2
    tags = run.data.tags
    assert tags["decision"] == "promoted" and tags["gate_promote"] == "True" and "gate_p_value" in tags
    artifacts = {a.path for folder in ("", "plots", "model", "metrics") for a in client.list_artifacts(run.info.run_id, folder)}
    assert {"gate.json", "model/model.onnx", "model/tokenizer.json", "plots/challenger_confusion.png",
            "plots/challenger_curves.png", "metrics/challenger.json"} <= artifacts
    champion_mv = client.get_model_version_by_alias("newsloop-classifier", "champion")
    assert champion_mv.tags["newsloop_version"] == ModelRegistry(settings.paths.models_dir).champion().version == "v0002"


def test_running_app_serves_the_promoted_model_then_the_rolled_back_one(tiny_home_copy: Path) -> None:
    from gradio_client import Client

    from core.serving.classifier import ChampionService
    from testkit.server import launched_app

    settings = settings_for(tiny_home_copy, reload_interval_s=0.5)
    service = ChampionService(ModelRegistry(settings.paths.models_dir), check_interval_s=settings.serving.reload_interval_s)
    service.refresh()
    service.start_watching()
    with launched_app(settings, None, service) as (url, _):
        client = Client(url, verbose=False, download_files=False, analytics_enabled=False)

        def served_version() -> str:
            _, info, _prediction_id = client.predict("Shares fell after the report.", api_name="/classify")
            return info.split("**")[1]

        def wait_for(version: str) -> float:
            start = time.time()
            while time.time() - start < 30:
                if served_version() == version:
                    return time.time() - start
                time.sleep(0.25)
            raise AssertionError(f"app still serves {served_version()}, expected {version}")

        assert served_version() == "v0001"
        add_feedback(settings, flip=False)
        assert run_retrain(settings).decision == "promoted"
        wait_for("v0002")
        out = subprocess.run([sys.executable, "-m", "retrain", "rollback"], cwd=PROJECT_ROOT,
                             env=cli_env(tiny_home_copy), capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        assert json.loads(out.stdout)["champion"] == "v0001"
        wait_for("v0001")
    service.stop()


def test_gate_reuses_validation_scores_cached_at_export_only_for_the_same_set(tiny_home_copy: Path) -> None:
    import numpy as np

    from core.data import load_corpus_or_seed
    from core.serving.classifier import OnnxClassifier
    from core.storage.paths import VALIDATION_PROBS
    from retrain.export.scoring import served_probs

    settings = settings_for(tiny_home_copy)
    validation = load_corpus_or_seed(settings.data.source, settings.data.val_fraction, settings.data.use_extra).validation
    champion = ModelRegistry(settings.paths.models_dir).champion()
    fresh = OnnxClassifier(champion.path).proba_in_label_order([e.text for e in validation])
    assert np.allclose(served_probs(champion, validation), fresh, atol=1e-6)
    np.save(champion.path / VALIDATION_PROBS, np.zeros_like(fresh))  # proves which one is read
    assert not served_probs(champion, validation).any()
    assert np.allclose(served_probs(champion, validation[1:]), fresh[1:], atol=1e-6)
