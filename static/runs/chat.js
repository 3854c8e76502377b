/* The chat page: send a message (with the conversation's approval mode), then watch the run's
 * text, tool calls, charts, cost and context stream in over the websocket (frames.js). A run that
 * parks shows its approval card (Approve / Reject with a note, for approvals:decide) or its
 * question card (for the person asked) where it was raised; once decided or answered, the same
 * run's frames continue on the same socket.
 *
 * Live and after a reload the transcript reads the same (issue 15): while a run streams, its
 * turn is built block by block in the order frames arrive (text, tool lines — each call once,
 * even when a resumed run replays it — cards, charts); when the run ends, the turn is swapped
 * for the server's rendering of it (runs/_turn.html: Markdown rendered and sanitized, cards
 * resolved with what was decided, the status in words), which is exactly what a reload draws. Without JavaScript the form still posts and the page reloads on the conversation. */
(function () {
  "use strict";

  var form = document.getElementById("chat-form");
  var transcript = document.getElementById("transcript");
  var threads = document.getElementById("chat-threads");
  var narrow = window.matchMedia("(max-width: 56rem)");
  if (threads && narrow.matches) { threads.open = false; }
  var search = document.getElementById("thread-search");
  if (search) {
    search.addEventListener("input", function () {
      var q = search.value.trim().toLowerCase();
      document.querySelectorAll("#thread-list li[data-search]").forEach(function (item) {
        item.hidden = q && item.dataset.search.indexOf(q) === -1;
      });
    });
  }
  if (transcript) { transcript.scrollTop = transcript.scrollHeight; }
  var deleteForm = document.querySelector("form.conversation-delete");
  if (deleteForm) {
    deleteForm.addEventListener("submit", function (event) {
      if (!window.confirm("Delete this conversation? Its messages and stored images cannot be brought back.")) {
        event.preventDefault();
      }
    });
  }
  if (!form) { return; }
  var statusLine = document.getElementById("chat-status");
  var costLine = document.getElementById("chat-cost");
  var gaugeLine = document.getElementById("chat-gauge");
  var compactionLine = document.getElementById("chat-compaction");
  var cancelButton = document.getElementById("chat-cancel");
  var sendButton = document.getElementById("chat-send");
  var textarea = document.getElementById("chat-message");
  var terminal = (form.dataset.terminal || "").split(",");
  var canDecide = form.dataset.canDecide === "true";
  var labelsNode = document.getElementById("run-status-labels");
  var statusLabels = labelsNode ? JSON.parse(labelsNode.textContent) : {};
  var current = null;

  function statusWords(status) {
    return statusLabels[status] || status.replace(/_/g, " ");
  }

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
    if (role === "user") {
      item.appendChild(el("div", "text", text || ""));
    } else {
      item.appendChild(el("div", "turn-body"));
      item.appendChild(el("div", "turn-meta"));
    }
    transcript.appendChild(item);
    return item;
  }

  function agentName() {
    var select = document.getElementById("chat-agent");
    return select ? select.options[select.selectedIndex].text : "Agent";
  }

  function money(value) { return "$" + Number(value).toFixed(6); }

  // What the compaction capability is doing: a summary being written (a whole model request
  // during which nothing else streams), or a setting that cannot work, said once per run.
  function compactionText(frame) {
    if (frame.phase === "started") {
      return "Summarizing " + frame.messages + " earlier messages (about " + frame.context_tokens +
        " tokens) to stay within the model's " + frame.window_tokens + "-token window…";
    }
    if (frame.phase === "finished") {
      return frame.summary_output_tokens
        ? "Summarized the earlier conversation; it continues from the summary."
        : "Trimmed the earlier conversation to fit the window.";
    }
    return "Compaction is skipped: the instructions and tool schemas alone are about " +
      frame.overhead_tokens + " tokens, above its trigger of " + frame.trigger_tokens +
      " tokens (a " + frame.window_tokens + "-token window). A larger context_window or a higher " +
      "max_fraction would let it work.";
  }

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
    if (frame.delegate) {
      // Who proposes the call: the agent the person talks to, or a delegate of it.
      title.appendChild(document.createTextNode(" — asked by the delegate "));
      title.appendChild(el("strong", "delegate-name", frame.delegate.name));
    }
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

  // The page web_fetch read or the results web_search found (the same cards _turn.html draws on
  // reload). Built from text nodes; the server passed only http(s) links (capabilities/tools/sources.py).
  function sourceCards(frame) {
    var list = el("ul", "source-cards");
    list.dataset.toolCallId = frame.tool_call_id || "";
    list.setAttribute("aria-label", "Sources");
    frame.sources.forEach(function (source) {
      var item = el("li", "source-card");
      var link = el("a");
      link.href = source.url;
      link.rel = "noopener noreferrer nofollow";
      link.target = "_blank";
      link.appendChild(el("span", "source-title", source.title || source.host));
      link.appendChild(document.createTextNode(" "));
      link.appendChild(el("span", "source-host", source.host));
      item.appendChild(link);
      list.appendChild(item);
    });
    return list;
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

  function turnOf(runId) {
    var turns = transcript.querySelectorAll('.turn.assistant[data-run-id="' + runId + '"]');
    return turns.length ? turns[turns.length - 1] : null;
  }

  function bodyOf(turn) {
    var body = turn.querySelector(".turn-body");
    if (!body) {
      body = el("div", "turn-body");
      turn.insertBefore(body, turn.querySelector(".turn-meta"));
    }
    return body;
  }

  function metaOf(turn) {
    var meta = turn.querySelector(".turn-meta");
    if (!meta) {
      meta = el("div", "turn-meta");
      turn.appendChild(meta);
    }
    return meta;
  }

  function liveText(body) {
    var last = body.lastElementChild;
    if (last && last.classList.contains("text") && last.classList.contains("live")) { return last; }
    var block = el("div", "text live");
    body.appendChild(block);
    return block;
  }

  function toolList(body) {
    var last = body.lastElementChild;
    if (last && last.tagName === "UL" && last.classList.contains("tools")) { return last; }
    var list = el("ul", "tools");
    body.appendChild(list);
    return list;
  }

  // --- delegation panels ----------------------------------------------------------------------
  // One panel per delegation, nested under the delegation that started it (parent_task_id), with
  // its own text, tool calls, cost, and a link to its run once its row is written.

  function panelOf(taskId) {
    return transcript.querySelector('.delegation[data-task-id="' + taskId + '"]');
  }

  function delegationPanel(frame, body) {
    var panel = panelOf(frame.task_id);
    if (panel) {
      if (frame.resumed) { panel.querySelector(".delegation-status").textContent = "Running…"; }
      return panel;
    }
    panel = el("section", "delegation");
    panel.dataset.taskId = frame.task_id;
    panel.setAttribute("aria-label", "Delegation to " + frame.name);
    var head = el("header", "delegation-head");
    head.appendChild(el("strong", "delegation-name", frame.name));
    head.appendChild(el("span", "badge delegation-kind", frame.kind === "inline" ? "specialist" : "agent"));
    head.appendChild(el("span", "badge delegation-mode", frame.mode === "async" ? "background" : "waits"));
    head.appendChild(el("code", "badge task-id", frame.task_id));
    panel.appendChild(head);
    panel.appendChild(el("p", "delegation-task", frame.description));
    panel.appendChild(el("div", "delegation-body"));
    var foot = el("p", "delegation-foot");
    var status = el("span", "delegation-status", "Running…");
    status.setAttribute("role", "status");
    foot.appendChild(status);
    foot.appendChild(el("span", "delegation-cost"));
    panel.appendChild(foot);
    if (frame.definition && form.dataset.promoteUrl) {
      panel.appendChild(promoteForm(frame.definition));
    }
    var parent = frame.parent_task_id ? panelOf(frame.parent_task_id) : null;
    (parent ? parent.querySelector(".delegation-body") : body).appendChild(panel);
    return panel;
  }

  // A specialist exists only for this run: a person may keep it as a draft agent while it is on
  // screen (the server creates the draft behind agents:edit; nothing is published or pinned).
  function promoteForm(definition) {
    var keep = el("form", "delegation-promote");
    keep.method = "post";
    keep.action = form.dataset.promoteUrl;
    var token = form.querySelector("input[name=csrfmiddlewaretoken]");
    var fields = {
      csrfmiddlewaretoken: token ? token.value : "",
      name: definition.name || "",
      description: definition.description || "",
      instructions: definition.instructions || "",
      model: definition.model || definition.model_profile_id || ""
    };
    Object.keys(fields).forEach(function (name) {
      var input = el("input");
      input.type = "hidden"; input.name = name; input.value = fields[name];
      keep.appendChild(input);
    });
    var button = el("button", "secondary", "Keep as a draft agent");
    button.type = "submit";
    keep.appendChild(button);
    return keep;
  }

  function panelBody(taskId) {
    var panel = panelOf(taskId);
    return panel ? panel.querySelector(".delegation-body") : null;
  }

  function delegationFrame(frame, body) {
    var inside;
    switch (frame.type) {
      case "subagent_started":
        delegationPanel(frame, body);
        break;
      case "subagent_text_delta":
        inside = panelBody(frame.task_id);
        if (inside) { liveText(inside).textContent += frame.delta; }
        break;
      case "subagent_tool_call":
        inside = panelBody(frame.task_id);
        if (inside) { toolList(inside).appendChild(el("li", "tool-call", "→ " + frame.tool_name + "(" + frame.args + ")")); }
        break;
      case "subagent_tool_result":
        inside = panelBody(frame.task_id);
        if (inside) { toolList(inside).appendChild(el("li", "tool-result", "← " + frame.tool_name + ": " + frame.content)); }
        break;
      case "subagent_parked":
        if (panelOf(frame.task_id)) {
          panelOf(frame.task_id).querySelector(".delegation-status").textContent = "Waiting for approval";
        }
        break;
      case "subagent_finished":
        var panel = panelOf(frame.task_id);
        if (panel) {
          panel.classList.add("done");
          panel.querySelector(".delegation-status").textContent =
            statusWords(frame.status) + (frame.error ? ": " + frame.error : "");
          panel.querySelector(".delegation-cost").textContent =
            " · " + money(frame.cost_usd) + (frame.cost_is_partial ? " (at least)" : "");
        }
        break;
      case "subagent_recorded":
        var recorded = panelOf(frame.task_id);
        if (recorded && !recorded.querySelector(".delegation-run")) {
          var link = el("a", "delegation-run", "Run " + frame.run_id);
          link.href = "/activity/?run=" + frame.run_id;
          recorded.querySelector(".delegation-foot").appendChild(document.createTextNode(" · "));
          recorded.querySelector(".delegation-foot").appendChild(link);
        }
        break;
    }
  }

  function wireCards(scope) {
    scope.querySelectorAll(".approval-card").forEach(wireApprovalCard);
    scope.querySelectorAll(".question-card").forEach(wireQuestionCard);
  }

  function conversationId() {
    var input = form.querySelector("input[name=conversation_id]");
    return input ? input.value : "";
  }

  // The server's drawing of the run's turn replaces the live one: what a reload would show.
  function redraw(runId) {
    var url = "/chat/" + conversationId() + "/runs/" + runId + "/turn/";
    return fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        var turn = turnOf(runId);
        if (!html || !turn) { return; }
        var holder = document.createElement("ol");
        holder.innerHTML = html.trim();
        var fresh = holder.firstElementChild;
        if (!fresh) { return; }
        turn.replaceWith(fresh);
        wireCards(fresh);
        // The stored turn says the compaction notice itself (and a reload says it again).
        if (compactionLine && fresh.querySelector(".compaction-notice")) {
          compactionLine.hidden = true;
          compactionLine.textContent = "";
        }
        transcript.scrollTop = transcript.scrollHeight;
      })
      .catch(function () { /* the live drawing stays; a reload shows the stored one */ });
  }

  function follow(runId, afterSeq) {
    var turn = turnOf(runId) || addTurn("assistant", "", runId);
    var existingText = turn.querySelector(":scope > .text");
    if (existingText && !existingText.textContent) { existingText.remove(); }
    var spent = 0;
    var simulated = false;
    var parked = !!afterSeq && form.dataset.liveParked === "true";
    // A running turn's badge and cost were a snapshot: its frames say what comes next. A parked
    // turn keeps its "Awaiting approval" until it resumes.
    if (!parked) {
      metaOf(turn).querySelectorAll(".badge, .cost").forEach(function (node) { node.remove(); });
    }
    statusLine.textContent = "Running…";
    costLine.textContent = "";
    if (compactionLine) { compactionLine.hidden = true; compactionLine.textContent = ""; }
    cancelButton.hidden = false;
    cancelButton.dataset.runId = runId;
    sendButton.disabled = true;

    function body() { return bodyOf(turnOf(runId)); }
    function has(selector) { return turnOf(runId).querySelector(selector); }

    current = window.AgenticFrames.followRun(runId, {
      terminal: terminal,
      after: afterSeq || 0,
      parked: !!afterSeq && form.dataset.liveParked === "true",
      onFrame: function (frame) {
        switch (frame.type) {
          case "run_started":
            if (parked) {
              // Resumed after a decision or an answer: whoever gave it, the cards are settled.
              turnOf(runId).querySelectorAll(".card:not(.resolved)").forEach(function (card) {
                resolveCard(card, card.classList.contains("question-card") ? "Answered." : "Decided.");
              });
              metaOf(turnOf(runId)).querySelectorAll(".badge").forEach(function (node) { node.remove(); });
              parked = false;
            }
            simulated = /offline/i.test(frame.model_label || "");
            statusLine.textContent = "Running on " + frame.model_label + "…";
            break;
          case "text_delta":
            liveText(body()).textContent += frame.delta;
            break;
          case "thinking_delta":
            break;
          case "tool_call":
            // A resumed run replays the call it parked on: one line per call.
            if (!has('.tool-call[data-tool-call-id="' + frame.tool_call_id + '"]')) {
              var call = el("li", "tool-call", "→ " + frame.tool_name + "(" + frame.args + ")");
              call.dataset.toolCallId = frame.tool_call_id;
              toolList(body()).appendChild(call);
            }
            break;
          case "tool_result":
            if (!has('.tool-result[data-tool-call-id="' + frame.tool_call_id + '"]')) {
              var result = el("li", "tool-result", "← " + frame.tool_name + ": " + frame.content);
              result.dataset.toolCallId = frame.tool_call_id;
              toolList(body()).appendChild(result);
            }
            if (frame.chart_svg && !has('figure.chart[data-tool-call-id="' + frame.tool_call_id + '"]')) {
              body().appendChild(chartFigure(frame));
            }
            if (frame.sources && frame.sources.length &&
                !has('.source-cards[data-tool-call-id="' + frame.tool_call_id + '"]')) {
              body().appendChild(sourceCards(frame));
            }
            break;
          case "subagent_started":
          case "subagent_text_delta":
          case "subagent_tool_call":
          case "subagent_tool_result":
          case "subagent_parked":
          case "subagent_finished":
          case "subagent_recorded":
            delegationFrame(frame, body());
            break;
          case "tool_approval_required":
            var existing = document.getElementById("approval-card-" + frame.approval_id);
            if (!existing) {
              existing = approvalCard(frame);
              // A delegate's call is decided from its card inside the delegate's own panel.
              var holder = frame.delegate ? panelBody(frame.delegate.task_id) : null;
              (holder || body()).appendChild(existing);
            }
            wireApprovalCard(existing);
            break;
          case "question":
            var asked = document.getElementById("question-card-" + frame.question_id);
            if (!asked) {
              asked = questionCard(frame, runId);
              body().appendChild(asked);
            }
            wireQuestionCard(asked);
            break;
          case "cost":
            spent += Number(frame.cost_usd);
            costLine.textContent = "Cost so far " + money(spent) + (frame.cost_is_partial ? " (at least)" : "") +
              (simulated ? " (simulated)" : "");
            break;
          case "context_usage":
            gaugeLine.textContent = gaugeText(frame);
            break;
          case "compaction":
            if (compactionLine) {
              compactionLine.textContent = compactionText(frame);
              compactionLine.hidden = false;
            }
            break;
          case "run_finished":
            if (terminal.indexOf(frame.status) === -1) { parked = true; }
            finished(runId, frame, simulated);
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

  function finished(runId, frame, simulated) {
    if (terminal.indexOf(frame.status) === -1) {
      // Not redrawn while parked: the person may be typing a note or picking an answer in a card.
      // Its state in words, as a reload draws it.
      var meta = metaOf(turnOf(runId));
      if (!meta.querySelector(".badge.status-" + frame.status)) {
        meta.insertBefore(el("span", "badge status-" + frame.status, statusWords(frame.status)), meta.firstChild);
      }
      // Parked (an approval, a question): the same stream continues when it resumes.
      statusLine.textContent = frame.status === "awaiting_approval"
        ? "Waiting for approval."
        : (frame.status === "awaiting_answer" ? "Waiting for your answer." : statusWords(frame.status) + ".");
      return;
    }
    redraw(runId);
    costLine.textContent = "Cost " + money(frame.cost_usd) + (simulated ? " (simulated)" : "");
    statusLine.textContent = frame.status === "completed" ? "Done." : "Ended: " + statusWords(frame.status) + ".";
    cancelButton.hidden = true;
    sendButton.disabled = false;
    current = null;
  }

  // The sidebar's title for a new conversation, as the server cleans it (console's chat_title).
  function chatTitle(message) {
    var first = message.trim().split("\n")[0];
    var command = /^\/(call|steps|ask)\b\s*(.*)$/.exec(first);
    if (!command) { return first || "Untitled"; }
    var rest = command[2].trim();
    if (command[1] === "steps") { return (rest.split(/\s+/)[0] || "Some") + " steps"; }
    if (command[1] === "ask") { return rest || "A question"; }
    var call = /^([A-Za-z0-9_\-]+)\s*(.*)$/.exec(rest);
    if (!call) { return "A tool call"; }
    try {
      var args = call[2] ? JSON.parse(call[2]) : {};
      var values = Object.keys(args).map(function (k) { return args[k]; })
        .filter(function (v) { return typeof v === "string" || typeof v === "number"; });
      return values.length ? call[1] + ": " + values[0] : call[1];
    } catch (e) {
      return call[1];
    }
  }

  function addThread(conversation, url, message) {
    var list = document.getElementById("thread-list");
    var template = document.getElementById("thread-item");
    if (!list || !template) { return; }
    var empty = document.getElementById("no-threads");
    if (empty) { empty.remove(); }
    list.querySelectorAll("li.current").forEach(function (item) {
      item.classList.remove("current");
      var link = item.querySelector("a");
      if (link) { link.removeAttribute("aria-current"); }
    });
    var item = template.content.firstElementChild.cloneNode(true);
    var link = item.querySelector("a");
    link.href = url;
    var title = chatTitle(message);
    link.textContent = title.length > 48 ? title.slice(0, 47) + "…" : title;
    item.querySelector(".thread-meta").textContent = agentName() + " · just now";
    item.dataset.search = (title + " " + agentName()).toLowerCase();
    list.insertBefore(item, list.firstChild);
  }

  textarea.addEventListener("keydown", function (event) {
    // Enter sends, Shift+Enter is a new line (and an IME composition is never cut short).
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (!sendButton.disabled) { form.requestSubmit(sendButton); }
    }
  });

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
      var empty = document.getElementById("chat-empty");
      if (empty) { empty.remove(); }
      addTurn("user", message, result.body.run_id);
      form.querySelector("textarea").value = "";
      if (!form.querySelector("input[name=conversation_id]")) {
        addThread(result.body.conversation_id, result.body.url, message);
        var hidden = document.createElement("input");
        hidden.type = "hidden";
        hidden.name = "conversation_id";
        hidden.value = result.body.conversation_id;
        form.appendChild(hidden);
        form.dataset.agentName = agentName();
        // The Builder's "Try it" pane stays on the Builder; the chat page moves to the conversation.
        if (!form.dataset.stay) { window.history.replaceState(null, "", result.body.url); }
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

  wireCards(transcript);

  if (form.dataset.liveRun) {
    follow(form.dataset.liveRun, Number(form.dataset.afterSeq || 0));
    if (form.dataset.liveParked === "true") {
      statusLine.textContent = form.dataset.liveStatus === "awaiting_answer" ? "Waiting for your answer." : "Waiting for approval.";
    }
  }
})();
