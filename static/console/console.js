// The organization switcher submits on change (the <noscript> button does it without script).
// A file, not an onchange attribute: the Content-Security-Policy runs no inline script.
(function () {
  var switcher = document.getElementById("org-switcher");
  if (!switcher) return;
  switcher.addEventListener("change", function () {
    switcher.form.submit();
  });
})();
