"""Typed policies each stage takes, with the project's defaults: the one place those numbers live.

Each policy is a frozen, validated section of `core.settings.config.Settings`: its settings carry their default,
bounds and description here, and the environment variable that sets them (see core.settings.fields). Code below
the edge takes the small policy it needs, never the whole settings object.
"""

from __future__ import annotations

from pydantic import field_validator

from core.reading import Reading
from core.settings.fields import Section, internal, setting

# Shared by more than one policy or layer, so named once here.
# Tokens a text is cut to: in training, in the export's metadata, and when serving a file without it. Of a longer text,
# TAIL_SHARE of them come from its end (core.reading). On long newswire stories (R8's of 150+ words, 1,000 to train on) the
# head and tail read 0.968 of held-out stories against 0.960 for the head of the same length and 0.962 for 192 tokens
# of head (docs/results/own-data.md).
MAX_LENGTH = 256
TAIL_SHARE = 0.5
OWN_ROWS = 100  # the newsroom's own held-out articles from which they decide (GateConfig.own_rows)
DROPOUT = 0.3  # the classifier head's dropout (retrain.classifier.model.NewsClassifier), saved with each checkpoint
SESSION_CAPACITY = 10_000  # page sessions whose memory is kept, least recent dropped (NEWSLOOP_SESSION_CAPACITY, web.server.session_memory)
LABELS_REQUIRED = 1  # agreeing labels a text needs (the queue hands it out until then; trust trains on it after)
MIN_CHECKS = 3  # known-answer checks each annotator answers first, and before their check score counts
# The longest article anywhere: Classify, the REST API, answers, the queue and imports take the same (one setting,
# NEWSLOOP_MAX_INPUT_CHARS: a newsroom's long articles are its normal; the model reads what fits its tokens).
MAX_ARTICLE_CHARS = 20_000


class TrainConfig(Section):
    """One fine-tuning run: schedule, batch, length, seed, and an optional time budget (the bootstrap's recipe;
    a retrain's overrides some of it, see core.settings.config.RetrainSection)."""

    epochs: float = setting(3.0, gt=0.0, le=20.0, description="Training epochs of the bootstrap (may be fractional).")
    # 200: at 250 articles three epochs are 45 steps, and held-out accuracy rose from 0.823 to 0.947 (R8) and from
    # 0.760 to 0.827 (HuffPost) with 200 (docs/results/own-data.md).
    min_steps: int = setting(
        200, ge=0, le=100_000, description="The fewest optimizer steps a run takes, however few its rows: a small set is "
        "read for more epochs than `epochs` (0 = epochs alone).",
    )
    # 600,000 tokens: 150 steps of 16 long articles read at 256 tokens, about 7 minutes on 2 cores.
    max_tokens: int = setting(
        600_000, ge=0, description="The most tokens a run trains on (steps times batch times the mean text's tokens read): "
        "bounds a run's time the same way on every machine, so the same data and seed give the same model "
        "(0 = no bound).",
    )
    batch_size: int = setting(16, ge=1, le=1024, description="Texts per training step.")
    lr_encoder: float = setting(5e-5, gt=0.0, lt=1.0, description="Encoder learning rate of the bootstrap.")
    lr_head: float = setting(1e-3, gt=0.0, lt=1.0, description="Classifier head learning rate of the bootstrap.")
    warmup_ratio: float = setting(0.06, ge=0.0, lt=1.0, description="Share of steps spent warming up the learning rate.")
    weight_decay: float = setting(0.01, ge=0.0, lt=1.0, description="AdamW weight decay.")
    label_smoothing: float = setting(0.1, ge=0.0, lt=1.0, description="Label smoothing of the training loss.")
    max_length: int = setting(MAX_LENGTH, ge=16, le=512, description="Tokens a text is cut to, in training and serving.")
    tail_share: float = setting(
        TAIL_SHARE, ge=0.0, le=0.9, description="Of a text longer than max_length, the share of the tokens read that "
        "come from its end (the rest from its start), in training and serving; 0 = its start alone.",
    )
    seed: int = setting(13, description="Random seed of training and of the validation split.")
    max_minutes: float = setting(17.0, ge=0.0, env="bootstrap_max_minutes", description="Training time cap; 0 = no cap.")
    threads: int = setting(0, ge=0, env="torch_threads", description="Threads for training; 0 = all cores.")
    bucket_by_length: bool = internal(True)
    eval_every: int = internal(0, ge=0)  # steps between validation checks; 0 = about `eval_checks` per run
    # Validation checks in a run when eval_every is 0, the last at its end. A retrain checks once (Settings.
    # retrain_train_config): its export scores all of base validation anyway, and one 512-row check costs the CPU
    # of ~7 training steps (docs/results/performance.md, "Retraining"): four were 40% of its loop.
    eval_checks: int = internal(4, ge=1)
    eval_rows: int = internal(512, ge=1)
    # The embeddings and this many lower transformer layers stay fixed; 0 = train all. The bootstrap keeps 2 of
    # MiniLM's 6: on 1,000 R8 stories it read 0.975 of held-out ones either way, in 0.8x the time. A retrain keeps 3
    # (NEWSLOOP_RETRAIN_FREEZE_LAYERS): a step then costs 0.67x the CPU time (14.8 vs 22.0 s for 10), and on the
    # headline shift (bench/retrain_speed.py) the challenger gained as much on headlines.
    freeze_layers: int = internal(2, ge=0)
    lexical: bool = setting(
        True, description="Join the encoder with a TF-IDF linear model fitted on the same rows (a hybrid; its "
        "weight is chosen on the validation rows, 0 serving the encoder alone).",
    )
    lexical_c: float = internal(30.0, gt=0.0)  # the lexical model's inverse L2 strength (scikit-learn's C)
    lexical_terms: int = internal(100_000, ge=1)  # the most words and word pairs it keeps (the most frequent)

    @property
    def reading(self) -> Reading:
        """How a text is read (core.reading): `max_length` tokens, `tail_share` of them from its end."""
        return Reading(self.max_length, round(self.tail_share * (self.max_length - 2)))


class GateConfig(Section):
    """Thresholds a challenger must clear to replace the champion (see `retrain.gate`), and what the retrain
    preview sizes the traffic set for."""

    margin: float = setting(0.002, ge=0.0, lt=1.0, description="Combined macro-F1 the challenger must gain (absolute).")
    alpha: float = setting(0.05, gt=0.0, lt=1.0, description="One-sided McNemar p-value (Bonferroni-adjusted) a gain must beat.")
    # Non-inferiority on base validation: the challenger may not be shown worse by this much or more, at
    # noninferiority_alpha, one-sided. 1 point of accuracy is ~16 of 1,600 rows; a label has ~400 rows,
    # so its recall needs a wider margin to be provable at all after a retrain's ordinary churn.
    base_margin: float = setting(0.01, gt=0.0, lt=1.0, description="Base-validation accuracy margin (absolute).")
    recall_margin: float = setting(0.03, gt=0.0, lt=1.0, description="Per-label recall margin (absolute).")
    noninferiority_alpha: float = setting(
        0.05, gt=0.0, lt=1.0, description="One-sided p-value that shows the challenger is not worse on base validation."
    )
    # The newsroom's own held-out articles (golden set, traffic set, feedback holdout: labelled in its current topics)
    # become the gate's main evidence from this many on; the base data's rules then only guard against forgetting.
    own_rows: int = setting(
        OWN_ROWS, ge=1, description="Held-out articles of the newsroom's own (golden set, traffic set and feedback "
        "holdout together) from which they decide a promotion; the base data then only guards against forgetting.",
    )
    own_margin: float = setting(
        0.02, gt=0.0, lt=1.0, description="On the newsroom's own articles, the accuracy loss (absolute) that must "
        "be ruled out (one-sided, at alpha) besides the gain seen.",
    )
    forget_margin: float = setting(
        0.05, gt=0.0, lt=1.0, description="With the newsroom's own articles deciding: a base topic whose meaning is "
        "unchanged refuses a challenger that reads it this much worse (absolute recall), when the loss is not chance.",
    )
    holdout_weight: float = internal(0.5, ge=0.0, le=1.0)  # weight of users' sets in the combined score, before small-set scaling
    min_discordant: int = internal(1, ge=0)  # fewer discordant pairs than this cannot be significant, so refuse
    # What the preview and the decision size the evidence for ("about 300 more would show a 1-point gain";
    # core.evaluation.paired.Power).
    target_gain: float = setting(
        0.01, gt=0.0, lt=1.0, description="Accuracy gain the preview and the decision say how many held-out articles "
        "would show.",
    )
    power: float = setting(
        0.8, gt=0.0, lt=1.0, description="How often a gain counts as visible: the chance the gate passes a model that "
        "much better.",
    )
    discordance: float = setting(
        0.10, gt=0.0, lt=1.0, description="Assumed share of held-out articles two models disagree on, until a "
        "retrain measures it.",
    )
    # A topic the champion lacks (added, or split off) has no champion to beat: it is judged on its own held-out
    # answers, by lower confidence bounds at `alpha` (retrain.gate.rules.new_topic_rule), so few answers pass only when
    # nearly all are read right: 10 of 10 shows recall >= 0.74, 14 of 15 >= 0.72, 25 of 30 >= 0.68.
    min_new_topic_answers: int = setting(
        10, ge=1, description="Held-out answers a topic new to the model needs before a challenger is judged on it."
    )
    # 0.5 each: the champion reads none of a new topic's articles right; a challenger shown to find more of them than
    # it misses, and to be right more often than wrong when it names the topic, is served while the answers that
    # tighten the bounds come in (what it costs the other topics, their own rules judge). At 0.6 a newsroom's added
    # topic read at recall 0.68 and precision 0.70 of 65 answers (bounds 0.57, 0.59) kept a +26-point challenger out
    # (docs/decisions/own-evidence.md).
    min_new_topic_recall: float = setting(
        0.5, ge=0.0, le=1.0, description="Recall the challenger must be shown (one-sided lower bound at alpha) to "
        "reach on a topic new to the model."
    )
    min_new_topic_precision: float = setting(
        0.5, ge=0.0, le=1.0, description="Precision the challenger must be shown (one-sided lower bound at alpha) to "
        "reach on a topic new to the model."
    )


# Whose answers may train a model: accounts the host signed in; identities that passed known-answer
# checks; or every identity (only where every visitor is trusted, e.g. a team's own machine).
TRAIN_ON = ("signed_in", "checked", "anyone")


class TrustPolicy(Section):
    """Which feedback answers may train a model (see `feedback.trust.rules`)."""

    # The queue's settings (QueuePolicy) say how many labels and checks; Settings.trust_policy() passes them on.
    labels_required: int = internal(LABELS_REQUIRED, ge=1)  # agreeing votes a text needs
    min_annotator_agreement: float = internal(0.6, ge=0.0, le=1.0)  # below this agreement with the others, not trained on
    min_answers_for_agreement: int = internal(5, ge=1)  # shared texts before agreement is judged
    min_checks: int = internal(MIN_CHECKS, ge=1)  # known-answer checks answered before an annotator's check score counts
    min_check_accuracy: float = setting(
        0.6, ge=0.0, le=1.0, description="Annotators below this accuracy on checks are not trained on."
    )
    train_on: str = setting(
        "anyone", on_space="signed_in", description="Whose answers may train: signed_in | checked | anyone."
    )

    @field_validator("train_on")
    @classmethod
    def _known_train_on(cls, value: str) -> str:
        if value not in TRAIN_ON:
            raise ValueError(f"must be one of {', '.join(TRAIN_ON)}")
        return value


class QueuePolicy(Section):
    """What the labelling queue hands out next (see `feedback.labelling.pool`)."""

    labels_required: int = setting(
        LABELS_REQUIRED, ge=1, le=10, on_space=2, description="Agreeing labels after which a text leaves the queue."
    )
    min_checks: int = setting(
        MIN_CHECKS, ge=1, le=50, description="Known-answer checks each annotator answers first, and before being judged."
    )
    check_share: float = setting(0.1, ge=0.0, le=1.0, description="Share of later queue items that are checks.")
    max_skips: int = setting(200, ge=0, description="Queue skips one annotator may make; beyond it, the queue asks for an answer.")
    demo_pool: bool = setting(
        True, description="Put the shipped demo articles in an empty pool at start, so a fresh install has something "
        "to label; a first import of articles replaces those nobody answered.",
    )
    spread: int = internal(16, ge=1)  # each annotator's next item is drawn from this many of the most uncertain ones
    # The traffic set: this share of pool items (by a salted hash of the text, fixed when the queue first
    # sees the item) is kept out of the uncertainty order, and this share of queue turns offers one of them,
    # uniformly at random among the newest `traffic_recent` unlabelled ones. Their labels are never trained
    # on: they are the gate's unbiased sample of what users send (see feedback.training.snapshot).
    traffic_share: float = setting(0.2, ge=0.0, lt=1.0, description="Share of pool and queue that is traffic.")
    traffic_recent: int = internal(1000, ge=1)
    # A topic just added or split off is taught (feedback.labelling.focus): this share of queue turns that are not
    # traffic turns serve the items most informative for it, until it has `teach_until` counted answers.
    focus_share: float = setting(
        0.5, ge=0.0, le=1.0, description="Share of queue turns that serve items for a new topic while it is taught."
    )
    teach_until: int = setting(
        400, ge=0, description="Counted answers a new or split-off topic needs before the queue stops seeking it out."
    )
    # An item a tab holds (its buffer, feedback.labelling.reservations) goes to other tabs only once nothing else is
    # left for them, or after this long without the tab asking (a tab closed mid-way).
    reservation_s: float = internal(300.0, gt=0.0)


class StoreLimits(Section):
    """Bounds on what the feedback store accepts."""

    # Classify's limit (NEWSLOOP_MAX_INPUT_CHARS), passed on by Settings.store_limits(): what Classify takes, an
    # answer, the queue and an import take too.
    max_text_chars: int = internal(MAX_ARTICLE_CHARS, ge=100)
    writes_per_minute: int = setting(
        30, ge=1, env="feedback_per_minute", description="Answers per anonymous browser id a minute."
    )
    # The queue keeps up with a hand at 0.2 s a key (bench/keypress.py): 300 leaves a fast labeller room.
    verified_writes_per_minute: int = setting(
        300, ge=1, env="verified_feedback_per_minute", description="Answers per signed-in account a minute."
    )
    # It bounds many anonymous browser ids from one address; a signed-in account has its own limit, so a newsroom
    # of signed-in people behind one address is not capped by it.
    address_writes_per_minute: int = setting(
        90, ge=1, env="address_feedback_per_minute",
        description="Anonymous answers per client address a minute (signed-in answers are not counted here).",
    )
    # "None of these" answers wait for a maintainer (feedback.topics.unlisted): bounded, so nobody can fill the store
    # or the admin panel with them. A person is a signed-in account, or an address for anonymous browser ids.
    unlisted_per_person: int = setting(
        100, ge=1, description='"None of these" answers one person may have waiting for a maintainer.'
    )
    unlisted_waiting: int = setting(
        5000, ge=1, description='"None of these" answers waiting for a maintainer, from everyone together.'
    )
    # Label smoothing (0.1) keeps the model's top probability below about 0.93, so 0.8 is "very sure".
    suspicious_confidence: float = setting(
        0.8, gt=0.25, le=1.0, description="An answer is suspicious when the model was this sure of another label."
    )


class DataSource(Section):
    """Where labelled base data comes from and how validation is carved out of it."""

    source: str = setting(
        "ag_news", env="data",
        description="Hugging Face dataset id, 'seed', or a folder (train.csv) or CSV file of label,text or "
                    "label,title,description rows: AG News's numbered labels 1-4, or 2-50 topic names of your own."
    )
    val_fraction: float = setting(0.1, gt=0.0, lt=0.5, description="Share of base data held out for validation.")
    use_extra: bool = setting(
        True, env="use_extra_data", description="Also train on extra CSVs (train_*.csv) in a data folder."
    )
    examples: str = setting(
        "", description="A CSV of label,text rows whose first text of each topic is one of Classify's examples; "
        "empty = one per topic drawn from the data's training rows (AG News's own four when the data is AG News)."
    )


class ExportConfig(Section):
    """How a trained model becomes a served ONNX version."""

    max_length: int = internal(MAX_LENGTH, ge=8)  # the training recipe's (Settings.export_config passes it on)
    tail_tokens: int = internal(0, ge=0)  # of those, from a long text's end (Settings.export_config passes it on)

    @property
    def reading(self) -> Reading:
        return Reading(self.max_length, self.tail_tokens)
    int8_tolerance: float = setting(
        0.5, ge=0.0, description="Serve int8 only within this many accuracy points of fp32."
    )


class RetrainPolicy(Section):
    """A retrain's own choices, beside its TrainConfig, GateConfig and TrustPolicy."""

    # 1,000: 3,000 made 98% of a retrain's training tokens (base articles average 51 tokens, headline answers 11),
    # and on the headline shift from the starter (400 answers) the recipe with 1,000 (3 layers frozen) gained
    # more on unseen headlines (+2.3 vs +1.3 pt) at a base-validation change of +0.06 vs -0.18 pt.
    base_rows: int = setting(1000, ge=0, description="Base rows replayed beside the feedback in a retrain; 0 = all.")
    feedback_weight: float = setting(
        2.0, gt=0.0, le=100.0, env="feedback_weight", description="Loss weight of a feedback row vs a base row."
    )
    # 3: with 1, 150-450 headline answers beside 1,000 replayed articles hardly moved headline accuracy (a
    # whole-articles champion's first challenger gained base validation and lost 0.5 pt on unseen headlines); with
    # 3 its challengers gained 0.7-1.6 pt there, base validation unchanged (docs/results/loop.md, "The headline
    # shift, from a champion that never read headlines"). Answers are short (11 tokens against 51), so the extra
    # steps cost seconds.
    feedback_repeats: int = setting(
        3, ge=1, le=20, description="Times each feedback row is trained on per retrain epoch."
    )
    # Chosen by bench/tune.py (the recipe study): the low learning rates matter, distillation did not help.
    distill_weight: float = setting(
        0.0, ge=0.0, le=1.0, env="distill_weight",
        description="Share of the champion's own predictions in replayed base rows' targets.",
    )
    warm_start: bool = setting(
        True, env="warm_start", description="Start a retrain from the champion's weights rather than the base encoder."
    )
    # The recipe for a changed taxonomy (retrain.topics).
    imprint_new_topics: bool = setting(
        True, description="Start a topic the champion never predicted from its answers' mean feature (weight "
        "imprinting), not from a neutral row.",
    )
    resolve_split_rows: bool = setting(
        True, description="After a split, train the parent's earlier rows toward the topic a linear model fit on "
        "the answers reads them as, not toward the set of both.",
    )
    read_traffic: bool = setting(
        True, description="When a retrain teaches a topic no base row can be (an added one), also train on the "
        "traffic set's unlabelled items, each toward the topics a linear model fit on the answers reads it as.",
    )
    match_taught_prior: bool = setting(
        True, description="After training, move the bias of a topic no base row can be (an added one) so the model "
        "reads as much unlabelled traffic as that topic as the traffic set's answers name it.",
    )
    balance_taught: bool = setting(
        True, description="Weight the answers of a topic no base row can be (an added one) so its share of a "
        "retrain's training weight is its share of the answers: the replayed base rows never dilute it.",
    )
    # A retrain that teaches a topic (one imprinted, or split rows read) changes more than a retrain that tweaks. On
    # bench/taxonomy.py, after 400 labels, the gentle retrain recipe left the taught topic at recall 0.14 (new) and
    # 0.09 (split); three epochs at the bootstrap's rates reached 0.43 and 0.77 (docs/results/taxonomy.md).
    teach_epochs: float = setting(
        3.0, gt=0.0, le=20.0, description="Training epochs of a retrain that teaches a topic (one the champion never "
        "predicted, or a split's rows).",
    )
    teach_lr_encoder: float = setting(
        TrainConfig.field_default("lr_encoder"), gt=0.0, lt=1.0,
        description="Encoder learning rate of a retrain that teaches a topic (default: the bootstrap's).",
    )
    teach_lr_head: float = setting(
        TrainConfig.field_default("lr_head"), gt=0.0, lt=1.0,
        description="Head learning rate of a retrain that teaches a topic (default: the bootstrap's).",
    )
    holdout_fraction: float = internal(0.25, ge=0.0, le=1.0)  # share of trusted feedback kept out to judge the challenger
    min_feedback: int = setting(
        50, ge=1, description="New trusted answers since the last run before a scheduled retrain (watch)."
    )


class LabelErrorPolicy(Section):
    """The label-error search (`retrain.label_errors`)."""

    # A topic with few labelled rows gets a confident-learning threshold near zero (its mean probability over its
    # rows), so nearly every row would be suggested into it: after adding Health with 2 answers, 75 of 76 candidates
    # were "-> Health" at 0-3%. On AG News rows with Health carved out (python -m bench.label_errors --new-topic,
    # docs/results/label-errors.md "A topic with few answers"): up to 10-12 answers it took up to 88% of the list at
    # 0.08-0.12 right; from 15 on a third of the list or less, 0.37-0.49 right. 20 leaves a margin past 12.
    min_topic_rows: int = setting(
        20, ge=1, description="Labelled rows (base rows and trusted answers) a topic needs before the label-error "
        "search suggests it for other rows or doubts its own.",
    )


class MonitorPolicy(Section):
    """How served traffic is watched (core.evaluation.monitor): when the champion's estimated accuracy on a form
    raises an alert, and whether `watch` retrains on it."""

    # 3 points: on 1,636 validation rows one standard error is 0.6-0.8 points, and a day's estimate from 100 texts
    # moves about 1 point; a drop of 3 is the smallest one that is not the day's noise.
    alert_points: float = setting(
        3.0, gt=0.0, le=100.0,
        description="Alert when a form's estimated accuracy falls this many points below its validation accuracy.",
    )
    min_texts: int = setting(100, ge=1, description="Served texts of a form in the window before it can raise an alert.")
    window_days: int = setting(
        2, ge=1, le=90, description="Days of served traffic (UTC, today included) the alert and the drift read.",
    )
    retrain_on_alert: bool = setting(
        False, description="`watch` starts a retrain when the alert is up, without waiting for new answers.",
    )
