// Copy buttons: <button data-copy="#some-id" hidden> copies that element's value (or text) to the
// clipboard. The buttons stay hidden without JavaScript; the field can still be selected by hand.
(function () {
  function reveal() {
    document.querySelectorAll("[data-copy]").forEach(function (button) { button.hidden = false; });
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) return;
    var text = "value" in source ? source.value : source.textContent;
    if (!navigator.clipboard) {
      source.select && source.select();
      button.textContent = "Press Ctrl+C";
      return;
    }
    navigator.clipboard.writeText(text).then(
      function () { button.textContent = "Copied"; },
      function () { source.select && source.select(); button.textContent = "Press Ctrl+C"; }
    );
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", reveal);
  else reveal();
})();
