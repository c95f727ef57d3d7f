// Filters over the rule cards and the inputs; the page reads the same without them.
(function () {
  "use strict";
  function filter(inputId, selector) {
    var box = document.getElementById(inputId);
    if (!box) { return; }
    box.parentNode.parentNode.hidden = false;
    var items = Array.prototype.slice.call(document.querySelectorAll(selector));
    box.addEventListener("input", function () {
      var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
      items.forEach(function (item) {
        var text = item.textContent.toLowerCase();
        var shown = words.every(function (word) { return text.indexOf(word) !== -1; });
        item.classList.toggle("hidden-by-filter", !shown);
      });
    });
  }
  filter("rule-filter", "article.card");
  filter("input-filter", "article.input");
})();
