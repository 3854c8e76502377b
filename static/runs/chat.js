/* The chat page: send a message, then watch the run's text, tool calls, cost and context
 * stream in over the websocket (frames.js). Without JavaScript the form still posts and the
 * page reloads on the conversation. */
(function () {
  "use strict";

  var form = document.getElementById("chat-form");
  if (!form) { return; }
  var transcript = document.getElementById("transcript");
  var statusLine = document.getElementById("chat-status");
  var costLine = document.getElementById("chat-cost");
  var gaugeLine = document.getElementById("chat-gauge");
  var cancelButton = document.getElementById("chat-cancel");
  var sendButton = document.getElementById("chat-send");
  var terminal = (form.dataset.terminal || "").split(",");
  var current = null;

  function csrfToken() {
    var input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  function addTurn(role, text, runId) {
    var item = el("li", "turn " + role);
    if (runId) { item.dataset.runId = runId; }
    item.appendChild(el("div", "who", role === "user" ? "You" : (form.dataset.agentName || agentName())));
    item.appendChild(el("div", "text", text || ""));
    transcript.appendChild(item);
    return item;
  }

  function agentName() {
    var select = document.getElementById("chat-agent");
    return select ? select.options[select.selectedIndex].text : "Agent";
  }

  function money(value) { return "$" + Number(value).toFixed(6); }

  function gaugeText(frame) {
    var text = frame.input_tokens + " tokens in context";
    if (typeof frame.ratio === "number") {
      text += " · " + Math.round(frame.ratio * 100) + "% of " + frame.window;
    }
    return text;
  }

  function follow(runId) {
    var turn = addTurn("assistant", "", runId);
    var text = turn.querySelector(".text");
    var tools = el("ul", "tools");
    turn.appendChild(tools);
    var meta = el("div", "turn-meta");
    turn.appendChild(meta);
    var spent = 0;
    var calls = {};
    statusLine.textContent = "Running…";
    costLine.textContent = "";
    cancelButton.hidden = false;
    cancelButton.dataset.runId = runId;
    sendButton.disabled = true;

    current = window.AgenticFrames.followRun(runId, {
      terminal: terminal,
      onFrame: function (frame) {
        switch (frame.type) {
          case "run_started":
            statusLine.textContent = "Running on " + frame.model_label + "…";
            break;
          case "text_delta":
            text.textContent += frame.delta;
            break;
          case "thinking_delta":
            break;
          case "tool_call":
            calls[frame.tool_call_id] = el("li", "tool-call", "→ " + frame.tool_name + "(" + frame.args + ")");
            tools.appendChild(calls[frame.tool_call_id]);
            break;
          case "tool_result":
            tools.appendChild(el("li", "tool-result", "← " + frame.tool_name + ": " + frame.content));
            break;
          case "cost":
            spent += Number(frame.cost_usd);
            costLine.textContent = "Cost so far " + money(spent) + (frame.cost_is_partial ? " (at least)" : "");
            break;
          case "context_usage":
            gaugeLine.textContent = gaugeText(frame);
            break;
          case "run_finished":
            finished(turn, meta, frame);
            break;
        }
        transcript.scrollTop = transcript.scrollHeight;
      },
      onGone: function () {
        statusLine.textContent = "The live view of this run is no longer available; reload the page.";
        sendButton.disabled = false;
        cancelButton.hidden = true;
      }
    });
  }

  function finished(turn, meta, frame) {
    if (terminal.indexOf(frame.status) === -1) {
      statusLine.textContent = frame.status.replace(/_/g, " ");
      return;  // parked (an approval, a question): the same stream continues when it resumes
    }
    if (frame.status !== "completed") {
      turn.classList.add(frame.status);
      meta.appendChild(el("span", "badge status-" + frame.status,
        frame.status === "cancelled" ? "Cancelled" : frame.status.replace(/_/g, " ")));
      if (frame.error) { turn.appendChild(el("div", "error", frame.error)); }
    }
    meta.appendChild(el("span", "cost", money(frame.cost_usd) + (frame.cost_is_partial ? " (at least)" : "")));
    costLine.textContent = "Cost " + money(frame.cost_usd);
    statusLine.textContent = frame.status === "completed" ? "Done." : "Ended: " + frame.status.replace(/_/g, " ") + ".";
    cancelButton.hidden = true;
    sendButton.disabled = false;
    current = null;
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var data = new FormData(form);
    var message = (data.get("message") || "").trim();
    if (!message) { return; }
    sendButton.disabled = true;
    fetch(form.action, {
      method: "POST",
      body: data,
      headers: { "Accept": "application/json", "X-CSRFToken": csrfToken() },
      credentials: "same-origin"
    }).then(function (response) {
      return response.json().then(function (body) { return { ok: response.ok, body: body }; });
    }).then(function (result) {
      if (!result.ok) {
        statusLine.textContent = result.body.error || "The message was not sent.";
        sendButton.disabled = false;
        return;
      }
      addTurn("user", message);
      form.querySelector("textarea").value = "";
      if (!form.querySelector("input[name=conversation_id]")) {
        var hidden = document.createElement("input");
        hidden.type = "hidden";
        hidden.name = "conversation_id";
        hidden.value = result.body.conversation_id;
        form.appendChild(hidden);
        form.dataset.agentName = agentName();
        window.history.replaceState(null, "", result.body.url);
      }
      follow(result.body.run_id);
    }).catch(function () {
      statusLine.textContent = "The message was not sent (network error).";
      sendButton.disabled = false;
    });
  });

  cancelButton.addEventListener("click", function () {
    fetch("/api/v1/runs/" + cancelButton.dataset.runId + "/cancel/", {
      method: "POST",
      headers: { "X-CSRFToken": csrfToken() },
      credentials: "same-origin"
    }).then(function () { statusLine.textContent = "Cancelling…"; });
  });

  if (form.dataset.liveRun) {
    follow(form.dataset.liveRun);
  }
})();
