// Search and "Enabled only" filter the capability cards; searching opens the Advanced group
// (seed 000: folded until opened, searched, or enabled). A refused publish puts the focus on its
// summary, whose links lead to each field.
// A file of its own, not an inline script: the Content-Security-Policy runs the console's own
// static scripts only (docs/security.md).
(function () {
  var box = document.getElementById("capability-search");
  var enabledOnly = document.getElementById("capability-enabled-only");
  function filter() {
    var q = box ? box.value.trim().toLowerCase() : "";
    var onlyEnabled = enabledOnly && enabledOnly.checked;
    document.querySelectorAll("section.capability").forEach(function (s) {
      var on = s.querySelector("input[name$='.enabled']");
      s.hidden = (q && s.dataset.search.indexOf(q) === -1) || (onlyEnabled && !(on && on.checked));
    });
    document.querySelectorAll(".category[data-category]").forEach(function (group) {
      group.hidden = !group.querySelector("section.capability:not([hidden])");
    });
    if (q || onlyEnabled) document.getElementById("advanced-group").open = true;
  }
  if (box) box.addEventListener("input", filter);
  if (enabledOnly) enabledOnly.addEventListener("change", filter);
  var summary = document.getElementById("publish-errors");
  if (summary) summary.focus();
  document.querySelectorAll("#publish-errors a[href^='#']").forEach(function (link) {
    link.addEventListener("click", function () {
      var target = document.getElementById(link.getAttribute("href").slice(1));
      if (!target) return;
      for (var node = target; node; node = node.parentElement) {
        if (node.tagName === "DETAILS") node.open = true;
      }
      setTimeout(function () { target.focus(); }, 0);
    });
  });
})();

// Each tool's approval hint follows its select without a reload, and the capability's own
// approval for the tools that say "as the capability says" (the sentences come from the
// server, one per choice, in data-sentences).
(function () {
  function hintFor(select) {
    var sentences = JSON.parse(select.dataset.sentences || "{}");
    var section = select.closest("section.capability");
    var binding = section && section.querySelector("select.binding-approval");
    var text = select.value
      ? (sentences.tool || {})[select.value]
      : (sentences.inherited || {})[binding ? binding.value : "default"];
    var hint = document.getElementById(select.getAttribute("aria-describedby"));
    if (hint && text !== undefined) hint.textContent = text;
  }
  document.querySelectorAll("select[data-sentences]").forEach(function (select) {
    select.addEventListener("change", function () { hintFor(select); });
  });
  document.querySelectorAll("select.binding-approval").forEach(function (binding) {
    binding.addEventListener("change", function () {
      binding.closest("section.capability").querySelectorAll("select[data-sentences]").forEach(hintFor);
    });
  });
})();
