// The admin review list by keyboard (web/admin/review_view.py): arrows or J/K move between answers, Space ticks the
// focused one (the browser's own), A accepts the ticked answers and R rejects them.
(() => {
  document.addEventListener("keydown", (e) => {
    const box = e.target;
    const list = box && box.closest && box.closest("#review-list");
    if (!list || e.ctrlKey || e.metaKey || e.altKey || box.type !== "checkbox") return;
    const boxes = [...list.querySelectorAll('input[type="checkbox"]')];
    const at = boxes.indexOf(box);
    const key = e.key.toLowerCase();
    const step = { arrowdown: 1, j: 1, arrowup: -1, k: -1 }[key];
    if (step) {
      const next = boxes[at + step];
      if (next) next.focus();
      e.preventDefault();
      return;
    }
    const button = { a: "#review-accept", r: "#review-reject" }[key];
    if (button && !e.shiftKey) {
      const target = document.querySelector(button);
      if (target && !target.disabled) target.click();
      e.preventDefault();
    }
  });
})();
