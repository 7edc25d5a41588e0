// NewsLoop's layout script (web/server/theme.py puts it in <head>): a phone scrolls the Classify result into view, and
// an example that fills the text box updates the character counter (web/page/keys.js keeps the counter on input).
(() => {
  const narrow = () => window.matchMedia("(max-width: 700px)").matches;
  const still = () => window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  let waiting = false; // a Classify was asked for and its result has not been shown yet

  document.addEventListener("click", (e) => {
    if (e.target.closest && e.target.closest("#classify-btn")) waiting = true;
    const example = e.target.closest && e.target.closest("#classify-examples");
    if (example) watchBox();
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && e.shiftKey && e.target.closest && e.target.closest("#news-text")) waiting = true;
  });

  // After Classify, on a phone the result sits below the box: bring the topic and the answer buttons into view.
  new MutationObserver(() => {
    const info = document.querySelector("#classify-info");
    if (!waiting || !info || !info.innerText.trim() || !narrow()) return;
    waiting = false;
    const result = document.querySelector("#classify-result");
    if (result) result.scrollIntoView({ behavior: still() ? "auto" : "smooth", block: "start" });
  }).observe(document.documentElement, { childList: true, subtree: true, characterData: true });

  // An example sets the box's value without an input event: tell the counter once the value changed.
  function watchBox() {
    const box = document.querySelector("#news-text textarea");
    if (!box) return;
    const before = box.value;
    let tries = 0;
    const timer = setInterval(() => {
      tries += 1;
      if (box.value !== before || tries > 40) {
        clearInterval(timer);
        box.dispatchEvent(new Event("input", { bubbles: true }));
      }
    }, 50);
  }
})();

// Gradio marks an empty Label or Plot with a <div aria-label="Empty value"> and no role, which ARIA forbids
// (axe: aria-prohibited-attr). Giving it the role of the icon it shows makes the label valid.
(() => {
  const fix = () => document.querySelectorAll(".empty[aria-label]:not([role])").forEach((el) => {
    el.setAttribute("role", "img");
  });
  new MutationObserver(fix).observe(document.documentElement, { childList: true, subtree: true });
})();
