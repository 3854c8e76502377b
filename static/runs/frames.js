/* A run's frames over the websocket, with resume: no build step, no dependencies.
 *
 * followRun(runId, handlers) opens /ws/runs/{id}/ (after handlers.after, when the page already
 * drew the run up to that seq) and calls handlers.onFrame(frame) for every
 * frame in seq order. If the connection drops before the terminal frame, it reconnects with
 * ?after=<last seq seen>, so frames sent while it was away arrive and none arrive twice.
 * Close codes 4401/4403/4404/4422 are final (see apps/runs/consumers.py). A run that parked (a
 * run_finished whose status is not terminal) resumes on the same stream with higher seq, so a
 * socket closed while it waits is reopened with ?after= too, whatever the close code.
 */
(function () {
  "use strict";

  var FINAL_CODES = [1000, 4401, 4403, 4404, 4422];

  function followRun(runId, handlers) {
    var lastSeq = handlers.after || 0;
    var done = false;
    var retries = 0;
    var parked = !!handlers.parked;
    var socket = null;

    function url() {
      var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
      return scheme + window.location.host + "/ws/runs/" + runId + "/" + (lastSeq ? "?after=" + lastSeq : "");
    }

    function open() {
      socket = new WebSocket(url());
      socket.onopen = function () { retries = 0; };
      socket.onmessage = function (event) {
        var frame = JSON.parse(event.data);
        if (typeof frame.seq === "number") {
          if (frame.seq <= lastSeq) { return; }
          lastSeq = frame.seq;
        }
        if (frame.type === "run_finished" && handlers.terminal) {
          if (handlers.terminal.indexOf(frame.status) !== -1) {
            done = true;
          } else {
            parked = true;
          }
        } else if (frame.type === "run_started") {
          parked = false;
        }
        handlers.onFrame(frame);
      };
      socket.onclose = function (event) {
        if (!done && parked && event.code === 1000) {
          retries += 1;
          setTimeout(open, Math.min(5000, 500 * retries));
          return;
        }
        if (done || FINAL_CODES.indexOf(event.code) !== -1) {
          if (!done && handlers.onGone) { handlers.onGone(event.code); }
          return;
        }
        retries += 1;
        setTimeout(open, Math.min(5000, 200 * retries));
      };
    }

    open();
    return {
      close: function () { done = true; if (socket) { socket.close(); } },
      lastSeq: function () { return lastSeq; }
    };
  }

  window.AgenticFrames = { followRun: followRun };
})();
