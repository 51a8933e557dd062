"use strict";
/* The report's only script: open the drill-down a link points at, light up the events a
   lab violation cites, and filter the cell list. Everything else is plain HTML. */
(function () {
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    document.querySelectorAll(".lit").forEach(function (el) { el.classList.remove("lit"); });
    if (!target) { return; }
    for (var el = target; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") { el.open = true; }
    }
    var cited = target.getAttribute("data-cites");
    if (cited) {
      cited.split(" ").forEach(function (ref) {
        var ev = document.getElementById(ref);
        if (ev) { ev.classList.add("lit"); }
      });
    }
    target.scrollIntoView({ block: "start" });
  }
  window.addEventListener("hashchange", reveal);
  document.addEventListener("DOMContentLoaded", function () {
    reveal();
    var box = document.getElementById("cell-filter");
    if (!box) { return; }
    var cells = Array.prototype.slice.call(document.querySelectorAll("details.cell"));
    var count = document.getElementById("cell-count");
    box.addEventListener("input", function () {
      var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      cells.forEach(function (cell) {
        var text = cell.getAttribute("data-search");
        var hit = words.every(function (w) { return text.indexOf(w) !== -1; });
        cell.classList.toggle("hidden", !hit);
        if (hit) { shown += 1; }
      });
      if (count) { count.textContent = String(shown); }
    });
  });
})();
