// NewsLoop's page script (web/page/theme.py puts it in <head>): the character counter, the queue's keys.
(() => {
  const visible = (el) => !!el && el.offsetParent !== null;
  const fmt = (n) => n.toLocaleString("en-US");

  function updateCounter(extra) {
    const box = document.querySelector("#news-text textarea");
    const out = document.querySelector("#char-count");
    if (!box || !out) return;
    const max = box.maxLength > 0 ? box.maxLength : 20000;
    const n = box.value.length;
    let text = `${fmt(n)} / ${fmt(max)} characters`;
    let warn = "";
    if (extra) warn = extra;
    else if (n >= max) warn = `Limit reached: anything past ${fmt(max)} characters is not kept.`;
    else if (n >= 0.9 * max) warn = `Close to the ${fmt(max)}-character limit.`;
    const counter = out.querySelector(".count") || out;
    counter.textContent = text;
    const alert = out.querySelector(".warn");
    if (alert && alert.textContent !== warn) alert.textContent = warn;
  }

  document.addEventListener("input", (e) => {
    if (e.target.closest && e.target.closest("#news-text")) updateCounter();
  });
  document.addEventListener("paste", (e) => {
    const box = e.target.closest && e.target.closest("#news-text") && e.target;
    if (!box || !e.clipboardData) return;
    const pasted = e.clipboardData.getData("text").length;
    const kept = box.value.length - (box.selectionEnd - box.selectionStart) + pasted;
    const max = box.maxLength > 0 ? box.maxLength : 20000;
    if (kept > max) {
      const msg = `Your paste made ${fmt(kept)} characters; only the first ${fmt(max)} were kept. ` +
        "Paste the headline and first paragraphs instead.";
      setTimeout(() => updateCounter(msg), 0);
    }
  });

  // The label queue: 1-4 label, S skips, U undoes. Never while typing in a field.
  const KEYS = { "1": "#q-0", "2": "#q-1", "3": "#q-2", "4": "#q-3", s: "#q-skip", u: "#q-undo" };
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    const typing = t && (t.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(t.tagName));
    if (e.key === "Enter" && t && t.closest && t.closest("#queue-buttons")) {
      // Enter on a focused topic button answers, as Space does; a held Enter answers once. The answer then
      // moves focus to the article (below), so a later Enter can never repeat the last label.
      if (e.repeat) e.preventDefault();
      return;
    }
    if (typing) return;
    const target = KEYS[e.key.toLowerCase()];
    const button = target && document.querySelector(target);
    // A disabled button means the last press has not been answered yet (web/page/classify_view.py disables every
    // queue button from a press until the next article is on screen): such presses are dropped, not queued.
    if (!visible(button) || button.disabled) return;
    e.preventDefault();
    if (e.repeat) return; // a held key answers the article on screen once, never the ones after it
    button.click();
  });
  // A press acts only on the article a person has on screen. Dropped, never queued: a press within SETTLE_MS of
  // the previous one or of a new article appearing (a double tap, a held or bouncing key: nobody answers an
  // article they have not seen yet), as well as a press while the last one is unanswered (the buttons are
  // disabled until the next article arrives with its id). Mouse clicks and keys alike; the server, in turn,
  // refuses an answer naming another article than the one it put on this tab's screen.
  const SETTLE_MS = 200;
  let lastPress = -Infinity;
  let lastArticle = -Infinity;
  new MutationObserver((changes) => {
    const inArticle = (m) => (m.target.nodeType === 1 ? m.target : m.target.parentElement)?.closest("#queue-article");
    if (changes.some(inArticle)) lastArticle = performance.now();
  }).observe(document.documentElement, { childList: true, subtree: true, characterData: true });
  document.addEventListener("click", (e) => {
    const button = e.target.closest && e.target.closest("#queue-buttons button, #q-skip, #q-undo");
    if (!button) return;
    const now = performance.now();
    if (now - lastPress < SETTLE_MS || now - lastArticle < SETTLE_MS) {
      e.preventDefault();
      e.stopImmediatePropagation();
      return;
    }
    lastPress = now;
  }, true);
  // After an answer, focus leaves the button (so Enter cannot repeat it) for the article itself.
  document.addEventListener("click", (e) => {
    const button = e.target.closest && e.target.closest("#queue-buttons button");
    if (!button) return;
    setTimeout(() => {
      button.blur();
      const article = document.querySelector("#queue-article article");
      if (article) article.focus({ preventScroll: true });
    }, 0);
  });
})();

// Confirmations are announced to screen readers: every `.live` block is a polite live region.
(() => {
  const mark = () => document.querySelectorAll(".live:not([aria-live])").forEach((el) => {
    el.setAttribute("aria-live", "polite");
    el.setAttribute("role", "status");
  });
  new MutationObserver(mark).observe(document.documentElement, { childList: true, subtree: true });
})();
