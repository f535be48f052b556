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
  // After "Ingest" the page follows the new jobs; the form starts again empty, so that the same files
  // are not sent twice by a second click (the server would say they are already uploaded).
  document.body.addEventListener("htmx:afterSwap", function (event) {
    if (event.detail.target.id !== "preview" || !document.getElementById("created-jobs")) return;
    form.reset();
    show();
  });
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

  // A preview (or Ingest) never hangs without a way out: a Cancel button while it runs, and a message
  // when it times out (the form's hx-request timeout, past the server's own preview budget) or fails.
  var preview = document.getElementById("preview");
  var cancel = document.getElementById("preview-cancel");
  function say(text) {
    cancel.hidden = true;
    preview.textContent = "";
    var p = document.createElement("p");
    p.className = "error";
    p.id = "preview-failed";
    p.setAttribute("role", "alert");
    p.textContent = text;
    preview.appendChild(p);
  }
  function mine(event) { return event.detail && event.detail.elt === form; }
  form.addEventListener("htmx:beforeRequest", function (event) { if (mine(event)) cancel.hidden = false; });
  form.addEventListener("htmx:afterRequest", function (event) { if (mine(event)) cancel.hidden = true; });
  cancel.addEventListener("click", function () {
    window.htmx.trigger(form, "htmx:abort");
    say("Stopped waiting. A preview stores nothing; after Ingest, look at Jobs before sending the files again.");
  });
  form.addEventListener("htmx:timeout", function (event) {
    if (!mine(event)) return;
    say("The server did not answer within " + Math.round(Number(form.dataset.timeoutMs) / 1000) +
        " seconds, so the page stopped waiting. Nothing was stored by the preview: try again, or fewer files at once.");
  });
  form.addEventListener("htmx:responseError", function (event) {
    if (!mine(event)) return;
    var status = event.detail.xhr ? event.detail.xhr.status : 0;
    say(status === 503 || status === 429
      ? "The server is busy with other previews. Nothing was stored: try again in a moment."
      : "The server could not answer (error " + status + "). Nothing was stored: try again, and tell an admin if it persists.");
  });
  form.addEventListener("htmx:sendError", function (event) {
    if (mine(event)) say("The server could not be reached. Nothing was stored: check the connection and try again.");
  });
})();
