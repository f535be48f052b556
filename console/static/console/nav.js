// The navigation collapses behind a "Menu" button on a narrow screen (the style sheet hides it there);
// the button opens and closes it. On a wide screen the button is hidden and the menu always shown.
(function () {
  "use strict";
  var button = document.getElementById("menu-toggle");
  if (!button) return;
  var header = button.closest("header");
  button.addEventListener("click", function () {
    var open = header.classList.toggle("open");
    button.setAttribute("aria-expanded", open ? "true" : "false");
  });
})();
