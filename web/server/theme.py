"""Both pages' look: a high-contrast theme, layout CSS (phone order, 44 px targets) and the scripts every page has.

`web.server.asgi` passes them to `gr.mount_gradio_app`, which sets a mounted page's theme, CSS and head; each page
names its own scripts besides (`web.page.tabs.SCRIPTS`, `web.admin.page.SCRIPTS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import gradio as gr

# Every text colour below is >= 4.5:1 on its background (WCAG AA): white on blue-700 is 6.7:1, gray-600
# on white 7.6:1, gray-500 placeholders 4.8:1. Gradio's default orange gave white text 2.8:1.
THEME = gr.themes.Default(primary_hue="blue", neutral_hue="gray").set(
    button_primary_background_fill="*primary_700",
    button_primary_background_fill_hover="*primary_800",
    button_primary_text_color="white",
    button_primary_border_color="*primary_700",
    button_secondary_text_color="*neutral_900",
    color_accent="*primary_700",
    color_accent_soft="*primary_50",
    body_text_color_subdued="*neutral_600",
    input_placeholder_color="*neutral_500",
    block_info_text_color="*neutral_600",
    link_text_color="*primary_700",
    link_text_color_visited="*primary_800",
    checkbox_label_text_color_selected="*neutral_900",
    # "Stop" buttons (Reject, Roll back): white on red-700 is 6.5:1; Gradio's red-500 gave 3.8:1.
    button_cancel_background_fill="#b91c1c",
    button_cancel_background_fill_hover="#991b1b",
    button_cancel_border_color="#b91c1c",
    button_cancel_text_color="white",
    button_cancel_text_color_hover="white",
)

CSS = """
.gradio-container button { min-height: 44px; }
/* The topics' answer buttons, drawn from the taxonomy as HTML (web.server.topics): Gradio's button look. */
.topic-btn { flex: 1 1 120px; padding: var(--button-large-padding); border-radius: var(--button-large-radius);
    border: 1px solid var(--button-secondary-border-color); background: var(--button-secondary-background-fill);
    color: var(--button-secondary-text-color); font-weight: var(--button-large-text-weight); cursor: pointer; }
.topic-btn:hover:not(:disabled) { background: var(--button-secondary-background-fill-hover); }
.topic-btn.primary { background: var(--button-primary-background-fill); color: var(--button-primary-text-color);
    border-color: var(--button-primary-border-color); }
.topic-btn:disabled { cursor: not-allowed; opacity: 0.6; }
.topic-btn:focus-visible { outline: 3px solid var(--primary-700); }
.topic-btn .learning { display: block; font-weight: normal; font-size: 0.8em; }
#fb-buttons .fb-right { display: flex; flex-wrap: wrap; gap: 8px; }
#fb-buttons .prose, #queue-buttons .prose { max-width: none; width: 100%; }
/* Topic buttons in balanced rows of equal cells (web.page.classify_view.columns): no lone button on a row of its own,
   every button as tall as the tallest. */
.topic-grid { display: grid; gap: 8px; grid-auto-rows: 1fr; width: 100%; }
.topic-grid.cols-1 { grid-template-columns: minmax(0, 1fr); }
.topic-grid.cols-2 { grid-template-columns: repeat(2, minmax(0, 1fr)); }
.topic-grid.cols-3 { grid-template-columns: repeat(3, minmax(0, 1fr)); }
.topic-grid.cols-4 { grid-template-columns: repeat(4, minmax(0, 1fr)); }
.topic-grid .topic-btn { margin: 0; }  /* not the prose's spacing below every button but the last: uneven cells */
.topic-grid .topic-btn[hidden] { display: none; }
#fb-buttons .fb-right { margin-bottom: 8px; }
#fb-buttons .fb-none, #queue-none .html-container, #queue-none .prose { display: flex; flex-wrap: wrap; gap: 8px;
    margin-top: 8px; align-items: center; }
input.missing { padding: 6px 8px; border: 1px solid var(--border-color-primary); border-radius: 6px; min-width: 16em; }

.gradio-container [role="tab"][aria-selected="true"] { color: var(--primary-700); }
footer, footer a, footer button { color: var(--neutral-700) !important; }
.live, .live * { overflow: visible !important; max-height: none !important; }
#char-count { font-size: 0.9em; color: var(--neutral-700); }
#char-count .warn { color: #b91c1c; font-weight: 600; }
#queue-article article { font-size: 1.1em; line-height: 1.5; padding: 12px; border: 1px solid var(--neutral-300);
    border-radius: 8px; }
#queue-article article:focus { outline: 3px solid var(--primary-700); }
#queue-ack p { margin: 0 0 4px 0; }
#queue-ack .q-sign:not(:empty) { color: #b91c1c; font-weight: 700; border-left: 4px solid #b91c1c; padding-left: 8px; }
#queue-ack .q-sign.flash { animation: q-flash 0.6s ease-out; }
@keyframes q-flash { from { background: #fee2e2; } to { background: transparent; } }
#queue-ack .q-state { color: var(--neutral-700); }
.kbd-hint kbd { border: 1px solid var(--neutral-400); border-radius: 4px; padding: 0 4px; font-family: monospace; }
.tile-row { display: flex; flex-wrap: wrap; gap: 12px; }
.tile { flex: 1 1 140px; border: 1px solid var(--neutral-300); border-radius: 8px; padding: 10px 12px; }
.tile .n { font-size: 1.6em; font-weight: 700; color: var(--neutral-900); }
.tile .what { color: var(--neutral-700); }
/* The admin review list: every answer on its own full-width line, its text in full; the list scrolls. */
#review-list .wrap, #label-errors-list .wrap, #label-fixes-list .wrap { flex-direction: column; flex-wrap: nowrap; gap: 6px; max-height: 60vh; overflow-y: auto; }
#review-list label, #label-errors-list label, #label-fixes-list label { width: 100%; align-items: flex-start; }
#review-list label span, #label-errors-list label span, #label-fixes-list label span { white-space: pre-line; line-height: 1.45; }
.disagreement { border: 1px solid var(--neutral-300); border-radius: 8px; padding: 8px 12px; gap: 4px; }
.disagreement p { margin: 0 0 4px 0; }
.guidelines .prose { font-size: 0.95em; }
/* The numbers panel (gr.JSON): Gradio's syntax colours are 2-3:1 on white; these are all >= 7:1. */
.gradio-container .json-node { --text-color: #9a3412; --string-color: #9a3412; --number-color: #1e40af;
    --bracket-color: #115e59; --square-bracket-color: #9f1239; --punctuation-color: #374151;
    --line-number-color: #4b5563; }
/* Keyboard hints mean nothing on a touch screen. */
@media (hover: none) and (pointer: coarse) { .kbd-hint { display: none; } }
/* On a phone the result and the answer buttons come right under Classify; the examples go last. */
@media (max-width: 700px) {
  .topic-grid.cols-3, .topic-grid.cols-4 { grid-template-columns: repeat(2, minmax(0, 1fr)); }
  #classify-row { flex-direction: column; }
  #classify-input { display: contents; }
  #news-text { order: 1; } #char-count { order: 2; } #classify-btn { order: 3; } #classify-hint { order: 4; }
  #classify-result { order: 5; } #classify-examples { order: 6; } #classify-guidelines { order: 7; }
}
"""


# Every page's scripts, beside this module: the anti-forgery header (forms.js) and polite live regions (live.js).
SHARED_SCRIPTS = (Path(__file__).with_name("forms.js"), Path(__file__).with_name("live.js"))


def head_html(scripts: Sequence[Path] = ()) -> str:
    """A page's <head> scripts: the shared ones (SHARED_SCRIPTS), then the page's own `scripts`."""
    return "".join("<script>\n" + path.read_text(encoding="utf-8") + "\n</script>"
                   for path in (*SHARED_SCRIPTS, *scripts))
