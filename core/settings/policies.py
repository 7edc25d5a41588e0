"""Typed policies each stage takes, with the project's defaults: the one place those numbers live.

`core.settings.config.Settings` reads the environment at the edge (app, CLIs, bench) and builds these; code below
the edge takes the small policy it needs, never the whole settings object.
"""

from __future__ import annotations

from dataclasses import dataclass

# Shared by more than one policy or layer, so named once here.
MAX_LENGTH = 192  # tokens a text is cut to: in training, in the export's metadata, and when serving a file without it
DROPOUT = 0.3  # the classifier head's dropout (retrain.model.NewsClassifier), saved with each checkpoint
SESSION_CAPACITY = 10_000  # page sessions whose memory is kept, least recent dropped (web.page.session_memory, web.server.asgi)


@dataclass(frozen=True)
class TrainConfig:
    """One fine-tuning run: schedule, batch, length, seed, and an optional time budget."""

    epochs: float = 1.0
    batch_size: int = 32
    lr_encoder: float = 8e-5
    lr_head: float = 1e-3
    warmup_ratio: float = 0.06
    weight_decay: float = 0.01
    label_smoothing: float = 0.1
    max_length: int = MAX_LENGTH
    seed: int = 13
    max_minutes: float = 0.0  # 0 = no time budget
    threads: int = 0  # 0 = all cores
    bucket_by_length: bool = True
    eval_every: int = 0  # steps between validation checks; 0 = about `eval_checks` per run
    # Validation checks in a run when eval_every is 0, the last at its end. A retrain checks once (Settings.
    # retrain_train_config): its export scores all of base validation anyway, and one 512-row check costs the CPU
    # of ~7 training steps (README "Performance", retrain speed): four were 40% of its loop.
    eval_checks: int = 4
    eval_rows: int = 512
    # The embeddings and this many lower transformer layers stay fixed; 0 = train all. A retrain keeps 3 of
    # MiniLM's 6 (NEWSLOOP_RETRAIN_FREEZE_LAYERS): a step then costs 0.67x the CPU time (14.8 vs 22.0 s for
    # 10), and on the headline shift (bench/retrain_speed.py) the challenger gained as much on headlines.
    freeze_layers: int = 0

    def __post_init__(self) -> None:
        if self.epochs <= 0 or self.batch_size < 1 or self.max_length < 8:
            raise ValueError("epochs must be > 0, batch_size >= 1 and max_length >= 8")
        if self.freeze_layers < 0 or self.eval_checks < 1:
            raise ValueError(f"need freeze_layers >= 0 and eval_checks >= 1, got {self.freeze_layers}, {self.eval_checks}")
        if not (0 < self.lr_encoder < 1 and 0 < self.lr_head < 1):
            raise ValueError("learning rates must lie in (0, 1)")
        if not 0 <= self.warmup_ratio < 1 or not 0 <= self.label_smoothing < 1:
            raise ValueError("warmup_ratio and label_smoothing must lie in [0, 1)")


@dataclass(frozen=True)
class GateConfig:
    """Thresholds a challenger must clear to replace the champion (see `retrain.gate`), and what the retrain
    preview sizes the traffic set for."""

    margin: float = 0.002  # combined macro-F1 the challenger must gain (absolute, 0..1)
    alpha: float = 0.05  # one-sided exact McNemar p (Bonferroni-adjusted) must be below this to show a gain
    # Non-inferiority on base validation: the challenger may not be shown worse by this much or more, at
    # noninferiority_alpha, one-sided. 1 point of accuracy is ~16 of 1,600 rows; a label has ~400 rows,
    # so its recall needs a wider margin to be provable at all after a retrain's ordinary churn.
    base_margin: float = 0.01  # accuracy (absolute)
    recall_margin: float = 0.03  # each label's recall (absolute)
    noninferiority_alpha: float = 0.05
    holdout_weight: float = 0.5  # weight of users' sets in the combined score, before small-set scaling
    min_discordant: int = 1  # fewer discordant pairs than this cannot be significant, so refuse
    # The traffic set's size target (the preview's power calculation, `core.evaluation.paired.rows_for_power`).
    target_gain: float = 0.02  # accuracy gain on traffic to detect (absolute)
    power: float = 0.8  # chance of detecting it with the gate's test
    discordance: float = 0.10  # share of traffic rows the models disagree on, until a run has measured it

    def __post_init__(self) -> None:
        if not 0.0 <= self.margin < 1.0:
            raise ValueError(f"margin must be in [0, 1), got {self.margin}")
        for name in ("alpha", "noninferiority_alpha", "base_margin", "recall_margin", "target_gain", "power",
                     "discordance"):
            value = getattr(self, name)
            if not 0.0 < value < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {value}")
        if not 0.0 <= self.holdout_weight <= 1.0:
            raise ValueError(f"holdout_weight must be in [0, 1], got {self.holdout_weight}")
        if self.min_discordant < 0:
            raise ValueError(f"min_discordant must be >= 0, got {self.min_discordant}")


# Whose answers may train a model: accounts the host signed in; identities that passed known-answer
# checks; or every identity (only where every visitor is trusted, e.g. a team's own machine).
TRAIN_ON = ("signed_in", "checked", "anyone")


@dataclass(frozen=True)
class TrustPolicy:
    """Which feedback answers may train a model (see `feedback.trust`)."""

    labels_required: int = 1  # agreeing votes a text needs
    min_annotator_agreement: float = 0.6  # below this agreement with the others, an annotator is not trained on
    min_answers_for_agreement: int = 5  # shared texts before agreement is judged
    min_checks: int = 3  # known-answer checks answered before an annotator's check score counts
    min_check_accuracy: float = 0.6  # below this accuracy on checks, an annotator is not trained on
    train_on: str = "anyone"  # whose answers may train: "signed_in" | "checked" | "anyone" (see TRAIN_ON)

    def __post_init__(self) -> None:
        if self.train_on not in TRAIN_ON:
            raise ValueError(f"train_on must be one of {', '.join(TRAIN_ON)}, got {self.train_on!r}")
        if self.labels_required < 1 or self.min_checks < 1 or self.min_answers_for_agreement < 1:
            raise ValueError("labels_required, min_checks and min_answers_for_agreement must be >= 1")
        if not (0.0 <= self.min_annotator_agreement <= 1.0 and 0.0 <= self.min_check_accuracy <= 1.0):
            raise ValueError("agreement and check accuracy thresholds must lie in [0, 1]")


@dataclass(frozen=True)
class QueuePolicy:
    """What the labelling queue hands out next (see `feedback.pool`)."""

    labels_required: int = 1  # agreeing labels after which an item leaves the queue
    min_checks: int = 3  # known-answer checks each annotator answers first
    check_share: float = 0.1  # share of later items that are checks
    max_skips: int = 200  # skips one annotator may make; beyond it, the queue asks for an answer
    spread: int = 16  # each annotator's next item is drawn from this many of the most uncertain ones
    # The traffic set: this share of pool items (by a salted hash of the text, fixed when the queue first
    # sees the item) is kept out of the uncertainty order, and this share of queue turns offers one of them,
    # uniformly at random among the newest `traffic_recent` unlabelled ones. Their labels are never trained
    # on: they are the gate's unbiased sample of what users send (see feedback.snapshot).
    traffic_share: float = 0.2
    traffic_recent: int = 1000

    def __post_init__(self) -> None:
        if self.labels_required < 1 or self.min_checks < 0 or self.max_skips < 0 or self.spread < 1:
            raise ValueError("labels_required and spread must be >= 1; min_checks and max_skips >= 0")
        if not 0.0 <= self.check_share <= 1.0:
            raise ValueError(f"check_share must lie in [0, 1], got {self.check_share}")
        if not 0.0 <= self.traffic_share < 1.0 or self.traffic_recent < 1:
            raise ValueError("traffic_share must lie in [0, 1) and traffic_recent be >= 1")


@dataclass(frozen=True)
class StoreLimits:
    """Bounds on what the feedback store accepts."""

    max_text_chars: int = 5000  # longest text stored with an answer or a pool item
    writes_per_minute: int = 30  # answers per anonymous annotator (a self-minted browser id) per minute
    verified_writes_per_minute: int = 120  # per signed-in account: a fast keyboard labeller does about 60
    address_writes_per_minute: int = 90  # answers per client address per minute (a newsroom may share one)
    # Label smoothing (0.1) keeps the model's top probability below about 0.93, so 0.8 is "very sure".
    suspicious_confidence: float = 0.8  # an answer is suspicious when the model was this sure of another label

    def __post_init__(self) -> None:
        if min(self.max_text_chars, self.writes_per_minute, self.verified_writes_per_minute,
               self.address_writes_per_minute) < 1:
            raise ValueError("max_text_chars and writes_per_minute must be positive")
        if not 0.0 < self.suspicious_confidence <= 1.0:
            raise ValueError("suspicious_confidence must be in (0, 1]")


@dataclass(frozen=True)
class DataSource:
    """Where labelled base data comes from and how validation is carved out of it."""

    source: str = "ag_news"  # Hugging Face dataset id, a folder of AG-News-format CSVs, a CSV file, or "seed"
    val_fraction: float = 0.1
    use_extra: bool = True  # also train on extra train_*.csv files in a data folder


@dataclass(frozen=True)
class ExportConfig:
    """How a trained model becomes a served ONNX version."""

    max_length: int = MAX_LENGTH
    int8_tolerance: float = 0.5  # serve int8 only within this many accuracy points of fp32


@dataclass(frozen=True)
class RetrainPolicy:
    """A retrain's own choices, beside its TrainConfig, GateConfig and TrustPolicy."""

    # 1,000 since issue 27: 3,000 made 98% of a retrain's training tokens (base articles average 51 tokens, headline
    # answers 11), and on the headline shift from the starter (400 answers) the recipe with 1,000 (3 layers frozen)
    # gained more on unseen headlines (+2.3 vs +1.3 pt) at a base-validation change of +0.06 vs -0.18 pt.
    base_rows: int = 1000  # base rows replayed beside the feedback; 0 = all
    feedback_weight: float = 2.0  # loss weight of a feedback row vs a base row
    # 3 since issue 27: with 1, 150-450 headline answers beside 1,000 replayed articles hardly moved headline accuracy
    # (a whole-articles champion's first challenger gained base validation and lost 0.5 pt on unseen headlines); with
    # 3 its challengers gained 0.7-1.6 pt there, base validation unchanged (README "Does it learn?"). Answers are
    # short (11 tokens against 51), so the extra steps cost seconds.
    feedback_repeats: int = 3  # times each feedback row is trained on per retrain epoch
    distill_weight: float = 0.0  # share of the champion's own predictions in replayed rows' targets
    warm_start: bool = True  # start from the champion's weights rather than the base encoder
    holdout_fraction: float = 0.25  # share of trusted feedback kept out of training to judge the challenger
    min_feedback: int = 50  # new trusted answers since the last run before a scheduled retrain (feedback.readiness)

    def __post_init__(self) -> None:
        if self.feedback_repeats < 1 or self.base_rows < 0 or self.min_feedback < 1:
            raise ValueError("feedback_repeats and min_feedback must be >= 1, base_rows >= 0")
