// The admin lists by keyboard: arrows or J/K move between rows, Space ticks the focused one (the browser's own), and a
// letter presses a button for the ticked rows. Answers (web/admin/review_view.py): A accepts, R rejects. Possible label
// errors (web/admin/label_errors_view.py): L relabels, K keeps, X excludes; in their decisions, U undoes.
(() => {
  const LISTS = {
    "#review-list": { a: "#review-accept", r: "#review-reject" },
    "#label-errors-list": { l: "#label-errors-relabel", k: "#label-errors-keep", x: "#label-errors-exclude" },
    "#label-fixes-list": { u: "#label-fixes-undo" },
  };
  document.addEventListener("keydown", (e) => {
    const box = e.target;
    if (!box || !box.closest || e.ctrlKey || e.metaKey || e.altKey || box.type !== "checkbox") return;
    const name = Object.keys(LISTS).find((selector) => box.closest(selector));
    if (!name) return;
    const list = box.closest(name);
    const boxes = [...list.querySelectorAll('input[type="checkbox"]')];
    const at = boxes.indexOf(box);
    const key = e.key.toLowerCase();
    // K keeps in the label-error list, so there only the arrows move.
    const moves = name === "#label-errors-list" ? { arrowdown: 1, arrowup: -1 } : { arrowdown: 1, j: 1, arrowup: -1, k: -1 };
    const step = moves[key];
    if (step) {
      const next = boxes[at + step];
      if (next) next.focus();
      e.preventDefault();
      return;
    }
    const button = LISTS[name][key];
    if (button && !e.shiftKey) {
      const target = document.querySelector(button);
      if (target && !target.disabled) target.click();
      e.preventDefault();
    }
  });
})();
