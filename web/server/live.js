// Every page (web/server/theme.py puts this in <head>).
// Confirmations are announced to screen readers: every `.live` block is a polite live region.
(() => {
  const mark = () => document.querySelectorAll(".live:not([aria-live])").forEach((el) => {
    el.setAttribute("aria-live", "polite");
    el.setAttribute("role", "status");
  });
  new MutationObserver(mark).observe(document.documentElement, { childList: true, subtree: true });
})();
