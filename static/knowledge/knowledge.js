// Keeps a collection's document statuses moving while any is queued or indexing: polls the
// collection's status endpoint once a second and rewrites each row's status cell.
(function () {
  "use strict";
  var table = document.getElementById("documents");
  if (!table) return;
  var url = table.getAttribute("data-status-url");
  var ACTIVE = { queued: true, indexing: true };

  function active() {
    var rows = table.querySelectorAll("tr[data-document-id]");
    for (var i = 0; i < rows.length; i++) {
      if (ACTIVE[rows[i].getAttribute("data-status")]) return true;
    }
    return false;
  }

  function poll() {
    if (!active()) return;
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (body) {
        if (!body) return;
        body.documents.forEach(function (doc) {
          var row = table.querySelector('tr[data-document-id="' + doc.id + '"]');
          if (!row) return;
          row.setAttribute("data-status", doc.status);
          var cell = row.querySelector(".document-status");
          if (cell && cell.textContent !== doc.progress) cell.textContent = doc.progress;
        });
      })
      .catch(function () {})
      .then(function () { window.setTimeout(poll, 1000); });
  }

  window.setTimeout(poll, 500);
})();
