// "Change access" on a document page fetches the section's form when its <details> opens (htmx:
// hx-trigger="toggle from:closest details once"). A <details> opened before htmx had read the page
// (a quick click while a slow page was still loading) fired its toggle with no one listening and
// would stay an empty box: once htmx has run, ask again for every open one. "once" keeps a form that
// did load from loading twice.
(function () {
  function sweep() {
    if (!window.htmx) return;
    document.querySelectorAll("details.access-edit[open] > .access-slot[hx-get]").forEach(function (slot) {
      htmx.trigger(slot.parentElement, "toggle");
    });
  }
  // htmx reads the page on DOMContentLoaded; its listener was added first (its script comes first), so
  // this one runs after it.
  if (document.readyState === "complete") sweep();
  else document.addEventListener("DOMContentLoaded", sweep);
})();
