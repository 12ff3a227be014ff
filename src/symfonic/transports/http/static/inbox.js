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
  // disabled, so its required fields neither block the form nor get sent.
  function sync(form) {
    const choice = form.querySelector('input[name="decision"]:checked');
    const decision = choice ? choice.value : "approve";
    for (const part of form.querySelectorAll(".when-reject")) part.hidden = decision !== "reject";
    for (const part of form.querySelectorAll(".when-edit")) {
      part.hidden = decision !== "edit";
      part.disabled = decision !== "edit";
    }
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

  // Keep the pending list fresh while nobody is answering anything in it.
  const pending = document.getElementById("pending");
  if (pending) {
    const tokens = (el) => [...el.querySelectorAll("[data-token]")].map((a) => a.dataset.token).join(" ");
    setInterval(async () => {
      const busy = pending.querySelector("form[data-dirty], form[data-sent]") ||
        pending.contains(document.activeElement);
      if (document.hidden || busy) return;
      try {
        const response = await fetch("/inbox", { credentials: "same-origin" });
        if (!response.ok) return;
        const page = new DOMParser().parseFromString(await response.text(), "text/html");
        const fresh = page.getElementById("pending");
        if (!fresh || tokens(fresh) === tokens(pending)) return;
        pending.replaceChildren(...[...fresh.childNodes].map((n) => document.importNode(n, true)));
        pending.dataset.count = fresh.dataset.count;
        const count = document.querySelector("h1 .count");
        if (count) count.textContent = fresh.dataset.count;
        wire(pending);
      } catch (_) {
        // the server is restarting, or we are offline: try again on the next tick
      }
    }, 2000);
  }
})();
