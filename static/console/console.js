/* The console's shared behaviour, no build step:
 * - the Menu button opens and closes the navigation on narrow screens (CSS hides it only when
 *   this script runs, so without JavaScript the navigation stays visible);
 * - a form or button with data-confirm="sentence" asks before a destructive action;
 * - a button with data-copy="#selector" copies that element's text;
 * - the organization switcher submits on change (its <noscript> button does it without script).
 * A file, not onchange attributes: the Content-Security-Policy runs no inline script. */
(function () {
  "use strict";

  var toggle = document.getElementById("nav-toggle");
  var topbar = document.getElementById("topbar");
  if (toggle && topbar) {
    toggle.addEventListener("click", function () {
      var open = topbar.classList.toggle("open");
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    });
  }

  var switcher = document.getElementById("org-switcher");
  if (switcher) {
    switcher.addEventListener("change", function () { switcher.form.submit(); });
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    var sentence = (event.submitter && event.submitter.dataset.confirm) || form.dataset.confirm;
    if (sentence && !window.confirm(sentence)) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);

  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      var source = document.querySelector(button.dataset.copy);
      if (!source) { return; }
      var text = source.textContent.trim();
      var done = function () { button.textContent = "Copied"; };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () { select(source); });
      } else {
        select(source);
        try { document.execCommand("copy"); done(); } catch (e) { /* selected: the person copies it */ }
      }
    });
  });

  function select(node) {
    var range = document.createRange();
    range.selectNodeContents(node);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
})();
