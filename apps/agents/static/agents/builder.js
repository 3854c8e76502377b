// Searching opens the Advanced group (seed 000: folded until opened, searched, or enabled).
// A file of its own, not an inline script: the Content-Security-Policy runs the console's own
// static scripts only (docs/security.md).
(function () {
  var box = document.getElementById("capability-search");
  if (!box) return;
  box.addEventListener("input", function () {
    var q = box.value.trim().toLowerCase();
    document.querySelectorAll("section.capability").forEach(function (s) {
      s.hidden = q && s.dataset.search.indexOf(q) === -1;
    });
    if (q) document.getElementById("advanced-group").open = true;
  });
})();
