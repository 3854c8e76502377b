/* The chat page: send a message (with the conversation's approval mode), then watch the run's
 * text, tool calls, charts, cost and context stream in over the websocket (frames.js). A run that
 * parks shows its approval card (Approve / Reject with a note, for approvals:decide) or its
 * question card (for the person asked) inline; once decided or answered, the same run's frames
 * continue on the same socket. Cards of a run still parked are drawn by the server on reload
 * (runs/_approval_card.html, runs/_question_card.html) and wired here the same way.
 * Without JavaScript the form still posts and the page reloads on the conversation. */
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
  var canDecide = form.dataset.canDecide === "true";
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

  function postJson(url, body) {
    return fetch(url, {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "Accept": "application/json", "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      credentials: "same-origin"
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (data) {
        return { ok: response.ok, status: response.status, body: data };
      });
    });
  }

  function errorText(body) {
    if (!body) { return "It did not go through."; }
    if (typeof body.detail === "string") { return body.detail; }
    var parts = [];
    Object.keys(body).forEach(function (key) {
      var value = body[key];
      parts.push(key + ": " + (Array.isArray(value) ? value.join("; ") : JSON.stringify(value)));
    });
    return parts.join(" ") || "It did not go through.";
  }

  // --- cards ---------------------------------------------------------------------------------

  function resolveCard(card, text) {
    var decide = card.querySelector("form");
    if (decide) { decide.remove(); }
    var waiting = card.querySelector(".waiting");
    if (waiting) { waiting.remove(); }
    card.classList.add("resolved");
    card.querySelector(".card-status").textContent = text;
  }

  function wireApprovalCard(card) {
    var decide = card.querySelector("form.decide");
    if (!decide || decide.dataset.wired) { return; }
    decide.dataset.wired = "1";
    decide.addEventListener("submit", function (event) {
      event.preventDefault();
      var decision = event.submitter ? event.submitter.value : "approve";
      var note = decide.querySelector("input[name=note]").value;
      var buttons = decide.querySelectorAll("button");
      buttons.forEach(function (b) { b.disabled = true; });
      postJson("/api/v1/approvals/" + card.dataset.approvalId + "/decide/", { decision: decision, note: note })
        .then(function (result) {
          if (result.ok) {
            resolveCard(card, decision === "approve" ? "Approved — the run continues." : "Rejected — the agent is told why.");
          } else {
            buttons.forEach(function (b) { b.disabled = false; });
            card.querySelector(".card-status").textContent = errorText(result.body);
            if (result.status === 409) { resolveCard(card, errorText(result.body)); }
          }
        })
        .catch(function () {
          buttons.forEach(function (b) { b.disabled = false; });
          card.querySelector(".card-status").textContent = "The decision was not sent (network error).";
        });
    });
  }

  function approvalCard(frame) {
    var card = el("div", "card approval-card");
    card.id = "approval-card-" + frame.approval_id;
    card.dataset.approvalId = frame.approval_id;
    card.dataset.toolCallId = frame.tool_call_id || "";
    var title = el("p", "card-title");
    title.appendChild(el("strong", "", "Approval needed"));
    title.appendChild(document.createTextNode(" before "));
    title.appendChild(el("code", "tool", frame.tool_name));
    title.appendChild(document.createTextNode(" runs"));
    card.appendChild(title);
    card.appendChild(el("pre", "args", JSON.stringify(frame.args, null, 2)));
    if (canDecide) {
      var decide = el("form", "decide");
      var note = el("input");
      note.type = "text"; note.name = "note"; note.placeholder = "Note (optional)";
      note.setAttribute("aria-label", "Note");
      decide.appendChild(note);
      var approve = el("button", "", "Approve");
      approve.type = "submit"; approve.name = "decision"; approve.value = "approve";
      var reject = el("button", "danger", "Reject");
      reject.type = "submit"; reject.name = "decision"; reject.value = "reject";
      decide.appendChild(approve);
      decide.appendChild(reject);
      card.appendChild(decide);
    } else {
      card.appendChild(el("p", "hint waiting", "Waiting for an owner, admin or operator to approve this call."));
    }
    var status = el("p", "card-status");
    status.setAttribute("role", "status");
    card.appendChild(status);
    return card;
  }

  function answersOf(card) {
    var answers = [];
    card.querySelectorAll("fieldset[data-header]").forEach(function (set) {
      var selected = [];
      set.querySelectorAll("input[type=radio]:checked, input[type=checkbox]:checked").forEach(function (input) {
        selected.push(input.value);
      });
      var answer = { header: set.dataset.header, selected: selected };
      var custom = set.querySelector("input.custom");
      if (custom && custom.value.trim()) { answer.custom_answer = custom.value.trim(); }
      answers.push(answer);
    });
    return answers;
  }

  function wireQuestionCard(card) {
    var answer = card.querySelector("form.answer");
    if (!answer || answer.dataset.wired) { return; }
    answer.dataset.wired = "1";
    var url = "/api/v1/runs/" + card.dataset.runId + "/answers/";
    function send(body, done) {
      answer.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
      postJson(url, body).then(function (result) {
        if (result.ok) {
          resolveCard(card, done);
        } else {
          answer.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
          card.querySelector(".card-status").textContent = errorText(result.body);
          if (result.status === 409) { resolveCard(card, errorText(result.body)); }
        }
      }).catch(function () {
        answer.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
        card.querySelector(".card-status").textContent = "The answer was not sent (network error).";
      });
    }
    answer.addEventListener("submit", function (event) {
      event.preventDefault();
      send({ question_id: Number(card.dataset.questionId), answers: answersOf(card) }, "Answered — the run continues.");
    });
    answer.querySelector("button.decline").addEventListener("click", function () {
      send({ question_id: Number(card.dataset.questionId), declined: true }, "Declined — the agent is told.");
    });
  }

  function questionCard(frame, runId) {
    var card = el("div", "card question-card");
    card.id = "question-card-" + frame.question_id;
    card.dataset.questionId = frame.question_id;
    card.dataset.runId = runId;
    var title = el("p", "card-title");
    title.appendChild(el("strong", "", "The agent asks"));
    card.appendChild(title);
    // Conversations are their owner's, and a chat run's questions ask the person who started it.
    var answer = el("form", "answer");
    (frame.questions || []).forEach(function (item, index) {
      var set = el("fieldset");
      set.dataset.header = item.header;
      set.appendChild(el("legend", "", item.question));
      (item.options || []).forEach(function (option) {
        var label = el("label");
        var input = el("input");
        input.type = item.multi_select ? "checkbox" : "radio";
        input.name = "q" + index;
        input.value = option.label;
        label.appendChild(input);
        label.appendChild(document.createTextNode(" " + option.label));
        if (option.description) { label.appendChild(el("span", "hint", " " + option.description)); }
        set.appendChild(label);
      });
      var custom = el("input", "custom");
      custom.type = "text"; custom.placeholder = "Or write your own answer";
      custom.setAttribute("aria-label", "Your own answer");
      set.appendChild(custom);
      answer.appendChild(set);
    });
    var submit = el("button", "", "Answer");
    submit.type = "submit";
    var decline = el("button", "decline", "Decline");
    decline.type = "button";
    answer.appendChild(submit);
    answer.appendChild(decline);
    card.appendChild(answer);
    var status = el("p", "card-status");
    status.setAttribute("role", "status");
    card.appendChild(status);
    return card;
  }

  function chartFigure(frame) {
    var figure = el("figure", "chart");
    figure.dataset.toolCallId = frame.tool_call_id || "";
    // Drawn and escaped on the server (apps/capabilities/tools/chart_svg.py), the same drawing
    // the transcript shows after a reload.
    figure.innerHTML = frame.chart_svg;
    return figure;
  }

  // --- following a run -----------------------------------------------------------------------

  function follow(runId) {
    // Reopened on a run still in progress or parked: its frames replay into the turn the server
    // drew, so the cards and charts it already shows are not drawn twice.
    var turns = transcript.querySelectorAll('.turn.assistant[data-run-id="' + runId + '"]');
    var turn = turns.length ? turns[turns.length - 1] : addTurn("assistant", "", runId);
    var text = turn.querySelector(".text");
    text.textContent = "";
    var tools = turn.querySelector("ul.tools");
    if (!tools) {
      tools = el("ul", "tools");
      text.insertAdjacentElement("afterend", tools);
    }
    var meta = turn.querySelector(".turn-meta");
    if (!meta) {
      meta = el("div", "turn-meta");
      turn.appendChild(meta);
    }
    // The server's state badge and cost were a snapshot; the run's frames say what comes next.
    meta.querySelectorAll(".badge, .cost").forEach(function (node) { node.remove(); });
    var spent = 0;
    var calls = {};
    var parked = false;
    statusLine.textContent = "Running…";
    costLine.textContent = "";
    cancelButton.hidden = false;
    cancelButton.dataset.runId = runId;
    sendButton.disabled = true;

    function place(node) { turn.insertBefore(node, meta); }

    current = window.AgenticFrames.followRun(runId, {
      terminal: terminal,
      onFrame: function (frame) {
        switch (frame.type) {
          case "run_started":
            if (parked) {
              // Resumed after a decision or an answer: whoever gave it, the cards are settled.
              turn.querySelectorAll(".card:not(.resolved)").forEach(function (card) {
                resolveCard(card, card.classList.contains("question-card") ? "Answered." : "Decided.");
              });
              parked = false;
            }
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
            if (frame.chart_svg && !turn.querySelector('figure.chart[data-tool-call-id="' + frame.tool_call_id + '"]')) {
              place(chartFigure(frame));
            }
            break;
          case "tool_approval_required":
            var existing = document.getElementById("approval-card-" + frame.approval_id);
            if (!existing) {
              existing = approvalCard(frame);
              place(existing);
            }
            wireApprovalCard(existing);
            break;
          case "question":
            var asked = document.getElementById("question-card-" + frame.question_id);
            if (!asked) {
              asked = questionCard(frame, runId);
              place(asked);
            }
            wireQuestionCard(asked);
            break;
          case "cost":
            spent += Number(frame.cost_usd);
            costLine.textContent = "Cost so far " + money(spent) + (frame.cost_is_partial ? " (at least)" : "");
            break;
          case "context_usage":
            gaugeLine.textContent = gaugeText(frame);
            break;
          case "run_finished":
            if (terminal.indexOf(frame.status) === -1) { parked = true; }
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
      // Parked (an approval, a question): the same stream continues when it resumes.
      statusLine.textContent = frame.status === "awaiting_approval"
        ? "Waiting for approval."
        : (frame.status === "awaiting_answer" ? "Waiting for your answer." : frame.status.replace(/_/g, " "));
      return;
    }
    if (frame.status !== "completed") {
      turn.classList.add(frame.status);
      meta.appendChild(el("span", "badge status-" + frame.status,
        frame.status === "cancelled" ? "Cancelled" : frame.status.replace(/_/g, " ")));
      if (frame.error) { turn.appendChild(el("div", "error", frame.error)); }
    }
    turn.querySelectorAll(".card:not(.resolved)").forEach(function (card) {
      resolveCard(card, "The run ended: " + frame.status.replace(/_/g, " ") + ".");
    });
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

  transcript.querySelectorAll(".approval-card").forEach(wireApprovalCard);
  transcript.querySelectorAll(".question-card").forEach(wireQuestionCard);

  if (form.dataset.liveRun) {
    follow(form.dataset.liveRun);
  }
})();
