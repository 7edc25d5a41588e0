// The label queue's buffer (web/server/theme.py puts this in <head>; the server side is web.page.labelling.BufferedQueue).
// The page holds the next few articles, each under the id the server issued for it. A press (keys 1-9, 0, S, U, or a
// click) shows the next article at once, with no round trip, and the answer goes to the server behind it, with the
// id of the article that was on screen, in order, one sync at a time (the hidden #q-sync event). A press is never
// dropped in silence: it is either sent, or shown at once as not taken (a held key's repeats, a press within
// GUARD_MS of a new article, a press with no article on screen). What is not sent yet is kept and sent again.
(() => {
  const BUFFER = 5; // items the page asks the server to hold for it (web.page.labelling.BUFFER)
  const MAX_OPS = 8; // ops one sync carries (web.page.labelling.MAX_OPS)
  const SLOW_MS = 4000; // a sync taking longer: the page says the connection is slow
  const RESEND_MS = 15000; // a sync with no answer after this long is sent again (the server takes each op once)
  const q = {
    guardMs: 150, // a press this soon after a new article appears is not taken (nobody has read it yet)
    current: null, // {shown, text}: the article on screen
    buffer: [], // the next ones, in order
    outbox: [], // {op, shown, label (a topic's key), name, missing, text}: presses not confirmed yet, oldest first
    inflight: null, // {ops, at}: the sync on its way
    shownAt: -Infinity,
    opened: false,
    empty: false, // the server had nothing more to give
    progress: "",
    message: "",
    sign: "",
    trouble: "", // why sending is behind (slow connection, server refusal), shown with the pending count
    retryAt: 0,
    failed: 0, // answers the server could no longer take (their article is gone from this page)
    log: [], // {shown, status, at}: what each sync said about each op, for tests and the benchmark
  };
  window.newsloopQueue = q;

  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  const md = (s) => esc(s).replace(/\*\*(.+?)\*\*/g, "<strong>$1</strong>").replace(/`(.+?)`/g, "<code>$1</code>");
  const snippet = (text) => {
    const words = text.split(/\s+/).filter(Boolean);
    return "“" + words.slice(0, 8).join(" ") + (words.length > 8 ? "…" : "") + "”";
  };
  // The topics are the buttons the server drew from the taxonomy (web.server.topics.answer_buttons): the i-th
  // button's key is sent, its name shown; none is written here.
  const topicOf = (i) => {
    const button = document.querySelector(`#q-${i}[data-topic]`);
    return button ? { key: button.dataset.topic, name: button.dataset.name } : null;
  };
  const part = (sel) => document.querySelector(sel);

  function renderArticle() {
    const old = part("#queue-article article");
    if (!old) return;
    const shown = q.current ? q.current.shown : "";
    if (old.dataset.shown === shown && old.dataset.state === (q.current ? "item" : q.empty ? "empty" : "wait")) return;
    const article = document.createElement("article");
    article.setAttribute("aria-label", "Article to label");
    article.dataset.shown = shown;
    article.dataset.state = q.current ? "item" : q.empty ? "empty" : "wait";
    article.tabIndex = q.current ? 0 : -1;
    const p = document.createElement("p");
    if (q.current) {
      q.current.text.split("\n").forEach((line, i) => {
        if (i) p.appendChild(document.createElement("br"));
        p.appendChild(document.createTextNode(line));
      });
    } else {
      p.textContent = q.empty ? "No article to label yet: articles come from this site's maintainer (see above)."
        : "Loading the next article…";
    }
    article.appendChild(p);
    const focused = document.activeElement === old;
    old.replaceWith(article);
    if (focused) article.focus({ preventScroll: true });
  }

  function renderText() {
    const set = (sel, html) => {
      const el = part(sel);
      if (el && el.innerHTML !== html) el.innerHTML = html;
    };
    set("#queue-ack .q-msg", md(q.message));
    set("#queue-ack .q-sign", esc(q.sign));
    const waiting = q.outbox.filter((op) => op.op !== "undo").length;
    let state = "";
    if (q.trouble) state = `${q.trouble} ${waiting} answer(s) not sent yet: they are kept and sent again.`;
    else if (waiting > 1) state = `Sending ${waiting} answers…`;
    if (q.failed) state += ` ${q.failed} answer(s) could not be saved.`;
    set("#queue-ack .q-state", esc(state.trim()));
    const progress = part("#queue-progress");
    if (progress) {
      let box = progress.querySelector(".q-progress");
      if (!box) {
        box = document.createElement("p");
        box.className = "q-progress";
        (progress.querySelector(".prose, .html-container") || progress).appendChild(box);
      }
      if (box.innerHTML !== md(q.progress)) box.innerHTML = md(q.progress);
    }
  }

  function render() {
    renderArticle();
    renderText();
  }

  function advance() {
    q.current = q.buffer.shift() || null;
    q.shownAt = performance.now();
    renderArticle();
  }

  // `again`: whether pressing again can help (not when the queue is empty: only the maintainer can fill it).
  function notTaken(why, again = true) {
    q.sign = `Not taken: ${why}` + (again ? " Press again." : "");
    const el = part("#queue-ack .q-sign");
    if (el) {
      el.classList.remove("flash");
      void el.offsetWidth; // restart the flash
      el.classList.add("flash");
    }
    renderText();
  }

  // A press: an answer (a button's position), "none" (no topic fits), "skip" or "undo". Returns whether it was taken.
  function press(what, repeat) {
    if (repeat) {
      notTaken("the key is held down, so only its first press counts.");
      return false;
    }
    if (what === "undo") return undo();
    if (q.outbox.some((op) => op.op === "undo")) {
      notTaken("your undo is still on its way.");
      return false;
    }
    if (!q.current) {
      if (q.empty) notTaken("there is no article to label; articles come from this site's maintainer.", false);
      else notTaken("the next article has not arrived yet.");
      return false;
    }
    if (performance.now() - q.shownAt < q.guardMs) {
      notTaken("the article had only just appeared.");
      return false;
    }
    const topic = what === "skip" || what === "none" ? null : topicOf(what);
    if (typeof what === "number" && !topic) {
      notTaken("no topic has that key.", false);
      return false;
    }
    const item = q.current;
    const label = topic ? topic.key : "";
    // "None of these" takes the missing topic's name typed in its box, and empties the box for the next article.
    const box = part("#q-missing");
    const missing = what === "none" && box ? box.value.trim() : "";
    if (what === "none" && box) box.value = "";
    const name = topic ? topic.name : what === "none" ? "None of these" + (missing ? ` (missing: ${missing})` : "") : "";
    const op = what === "skip" ? "skip" : what === "none" ? "none" : "answer";
    q.outbox.push({ op, shown: item.shown, label, name, missing, text: item.text });
    q.sign = "";
    q.message = what === "skip" ? `Skipping ${snippet(item.text)}…` : `**${name}** for ${snippet(item.text)}: sending…`;
    advance();
    renderText();
    pump();
    return true;
  }

  function undo() {
    const last = q.outbox[q.outbox.length - 1];
    const sending = q.inflight && q.inflight.ops.includes(last);
    if (last && last.op !== "undo" && !sending) {
      // Not sent yet: taken back here, and its article comes back on screen.
      q.outbox.pop();
      if (q.current) q.buffer.unshift(q.current);
      q.current = { shown: last.shown, text: last.text };
      q.shownAt = performance.now();
      q.sign = "";
      q.message = `Undone: ${last.op === "skip" ? "the skip of" : `**${last.name}** for`} ${snippet(last.text)}. Label it again.`;
      render();
      return true;
    }
    if (q.outbox.some((op) => op.op === "undo")) {
      notTaken("your last undo is still on its way.");
      return false;
    }
    q.outbox.push({ op: "undo", shown: "", label: "", text: "" });
    q.sign = "";
    q.message = "Undoing your last queue answer…";
    renderText();
    pump();
    return true;
  }

  function wanted() {
    return q.outbox.length > 0 || (!q.empty && q.buffer.length + (q.current ? 1 : 0) < BUFFER);
  }

  function pump() {
    if (!q.opened || q.inflight || Date.now() < q.retryAt || !wanted()) return;
    const button = part("#q-sync");
    if (!button) return setTimeout(pump, 200);
    q.inflight = { ops: null, at: Date.now() };
    button.click(); // the event's js calls outgoing() for what to send
  }

  // What the sync event sends: the oldest ops, the ids this page still needs held, how many it wants held.
  q.outgoing = () => {
    const ops = q.outbox.slice(0, MAX_OPS);
    if (!q.inflight) q.inflight = { ops, at: Date.now() };
    q.inflight.ops = ops;
    const have = [q.current, ...q.buffer].filter(Boolean).map((item) => item.shown);
    q.outbox.forEach((op) => op.shown && have.push(op.shown));
    return JSON.stringify({ ops: ops.map(({ op, shown, label, missing }) => ({ op, shown, label, missing })), have, want: BUFFER });
  };

  // What the server said (web.page.labelling.BufferedQueue.sync).
  q.incoming = (raw) => {
    const sent = q.inflight;
    q.inflight = null;
    let r;
    try {
      r = JSON.parse(raw);
    } catch (error) {
      r = { error: "The server's answer could not be read.", retry_s: 2 };
    }
    if (!sent || !sent.ops) return pump();
    const now = Date.now();
    q.trouble = "";
    if (r.error) {
      q.trouble = r.error;
      q.retryAt = now + 1000 * (r.retry_s || 3);
      setTimeout(pump, 1000 * (r.retry_s || 3) + 10);
      return renderText();
    }
    let last = null;
    (r.results || []).forEach((result, i) => {
      const op = sent.ops[i];
      if (!op) return;
      q.log.push({ shown: op.shown, op: op.op, label: op.label, status: result.status, at: performance.now() });
      if (result.status === "retry") return;
      const at = q.outbox.indexOf(op);
      if (at >= 0) q.outbox.splice(at, 1);
      if (result.status === "refused") {
        q.buffer.unshift({ shown: op.shown, text: op.text }); // it is still this page's: shown again next
      } else if (result.status === "stale") {
        q.failed += 1;
      } else if (result.status === "undone" && result.item) {
        if (q.current) q.buffer.unshift(q.current);
        q.current = result.item;
        q.shownAt = performance.now();
        renderArticle();
      }
      last = { op, result };
    });
    const known = new Set([q.current, ...q.buffer].filter(Boolean).map((item) => item.shown));
    (r.items || []).forEach((item) => known.has(item.shown) || q.buffer.push(item));
    q.empty = !!r.empty && (r.items || []).length === 0;
    if (r.progress) q.progress = r.progress;
    // The acknowledgement stays on the latest press: a confirmation replaces it only when nothing came after it.
    if (last && (q.outbox.length === 0 || last.result.status === "refused" || last.result.status === "stale")) {
      q.message = last.result.message;
    }
    if (r.retry_s) {
      const held = (r.results || []).find((result) => result.status === "retry");
      q.trouble = held ? held.message : "Too many requests for now.";
      q.retryAt = now + 1000 * r.retry_s;
      setTimeout(pump, 1000 * r.retry_s + 10);
    }
    if (!q.current && q.buffer.length) advance();
    render();
    pump();
  };

  // A sync that takes long: say so; one with no answer at all: send what it carried again.
  setInterval(() => {
    if (!q.inflight) return;
    const age = Date.now() - q.inflight.at;
    if (age > RESEND_MS) {
      q.inflight = null;
      q.trouble = "No answer from the server: trying again.";
      renderText();
      pump();
    } else if (age > SLOW_MS && !q.trouble) {
      q.trouble = "The connection is slow.";
      renderText();
    }
  }, 500);

  q.open = () => {
    q.opened = true;
    q.empty = false;
    render();
    pump();
  };

  // Keys: 1-9 label (the n-th topic button), 0 says none fits, S skips, U undoes. Never while typing in a field, nor
  // with a modifier; but Enter in the missing topic's box is key 0 with the name typed.
  const keyOf = (key) => (/^[1-9]$/.test(key) ? Number(key) - 1 : { 0: "none", s: "skip", u: "undo" }[key]);
  const queueOnScreen = () => {
    const button = part("#q-0");
    return !!button && button.offsetParent !== null;
  };
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || !queueOnScreen()) return;
    const t = e.target;
    if (e.key === "Enter" && t && t.id === "q-missing") {
      e.preventDefault();
      press("none", e.repeat);
      return;
    }
    if (e.key === "Enter" && t && t.closest && t.closest("#queue-buttons, #q-none, #q-skip, #q-undo")) {
      // Enter on a focused button presses it (a click, below); a held Enter presses it once.
      if (e.repeat) {
        e.preventDefault();
        notTaken("the key is held down, so only its first press counts.");
      }
      return;
    }
    const typing = t && (t.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(t.tagName));
    if (typing) return;
    const what = keyOf(e.key.toLowerCase());
    if (what === undefined || (typeof what === "number" && !topicOf(what))) return; // a number no topic has
    e.preventDefault();
    press(what, e.repeat);
  });
  // Clicks on the queue's buttons (and Enter or Space on them) are presses too; they have no server event.
  document.addEventListener("click", (e) => {
    const button = e.target.closest && e.target.closest("#queue-buttons button, #q-none, #q-skip, #q-undo");
    if (!button) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    const id = button.id;
    press({ "q-skip": "skip", "q-undo": "undo", "q-none": "none" }[id] || Number(id.slice(2)), false);
    // Focus leaves the button for the article, so a later Enter can never repeat the last label.
    button.blur();
    const article = part("#queue-article article");
    if (article && article.tabIndex >= 0) article.focus({ preventScroll: true });
  }, true);
  // Gradio may mount the tab's parts again (a tab switch): what the page holds is drawn again.
  new MutationObserver(() => {
    const article = part("#queue-article article");
    if (q.opened && article && article.dataset.shown !== (q.current ? q.current.shown : "")) render();
    const sync = part("#q-sync");
    if (sync && sync.tabIndex !== -1) {
      sync.tabIndex = -1;
      sync.setAttribute("aria-hidden", "true");
    }
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
