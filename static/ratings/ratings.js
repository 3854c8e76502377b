/* The chat's thumbs on an assistant turn: one rating per person per turn, changeable. Pressing
   the pressed thumb again removes it; a thumbs down asks for an optional comment. Delegated from
   the document, so a turn the chat swaps in after its run ends works the same. */
(function () {
  "use strict";

  function csrfToken() {
    var input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) { return input.value; }
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function send(group, method, body) {
    return fetch("/api/v1/messages/" + group.dataset.messageId + "/rating/", {
      method: method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: body ? JSON.stringify(body) : undefined,
    });
  }

  function show(group, thumb, words) {
    group.querySelectorAll("button[data-thumb]").forEach(function (button) {
      button.setAttribute("aria-pressed", button.dataset.thumb === thumb ? "true" : "false");
    });
    group.querySelector(".thumb-status").textContent = words;
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-thumb]") : null;
    if (!button) { return; }
    var group = button.closest(".thumbs");
    var thumb = button.dataset.thumb;
    if (button.getAttribute("aria-pressed") === "true") {
      send(group, "DELETE").then(function (response) {
        if (response.ok) { show(group, "", "Rating removed"); }
      });
      return;
    }
    var comment = "";
    if (thumb === "down") {
      comment = window.prompt("What was wrong with this answer? (optional)") || "";
    }
    send(group, "PUT", { thumb: thumb, comment: comment }).then(function (response) {
      show(group, response.ok ? thumb : "", response.ok ? "Thanks" : "Could not save the rating");
    }).catch(function () { show(group, "", "Could not save the rating"); });
  });
}());
