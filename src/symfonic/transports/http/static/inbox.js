// The inbox's little script. Every form works without it; it only makes the page nicer to use.
(() => {
  "use strict";

  // Sign in from an inbox link (/inbox#key=sfk_...): the fragment never reaches the server,
  // and it is wiped from the address bar before anything else happens.
  const login = document.getElementById("login");
  if (location.hash.startsWith("#key=")) {
    const key = decodeURIComponent(location.hash.slice(5));
    history.replaceState(null, "", location.pathname + location.search);
    if (login) {
      login.elements.key.value = key;
      login.submit();
    }
  }

  // An approval's form shows only what the chosen decision needs. A hidden fieldset is also
  // disabled, so its required fields neither block the form nor get sent. No decision comes
  // chosen, and Send stays disabled until one is: a stray click or Enter approves nothing.
  function sync(form) {
    const choice = form.querySelector('input[name="decision"]:checked');
    const decision = choice ? choice.value : "";
    for (const part of form.querySelectorAll(".when-reject")) part.hidden = decision !== "reject";
    for (const part of form.querySelectorAll(".when-edit")) {
      part.hidden = decision !== "edit";
      part.disabled = decision !== "edit";
    }
    for (const part of form.querySelectorAll(".when-undecided")) part.hidden = decision !== "";
    if (form.dataset.sent) return;
    for (const send of form.querySelectorAll("button.send")) send.disabled = decision === "";
  }

  function wire(root) {
    for (const form of root.querySelectorAll("form.purpose-approval")) {
      sync(form);
      form.addEventListener("change", () => sync(form));
    }
    for (const form of root.querySelectorAll("form.answer, form.start-run")) {
      form.addEventListener("input", () => { form.dataset.dirty = "1"; });
      form.addEventListener("submit", () => {
        form.dataset.sent = "1";
        // After this tick, so the clicked button's own name and value are still sent.
        setTimeout(() => form.querySelectorAll("button").forEach((b) => { b.disabled = true; }), 0);
      });
    }
  }
  wire(document);

  // Keep the page live: /inbox/events (Server-Sent Events) says when a pause of this tenant is
  // stored or leaves the list (answered in another tab, by someone else, expired, revoked). The
  // server renders every card (escaped); this script only moves them into place.
  const pending = document.getElementById("pending");
  // The list this page shows: what is waiting for the signed-in person, what they hold, or every
  // pending pause.
  const view = pending ? pending.dataset.view || "mine" : "mine";
  const query = view === "mine" ? "" : `?view=${encodeURIComponent(view)}`;
  const listing = `/inbox${query}`;
  const parse = (html) => new DOMParser().parseFromString(html, "text/html").body.firstElementChild;
  const cardOf = (id) => pending && pending.querySelector(`article.pause[data-pause-id="${CSS.escape(id)}"]`);
  const busy = (card) => card.querySelector("form[data-dirty], form[data-sent]") || card.contains(document.activeElement);

  function recount() {
    const count = pending.querySelectorAll('article.pause[data-status="outstanding"]').length;
    pending.dataset.count = String(count);
    const badge = document.querySelector("h1 .count");
    if (badge) badge.textContent = String(count);
    const empty = pending.querySelector(":scope > .empty");
    if (count && empty) empty.remove();
    if (!count && !empty && !pending.querySelector("article.pause")) {
      const note = document.createElement("p");
      note.className = "empty";
      note.textContent = "Nothing is waiting for an answer.";
      pending.prepend(note);
    }
  }

  function added(data) {
    if (cardOf(data.id)) return;
    const card = document.importNode(parse(data.html), true);
    card.classList.add("arrived");
    const more = pending.querySelector(":scope > .more");
    pending.insertBefore(card, more);
    wire(card);
    recount();
  }

  function gone(data) {
    const card = cardOf(data.id);
    if (card) {
      if (busy(card) && data.card) {
        // Someone answered what this person is answering: show them what was applied instead.
        const now = document.importNode(parse(data.card), true);
        now.classList.add("answered-elsewhere");
        const note = document.createElement("p");
        note.className = "conflict";
        note.setAttribute("role", "alert");
        note.textContent = data.status === "outstanding"
          ? `${data.assignee || "Someone else"} took this pause for review while you were ` +
            "answering it; your answer was not sent."
          : "This pause was answered elsewhere while you were answering it; " +
            "your answer was not sent. What was applied:";
        (now.querySelector(".decision, .outcome") || now.lastElementChild).before(note);
        card.replaceWith(now);
      } else {
        card.remove();
      }
      recount();
    }
    if (data.row) {
      const history = document.getElementById("history");
      if (!history || history.querySelector(`[data-token="${CSS.escape(data.token)}"]`)) return;
      let list = history.querySelector("ol.decisions");
      if (!list) {
        list = document.createElement("ol");
        list.className = "decisions";
        history.querySelector(".empty")?.replaceWith(list);
      }
      list.prepend(document.importNode(parse(`<ol>${data.row}</ol>`).firstElementChild, true));
    }
  }

  async function reread() {
    // The page was rendered before the stream opened and missed something: read it again.
    const response = await fetch(listing, { credentials: "same-origin" });
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    for (const card of fresh.querySelectorAll("#pending article.pause")) {
      if (!cardOf(card.dataset.pauseId)) added({ id: card.dataset.pauseId, html: card.outerHTML });
    }
  }

  // Only the first page is live: the stream follows the first page's worth of pauses.
  if (pending && window.EventSource && !new URLSearchParams(location.search).has("after")) {
    const source = new EventSource(`/inbox/events${query}`);
    const on = (name, handle) => source.addEventListener(name, (event) => handle(JSON.parse(event.data)));
    on("snapshot", (data) => {
      const live = new Set(data.pending);
      for (const card of pending.querySelectorAll('article.pause[data-status="outstanding"]')) {
        if (!live.has(card.dataset.pauseId) && !busy(card)) card.remove();
      }
      recount();
      if (data.pending.some((id) => !cardOf(id))) reread().catch(() => {});
    });
    on("pause", added);
    on("gone", gone);
    on("changed", (data) => {
      // Somebody took a listed pause for review, or gave it back: its card says who is on it.
      const card = cardOf(data.id);
      if (!card || busy(card)) return;
      const now = document.importNode(parse(data.html), true);
      card.replaceWith(now);
      wire(now);
    });
    on("signed_out", () => { source.close(); location.reload(); });
    document.documentElement.dataset.live = "1";  // for tests and styles: the stream is wired
  }

  // A pause's own page follows that pause (/inbox/events?pause=...): answered in another tab or
  // by someone else, it shows the decision applied, who gave it and when, instead of a form that
  // can only be refused; then what came of it, until the turn has ended.
  const single = pending ? null : document.querySelector("main > article.pause");
  const ended = new Set(["completed", "failed", "paused_again", "expired", "revoked", "unknown"]);
  if (single && window.EventSource && !ended.has(single.dataset.status)) {
    const source = new EventSource(`/inbox/events?pause=${encodeURIComponent(single.dataset.token)}`);
    source.addEventListener("gone", (event) => {
      const data = JSON.parse(event.data);
      const card = document.querySelector("main > article.pause");
      if (ended.has(data.status)) source.close();
      if (!card || card.dataset.status === data.status) return;
      if (card.querySelector("form[data-sent]")) { source.close(); return; }  // this tab's answer
      const elsewhere = card.dataset.status === "outstanding" || card.classList.contains("answered-elsewhere");
      const note = document.createElement("p");
      note.className = "conflict";
      note.setAttribute("role", "alert");
      if (!data.card) {
        for (const form of card.querySelectorAll("form.answer")) {
          for (const field of form.elements) field.disabled = true;
        }
        note.textContent = `This pause can no longer be answered (${data.status}).`;
        card.dataset.status = data.status;
        card.querySelector("form.answer")?.before(note);
        return;
      }
      const now = document.importNode(parse(data.card), true);
      if (elsewhere) {
        now.classList.add("answered-elsewhere");
        note.textContent = "This pause was answered in another tab or by someone else; " +
          "this page's form is closed. What was applied:";
        (now.querySelector(".decision, .meta.answered, .outcome") || now.lastElementChild).before(note);
      }
      card.replaceWith(now);
    });
    source.addEventListener("changed", (event) => {
      // Taken for review or given back while this page is open: show who is on it now.
      const data = JSON.parse(event.data);
      const card = document.querySelector("main > article.pause");
      if (!card || card.dataset.status !== "outstanding") return;
      const now = document.importNode(parse(data.html), true);
      if (busy(card)) {
        if (!data.assignee) return;
        const note = document.createElement("p");
        note.className = "conflict";
        note.setAttribute("role", "alert");
        note.textContent = `${data.assignee} took this pause for review; until they give it ` +
          "back, only they may answer it.";
        now.querySelector(".holder")?.after(note);
      }
      card.replaceWith(now);
      wire(now);
    });
    source.addEventListener("signed_out", () => { source.close(); location.reload(); });
    document.documentElement.dataset.live = "1";
  }
})();
