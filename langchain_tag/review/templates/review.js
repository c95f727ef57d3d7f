// Filters over the rule cards and the inputs, sortable tables, and links for the rule ids a large page writes
// plainly; the page reads the same without them.
(function () {
  "use strict";
  var each = function (selector, root, fn) {
    Array.prototype.forEach.call((root || document).querySelectorAll(selector), fn);
  };

  // Rule ids written plainly (a large page's lists): each becomes a link to its card. A plain id is a word of
  // the list's text; an id that is not a plain anchor comes as <a data-a="its anchor">.
  function link(text, anchor) {
    var a = document.createElement("a");
    a.href = "#rule-" + anchor;
    a.textContent = text;
    return a;
  }
  each(".ids", null, function (list) {
    Array.prototype.slice.call(list.childNodes).forEach(function (node) {
      if (node.nodeType === 1) {
        if (!node.getAttribute("href")) { node.href = "#rule-" + node.getAttribute("data-a"); }
        return;
      }
      var fragment = document.createDocumentFragment();
      node.textContent.split(/(\s+)/).forEach(function (word) {
        fragment.appendChild(/\S/.test(word) ? link(word, word) : document.createTextNode(word));
      });
      list.replaceChild(fragment, node);
    });
  });

  // A rule card is searched on its own text (id, name, condition, action, tags, flags), not the inputs its
  // verdicts quote; an input on its text and its rules, with exact words matched:ID, missed:ID and wrong:ID.
  function ownText(card) {
    var parts = [];
    each(":scope > :not(.verdicts)", card, function (part) { parts.push(part.textContent); });
    return { text: parts.join(" ").toLowerCase(), tokens: {} };
  }
  function inputText(input) {
    var tokens = {};
    var tag = function (selector, kind) {
      each(selector, input, function (a) { tokens[kind + ":" + a.textContent.toLowerCase()] = true; });
    };
    tag("a.match, .matches a", "matched");
    tag(".missed a", "missed");
    tag(".wrong a", "wrong");
    return { text: input.textContent.toLowerCase(), tokens: tokens };
  }
  function filter(inputId, selector, read) {
    var box = document.getElementById(inputId);
    if (!box) { return null; }
    box.parentNode.parentNode.hidden = false;
    var items = Array.prototype.map.call(document.querySelectorAll(selector), function (item) {
      return { element: item, read: read(item) };
    });
    var apply = function () {
      var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
      items.forEach(function (item) {
        var shown = words.every(function (word) {
          return /^(matched|missed|wrong):/.test(word) ? item.read.tokens[word] === true : item.read.text.indexOf(word) !== -1;
        });
        item.element.classList.toggle("hidden-by-filter", !shown);
      });
    };
    box.addEventListener("input", apply);
    return { box: box, apply: apply };
  }
  filter("rule-filter", "article.card", ownText);
  var inputs = filter("input-filter", "article.input", inputText);

  // A rule's FP or FN count in the gold table lists the inputs it was wrong on.
  each("a.fn-inputs, a.fp-inputs", null, function (a) {
    a.addEventListener("click", function (event) {
      if (!inputs) { return; }
      event.preventDefault();
      inputs.box.value = a.getAttribute("data-filter");
      inputs.apply();
      document.getElementById("inputs").scrollIntoView();
      history.replaceState(null, "", "#inputs");
    });
  });

  // Tables sort by the column clicked: numbers from the highest first, text alphabetically; again to reverse.
  function key(cell) {
    var text = cell.textContent.trim();
    var number = parseFloat(text.replace(/%$/, ""));
    return { text: text, number: /^-?[\d.]+%?$/.test(text) ? number : (text === "n/a" ? -Infinity : NaN) };
  }
  each("table.sortable", null, function (table) {
    var body = table.tBodies[0];
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (head, index) {
      head.tabIndex = 0;
      head.title = "Sort by " + head.textContent;
      var sort = function () {
        var rows = Array.prototype.slice.call(body.rows);
        var keys = rows.map(function (row) { return key(row.cells[index]); });
        var numeric = keys.every(function (k) { return !isNaN(k.number); });
        var order = head.getAttribute("aria-sort");
        var descending = order ? order === "ascending" : numeric;
        var indices = keys.map(function (_, i) { return i; });
        indices.sort(function (a, b) {
          var ka = keys[a], kb = keys[b];
          var c = numeric ? (ka.number === kb.number ? 0 : ka.number - kb.number) : ka.text.localeCompare(kb.text, undefined, { numeric: true });
          return (descending ? -c : c) || a - b;
        });
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        head.setAttribute("aria-sort", descending ? "descending" : "ascending");
        indices.forEach(function (i) { body.appendChild(rows[i]); });
      };
      head.addEventListener("click", sort);
      head.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
      });
    });
  });
})();
