/* The inspector's script (sabot serve): a launched run's output streamed to its page
   (server-sent events from this server only), and the status line kept current. */
(function () {
  document.addEventListener("DOMContentLoaded", function () {
    var log = document.getElementById("log");
    if (!log || log.getAttribute("data-done") === "true" || !window.EventSource) { return; }
    var from = log.getAttribute("data-from") || "0";
    var source = new EventSource(log.getAttribute("data-events") + "?from=" + from);
    source.addEventListener("line", function (e) {
      log.appendChild(document.createTextNode(e.data + "\n"));
      log.scrollTop = log.scrollHeight;
    });
    source.addEventListener("end", function (e) {
      source.close();
      var end = JSON.parse(e.data);
      var status = document.getElementById("launch-status");
      status.setAttribute("data-status", end.status);
      status.setAttribute("data-exit", end.exit_code === null ? "" : String(end.exit_code));
      status.textContent = end.status + (end.exit_code === null ? "" : " (exit " + end.exit_code + ")") + (end.note ? ": " + end.note : "");
      var run = document.getElementById("launch-run");
      run.setAttribute("data-run", end.run_id || "");
      run.textContent = "";
      if (end.run_id) {
        run.appendChild(document.createTextNode("In the history as "));
        var a = document.createElement("a");
        a.href = "/run/" + encodeURIComponent(end.run_id);
        a.className = "mono";
        a.textContent = end.run_id;
        run.appendChild(a);
        run.appendChild(document.createTextNode("."));
      } else {
        run.textContent = "No run recorded in the history for this launch.";
      }
      var cancel = document.getElementById("cancel-form");
      if (cancel) { cancel.remove(); }
    });
  });
})();
