/* The chat's thumbs on an assistant turn: one rating per person per turn, changeable. Pressing
   the pressed thumb again removes it. A thumbs down is saved at once and opens the turn's small
   comment form (drawn by runs/_turn.html, hidden until then): Send adds the optional words to that
   rating, Skip or Esc closes it and gives the focus back to the thumb. Delegated from the
   document, so a turn the chat swaps in after its run ends works the same. No build step. */
(function () {
  "use strict";

  function csrfToken() {
    var input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) { return input.value; }
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function send(messageId, method, body) {
    return fetch("/api/v1/messages/" + messageId + "/rating/", {
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

  function turnOf(element) { return element.closest(".turn"); }

  function commentForm(turn) { return turn ? turn.querySelector("form.thumb-comment") : null; }

  function openComment(turn) {
    var form = commentForm(turn);
    if (!form) { return; }
    form.hidden = false;
    form.querySelector(".thumb-comment-status").textContent = "";
    form.querySelector("textarea").focus();
  }

  function closeComment(form, giveFocusBack) {
    form.hidden = true;
    if (giveFocusBack) {
      var down = turnOf(form).querySelector("button[data-thumb=down]");
      if (down) { down.focus(); }
    }
  }

  document.addEventListener("click", function (event) {
    if (!event.target.closest) { return; }
    var skip = event.target.closest("form.thumb-comment [data-comment-skip]");
    if (skip) { closeComment(skip.closest("form"), true); return; }
    var button = event.target.closest("button[data-thumb]");
    if (!button) { return; }
    var group = button.closest(".thumbs");
    var thumb = button.dataset.thumb;
    var form = commentForm(turnOf(group));
    if (button.getAttribute("aria-pressed") === "true") {
      send(group.dataset.messageId, "DELETE").then(function (response) {
        if (response.ok) {
          show(group, "", "Rating removed");
          if (form) { closeComment(form, false); }
        }
      });
      return;
    }
    send(group.dataset.messageId, "PUT", { thumb: thumb, comment: "" }).then(function (response) {
      show(group, response.ok ? thumb : "", response.ok ? "Thanks" : "Could not save the rating");
      if (!form) { return; }
      if (response.ok && thumb === "down") {
        form.querySelector("textarea").value = "";
        openComment(turnOf(group));
      } else {
        closeComment(form, false);
      }
    }).catch(function () { show(group, "", "Could not save the rating"); });
  });

  document.addEventListener("submit", function (event) {
    var form = event.target.closest ? event.target.closest("form.thumb-comment") : null;
    if (!form) { return; }
    event.preventDefault();
    var status = form.querySelector(".thumb-comment-status");
    var group = turnOf(form).querySelector(".thumbs");
    var words = form.querySelector("textarea").value.trim();
    if (!words) { closeComment(form, true); return; }
    var submit = form.querySelector("button[type=submit]");
    submit.disabled = true;
    status.textContent = "Saving…";
    send(form.dataset.messageId, "PUT", { thumb: "down", comment: words }).then(function (response) {
      submit.disabled = false;
      if (!response.ok) {
        status.textContent = "Could not save the comment; try again.";
        return;
      }
      if (group) { show(group, "down", "Thanks — your comment was saved"); }
      closeComment(form, true);
    }).catch(function () {
      submit.disabled = false;
      status.textContent = "Could not save the comment; try again.";
    });
  });

  document.addEventListener("keydown", function (event) {
    if (!event.target.closest) { return; }
    var form = event.target.closest("form.thumb-comment");
    if (!form || form.hidden) { return; }
    if (event.key === "Escape") {
      closeComment(form, true);
    } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
}());
