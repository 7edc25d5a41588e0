// NewsLoop's page script (web/server/theme.py puts it in <head>): the character counter (live regions: web/server/live.js).
(() => {
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

  // The label queue's keys, clicks and buffer: web/page/queue.js.
})();
