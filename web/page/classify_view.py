"""The Classify and Label queue tabs: layout and the page-side wiring of their buttons to `NewsLoopActions`."""

from __future__ import annotations

import html
import json
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr

from web.page.actions import NewsLoopActions
from web.page.answer_rules import NONE, NONE_WORDS, RIGHT
from web.page.guidelines import guidelines_panel
from web.server.events import PRIVATE
from web.server.topics import MAX_KEYS, Offered, answer_buttons

# The answer buttons are drawn from the taxonomy on each page load (web.server.topics.answer_buttons); their state
# (which one is chosen, whether they can be pressed) is web/page/answers.js's: these call it in the browser.
# {}: an empty gr.Label; every correction shown again (disabled) while no result is on screen.
CLEAR = ("() => { window.newsloopAnswers.set(null, false); window.newsloopAnswers.predicted(null); "
         "return ['', {}, '']; }")
# Answerable only with an id; the correction naming the model's own answer is not offered (it would say "Right").
READY = ("(shown, label) => { window.newsloopAnswers.set(null, !!shown); "
         "window.newsloopAnswers.predicted(shown && label ? label.label : null); return ['']; }")
LOCK = "() => { window.newsloopAnswers.set(null, false); return []; }"
UNMARK = "() => { window.newsloopAnswers.set(null, null); return []; }"


MISSING_MAX = 40  # the longest missing topic's name (core.taxonomy.MAX_NAME_CHARS; the store checks it)


def none_box(prefix: str) -> str:
    """The "None of these" button's companion: a box for the missing topic's name, optional."""
    return (f'<input type="text" id="{prefix}missing" class="missing" maxlength="{MISSING_MAX}" '
            f'placeholder="Which topic is missing? (optional)" aria-label="Which topic is missing? (optional)">')


def columns(buttons: int) -> int:
    """How many columns a grid of topic buttons has: rows as full as they can be, none with a lone button (4: 4 or
    2x2 on a phone, 5: 3+2, 7: 4+3, 9: 3x3), at most 4 (a phone's stylesheet makes that 2)."""
    rows = max(1, math.ceil(buttons / 4))
    return max(1, math.ceil(buttons / rows))


def topic_grid(buttons: str, count: int) -> str:
    """Topic buttons in a grid of equal cells (equal heights, whatever each name's length)."""
    return f'<div class="topic-grid cols-{columns(count)}">{buttons}</div>'


def classify_buttons(offered: tuple[Offered, ...]) -> str:
    """The Classify tab's answer buttons: Right, then one per topic, then "None of these" with the box for the
    missing topic's name (the buttons disabled until a result is on screen). Once a result is on screen the
    correction naming the model's own topic is hidden (answers.js), and the grid holds one fewer."""
    right = (f'<button type="button" id="fb-right" class="topic-btn secondary" data-topic="{RIGHT}" disabled>'
             f'<span class="mark"></span><span class="t">Right</span></button>')
    topics = answer_buttons(offered, prefix="fb-", text="It's actually {name}", disabled=True)
    none = (f'<button type="button" id="fb-none" class="topic-btn secondary" data-topic="{NONE}" disabled>'
            f'<span class="mark"></span><span class="t">{NONE_WORDS}</span></button>')
    return (f'<div class="fb-right">{right}</div><div class="fb-topics">{topic_grid(topics, len(offered))}</div>'
            f'<div class="fb-none">{none}{none_box("fb-")}</div>')


def build_classify(actions: NewsLoopActions, examples: Sequence[str]) -> gr.HTML:
    """The Classify tab: text, counter, result, one-click answer, undo, and `examples` (the data's, one per topic:
    `core.samples`). Returns the answer buttons' place, which the page fills from the taxonomy on each load
    (`topic_parts`)."""
    limit = actions.limits.max_input_chars
    with gr.Tab("Classify", id="classify"), gr.Row(elem_id="classify-row"):
        with gr.Column(scale=3, elem_id="classify-input"):
            text = gr.Textbox(
                label="News text", lines=7, max_length=limit,
                placeholder="Paste a headline and/or the article body", elem_id="news-text",
            )
            gr.HTML(f'<span class="count">0 / {limit:,} characters</span> <span class="warn" role="alert"></span>',
                    elem_id="char-count")
            classify_btn = gr.Button("Classify", variant="primary", elem_id="classify-btn")
            gr.HTML('<p class="kbd-hint"><kbd>Shift</kbd>+<kbd>Enter</kbd> classifies; <kbd>Enter</kbd> starts a '
                    "new line.</p>", elem_id="classify-hint")
            if examples:
                with gr.Column(elem_id="classify-examples"):
                    gr.Examples(list(examples), inputs=text, label="Examples (one per topic)")
            guidelines_panel(actions.guidelines if actions.store else None, "classify-guidelines")
        with gr.Column(scale=2, elem_id="classify-result"):
            label = gr.Label(label="Topic", elem_id="topic-label")  # every topic the model has
            info = gr.Markdown(elem_id="classify-info")
            # The server's id of the prediction on screen: every answer sends it back with the box's text.
            shown = gr.Textbox(visible=False, elem_id="prediction-id")
            gr.Markdown("**Is this right?**")
            # The taxonomy's topics, drawn on each page load: a topic added since is offered after a refresh.
            buttons = gr.HTML(elem_id="fb-buttons")
            # answers.js clicks this hidden button with the topic pressed; it is the answers' one server event.
            send = gr.Button("send", visible="hidden", elem_id="fb-send")
            chosen = gr.Textbox(visible=False)
            state = gr.Textbox(visible=False)
            ack = gr.Markdown(elem_id="feedback-ack", container=True, elem_classes=["live"])
            undo_btn = gr.Button("Undo my last answer on this tab", size="sm", elem_id="fb-undo")

    # Once the box no longer holds the classified text (an edit, an example, an empty box), or a new result
    # is on its way, the result on screen cannot be answered: cleared at once in the browser. The server
    # refuses such an answer anyway (web.page.actions: the id and the text must both match).
    text.change(None, js=CLEAR, outputs=[shown, label, info], **PRIVATE)
    for trigger, api in ((classify_btn.click, {"api_name": "classify"}), (text.submit, PRIVATE)):
        trigger(None, js=LOCK, **PRIVATE)
        trigger(actions.classify, inputs=text, outputs=[label, info, shown], **api).then(
            None, inputs=[shown, label], js=READY, outputs=[ack], **PRIVATE)
    # An answer's message is its announcement (a live region): no progress, which screen readers would read too.
    send.click(_answer(actions), inputs=[chosen, shown, text], outputs=[ack, label, shown, state],
               js="(c, s, t) => [window.newsloopAnswers.next(), s, t]", show_progress="hidden", **PRIVATE).then(
        None, inputs=state, js="(s) => { window.newsloopAnswers.apply(s); return []; }", **PRIVATE)
    undo_btn.click(actions.undo, outputs=ack, api_name="undo", show_progress="hidden").then(
        None, js=UNMARK, **PRIVATE)
    return buttons


def topic_parts(actions: NewsLoopActions) -> tuple[str, str, str]:
    """What the page draws from the taxonomy as it loads: Classify's answer buttons, the queue's key hint and its
    buttons (one read of the taxonomy for all three)."""
    taxonomy = actions.topics.taxonomy()
    mismatch = actions.topics.mismatch(taxonomy)
    if mismatch:  # never buttons for topics the model cannot answer: the sentence, with its fix, instead
        said = f'<p class="topics-mismatch" role="alert">{html.escape(mismatch)}</p>'
        return said, said, ""
    offered = actions.topics.offered(taxonomy)
    return (classify_buttons(offered), queue_hint(len(offered)),
            topic_grid(answer_buttons(offered, prefix="q-", text="{name}", numbered=True), len(offered)))


def _answer(actions: NewsLoopActions) -> Callable[..., list[Any]]:
    """The answer buttons' handler: saves the topic pressed for the prediction on screen; the buttons' new state
    (JSON: the chosen topic, whether they stay live) goes to answers.js."""

    def handler(choice: str, shown: str, text: str, request: gr.Request,
                profile: gr.OAuthProfile | None) -> list[Any]:
        outcome = actions.answer(choice, shown, text, request, profile)
        if outcome.stale:  # not the result on screen (any more): clear it, as an edit does
            return [outcome.message, None, "", json.dumps({"chosen": None, "live": False})]
        chosen = NONE if choice.startswith(NONE) else choice  # the button to mark: the name typed is not its topic
        return [outcome.message, gr.skip(), gr.skip(),
                json.dumps({"chosen": chosen if outcome.saved else None, "live": None})]

    return handler


def article_html(text: str | None) -> str:
    """The queue article as a focusable, labelled region (escaped: articles are data, never markup)."""
    if not text:
        return '<article tabindex="-1" aria-label="Article to label"><p>No article to label yet.</p></article>'
    return (f'<article tabindex="0" aria-label="Article to label">'
            f'<p>{html.escape(text).replace(chr(10), "<br>")}</p></article>')


def queue_hint(topics: int) -> str:
    """The queue's key hint, for as many topics as the taxonomy has (keys 1-9 at most)."""
    keys = "<kbd>1</kbd>" if topics == 1 else f"<kbd>1</kbd>-<kbd>{min(topics, MAX_KEYS)}</kbd>"
    more = f" (the first {MAX_KEYS}; click the others)" if topics > MAX_KEYS else ""
    return (f'<p class="kbd-hint">Articles the model is least sure about come first. Keys: {keys} choose a '
            f"topic{more}, <kbd>0</kbd> says none fits (type the missing topic first if you like, then Enter), "
            "<kbd>S</kbd> skips, <kbd>U</kbd> undoes your last queue answer.</p>")


def build_queue(actions: NewsLoopActions) -> tuple[gr.HTML, gr.HTML]:
    """The Label queue tab: the article loads when the tab opens; keys 1-9 (one per topic, in the taxonomy's
    order), S and U work without a mouse.

    web/page/queue.js owns the article, the progress and the acknowledgement: it holds the next few items
    (`web.page.labelling.BufferedQueue`), shows the next one at once on a press and sends the answers behind, in
    order, through the hidden sync event (`build_queue_sync`). The buttons have no server event of their own."""
    with gr.Tab("Label queue", id="queue") as tab:
        hint = gr.HTML(elem_id="queue-hint")  # drawn on each page load (`topic_parts`), as the buttons are
        gr.HTML('<p class="q-msg"></p><p class="q-sign" role="alert"></p><p class="q-state"></p>',
                elem_id="queue-ack", elem_classes=["live"])
        gr.HTML("", elem_id="queue-progress")
        gr.HTML(article_html(""), elem_id="queue-article")
        # The taxonomy's topics, drawn on each page load; queue.js reads each button's topic from it.
        buttons = gr.HTML(elem_id="queue-buttons")
        gr.HTML(f'<button type="button" id="q-none" class="topic-btn secondary"><span class="t">0 · {NONE_WORDS}'
                f"</span></button>{none_box('q-')}", elem_id="queue-none")
        with gr.Row():
            gr.Button("S · Skip", size="sm", elem_id="q-skip")
            gr.Button("U · Undo last queue answer", size="sm", elem_id="q-undo")
        guidelines_panel(actions.guidelines if actions.store else None, "queue-guidelines")
    tab.select(None, js="() => { window.newsloopQueue && window.newsloopQueue.open(); return []; }", **PRIVATE)
    return hint, buttons


def build_queue_sync(actions: NewsLoopActions) -> None:
    """The queue tab's one server event (outside `gr.Tabs`, so it is there whichever tab is open): queue.js clicks
    the hidden #q-sync button; the event's `js` hands it the ops to send (queue.js's outbox), the server's answer
    goes back to queue.js. No progress display: Gradio's queue timer never shows in the acknowledgement."""
    sent, back = gr.Textbox(visible=False), gr.Textbox(visible=False)
    button = gr.Button("sync", visible="hidden", elem_id="q-sync")
    buffered = actions.buffered

    def sync(payload: str, request: gr.Request, profile: gr.OAuthProfile | None) -> str:
        try:
            return json.dumps(buffered.sync(payload, request, profile))
        except Exception:  # never an error toast: queue.js keeps what it sent and tries again
            logging.getLogger(__name__).exception("queue sync failed")
            return json.dumps({"results": [], "items": [], "error": "The server failed: trying again.",
                               "retry_s": 2.0, "progress": "", "empty": False})

    button.click(sync, inputs=sent, outputs=back, js="() => [window.newsloopQueue.outgoing()]",
                 show_progress="hidden", queue=True, **PRIVATE).then(
        None, inputs=back, js="(r) => { window.newsloopQueue.incoming(r); return []; }", show_progress="hidden",
        **PRIVATE)


def build_api_events(actions: NewsLoopActions) -> None:
    """API-only events (no button of their own) for scripts: answer the prediction or the queue item shown.

    Each answer names what it answers by the id the server gave it: `/classify` returns a prediction's id
    (its third output), the queue events return the shown article's id (their fourth). Called outside
    `gr.Tabs`: a `gr.api` inside it would be rendered as an extra tab.
    """
    labelling = actions.labelling

    def queue_next(request: gr.Request, profile: gr.OAuthProfile | None) -> tuple[str, str, str, str]:
        """The next article to label: (text, progress, message, shown id)."""
        return labelling.next(request, profile).as_tuple()

    def queue_answer(
        label: str, shown: str, request: gr.Request, profile: gr.OAuthProfile | None
    ) -> tuple[str, str, str, str]:
        """Label the article whose id is `shown`; (text, progress, message, shown id) of the next one."""
        return labelling.answer(label, shown, request, profile).as_tuple()

    def queue_skip(shown: str, request: gr.Request, profile: gr.OAuthProfile | None) -> tuple[str, str, str, str]:
        """Skip the article whose id is `shown`; (text, progress, message, shown id) of the next one."""
        return labelling.skip(shown, request, profile).as_tuple()

    def queue_undo(request: gr.Request, profile: gr.OAuthProfile | None) -> tuple[str, str, str, str]:
        """Withdraw the last queue answer; (text, progress, message, shown id) of that article, shown again."""
        return labelling.undo(request, profile).as_tuple()

    gr.api(actions.feedback, api_name="feedback")
    for fn in (queue_next, queue_answer, queue_skip, queue_undo):
        gr.api(fn, api_name=fn.__name__)
