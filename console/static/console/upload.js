// Upload page: drop files on the drop zone (they become the file input's files) and list what is chosen.
// Without this script the file picker and the Preview button work the same.
(function () {
  "use strict";
  var zone = document.querySelector("[data-upload-dropzone]");
  if (!zone) return;
  var input = zone.querySelector("input[type=file]");
  var list = document.getElementById("chosen-files");
  var form = zone.closest("form");

  function show() {
    list.textContent = "";
    Array.prototype.forEach.call(input.files, function (file) {
      var li = document.createElement("li");
      li.textContent = file.name + " (" + file.size + " bytes)";
      list.appendChild(li);
    });
  }

  input.addEventListener("change", show);
  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (event) {
      event.preventDefault();
      zone.classList.add("over");
    });
  });
  zone.addEventListener("dragleave", function () { zone.classList.remove("over"); });
  zone.addEventListener("drop", function (event) {
    event.preventDefault();
    zone.classList.remove("over");
    if (!event.dataTransfer || !event.dataTransfer.files.length) return;
    input.files = event.dataTransfer.files;
    show();
    // Preview at once: the same request as the Preview button's.
    form.requestSubmit(document.getElementById("preview-button"));
  });
})();
