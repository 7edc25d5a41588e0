// The Classify tab's answer buttons (web/server/theme.py puts this in <head>). The server draws them from the
// taxonomy on each page load (web.page.classify_view.classify_buttons): each names its topic in data-topic, and
// nothing here knows any topic. A press queues its topic and clicks the hidden #fb-send, whose event takes the
// oldest queued topic (`next`) with the prediction's id and the box's text; the server's answer says which button
// to mark (`apply`).
(() => {
  const a = { pressed: [] };
  window.newsloopAnswers = a;
  const buttons = () => Array.from(document.querySelectorAll("#fb-buttons button[data-topic]"));

  // Mark `chosen` (a topic, or null for none); `live`: whether they can be pressed (null: as they are).
  a.set = (chosen, live) => {
    buttons().forEach((button) => {
      const on = chosen !== null && button.dataset.topic === chosen;
      button.classList.toggle("primary", on);
      button.classList.toggle("secondary", !on);
      const mark = button.querySelector(".mark");
      if (mark) mark.textContent = on ? "✓ " : "";
      if (live !== null && live !== undefined) button.disabled = !live;
    });
  };
  a.apply = (raw) => {
    try {
      const state = JSON.parse(raw);
      a.set(state.chosen === undefined ? null : state.chosen, state.live === undefined ? null : state.live);
    } catch (error) {
      // nothing to apply: the buttons stay as they are
    }
  };
  a.next = () => a.pressed.shift() || "";
  // Hide the correction that names the model's own answer (`name`: a topic's name, as the result shows it; null:
  // show them all), and lay the rest out in balanced rows (web.page.classify_view.columns, in the browser).
  a.predicted = (name) => {
    const grid = document.querySelector("#fb-buttons .topic-grid");
    if (!grid) return;
    let shown = 0;
    grid.querySelectorAll("button[data-topic]").forEach((button) => {
      button.hidden = name !== null && name !== undefined && button.dataset.name === name;
      if (!button.hidden) shown += 1;
    });
    const rows = Math.max(1, Math.ceil(shown / 4));
    grid.className = grid.className.replace(/cols-\d+/, `cols-${Math.max(1, Math.ceil(shown / rows))}`);
  };

  document.addEventListener("click", (e) => {
    const button = e.target.closest && e.target.closest("#fb-buttons button[data-topic]");
    if (!button || button.disabled) return;
    e.preventDefault();
    const send = document.querySelector("#fb-send");
    if (!send) return;
    // "None of these" carries the missing topic's name typed beside it (web.page.answer_rules.NONE).
    const box = document.querySelector("#fb-missing");
    const none = button.id === "fb-none";
    a.pressed.push(none ? button.dataset.topic + (box ? box.value : "") : button.dataset.topic);
    if (none && box) box.value = "";
    send.click();
  });
  // The hidden sender is never a tab stop.
  new MutationObserver(() => {
    const send = document.querySelector("#fb-send");
    if (send && send.tabIndex !== -1) {
      send.tabIndex = -1;
      send.setAttribute("aria-hidden", "true");
    }
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
