/* The course's attention view: pick an input, a layer and a head; choose a token and each head's
   weights from it (its query row) or to it (its key column) show as bars under the tokens; the
   chosen head is also drawn whole, as a query x key matrix, next to thumbnails of every layer and
   head; every weight can be read as text (a cell of the matrix, a table per head).

   The mouse chooses nothing by passing over a token (it would, on its way down to the bars): a
   click, Enter or Space pins a token (a second click or Escape releases it); the arrow keys move
   the choice along the tokens.

   No library and no network: lab/views.py writes the data as JSON into the page, next to a
   <div class="mha-attn">, and this script (inlined by the same cell, or loaded once) draws it.
   Everything that came from Python (token strings included) goes in as text, never as HTML.

   window.mhaAttention.render(element, data) draws (or redraws) one view and returns {state};
   data.initial (a state) keeps the reader's choices, data.onSelect(token) hears the chosen token,
   data.explain(layer, head, query, key) takes one score apart (the sentence model's pass).
   window.mhaAttention.mountAll() draws every <div class="mha-attn"> of the page not yet drawn. */
(function () {
  "use strict";
  if (window.mhaAttention) {
    window.mhaAttention.mountAll();
    return;
  }
  var counter = 0;
  var TOP = 3; // weights spelled out per head
  var NAMES = { " ": "space", "\n": "newline", "\t": "tab", "": "empty" };

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) { node.setAttribute(name, attrs[name]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A token as the reader sees it: a space at either end (a character model's " ", a word
  // piece's " cat") is the open-box sign, a newline ↵, a tab ⇥, another control character its
  // code, an empty string ∅.
  function shown(token) {
    token = String(token);
    if (token === "") return "\u2205";
    return token.replace(/^ +| +$/g, function (s) { return s.replace(/ /g, "\u2423"); })
      .replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5")
      .replace(/[\u0000-\u001f\u007f]/g, function (c) { return "\\x" + c.charCodeAt(0).toString(16).padStart(2, "0"); });
  }
  function spoken(token) { return NAMES[token] || JSON.stringify(token); }
  function escape(text) {
    return text.replace(/[&<>"']/g, function (c) { return "&#" + c.charCodeAt(0) + ";"; });
  }

  function option(select, value, text) {
    select.appendChild(el("option", { value: String(value) }, text));
  }

  function labelled(text, control) {
    var label = el("label", { "class": "mha-attn-control" });
    label.appendChild(el("span", {}, text + " "));
    label.appendChild(control);
    return label;
  }

  function fixed(w) { return Math.abs(w) < 5e-4 && w !== 0 ? w.toExponential(1) : w.toFixed(3); }

  function render(root, data) {
    var id = "mha-attn-" + (++counter);
    root.textContent = "";
    root.setAttribute("data-mounted", "1");
    var init = data.initial || {};
    var state = { input: 0, layer: init.layer || 0, head: init.head === undefined ? "all" : init.head,
                  focus: init.focus || 0, direction: init.direction || "from", token: null, pinned: false, key: null };
    var inputs = data.inputs;
    // On a phone every head at once is a long scroll (four heads of 64 tokens: 2,800 px): one head
    // to start with there; "all heads" stays a choice.
    if (init.head === undefined && root.clientWidth > 0 && root.clientWidth < 500) state.head = 0;
    inputs.forEach(function (input) { // lab/views.py leaves out each row's trailing zeros
      var L = input.tokens.length;
      input.layers.forEach(function (heads_) { heads_.forEach(function (m) { m.forEach(function (row) {
        while (row.length < L) row.push(0);
      }); }); });
    });

    var box = el("div", { "class": "mha-attn-box", role: "group", "aria-label": data.title || "attention weights" });
    root.appendChild(box);
    if (data.title) box.appendChild(el("p", { "class": "mha-attn-title" }, data.title));

    var controls = el("div", { "class": "mha-attn-controls" });
    box.appendChild(controls);
    var inputSelect = el("select", { "data-control": "input" });
    inputs.forEach(function (input, i) { option(inputSelect, i, input.label); });
    if (inputs.length > 1) controls.appendChild(labelled("Input", inputSelect));
    var layerSelect = el("select", { "data-control": "layer" });
    controls.appendChild(labelled("Layer", layerSelect));
    var headSelect = el("select", { "data-control": "head" });
    controls.appendChild(labelled("Head", headSelect));
    var directions = el("fieldset", { "class": "mha-attn-direction" });
    directions.appendChild(el("legend", {}, "Weights"));
    [["from", "from the token (what it attends to)"], ["to", "to the token (who attends to it)"]].forEach(function (d) {
      var radio = el("input", { type: "radio", name: id + "-direction", value: d[0], "data-control": "direction" });
      if (d[0] === state.direction) radio.checked = true;
      var label = el("label", {});
      label.appendChild(radio);
      label.appendChild(document.createTextNode(" " + d[1]));
      directions.appendChild(label);
      radio.addEventListener("change", function () { state.direction = d[0]; draw(); });
    });
    controls.appendChild(directions);

    box.appendChild(el("p", { "class": "mha-attn-help", id: id + "-help" },
      "Click a token to pin it; a second click or Escape releases it. With the keyboard: Tab to the tokens; "
      + "the arrow keys, Home and End move along them, Enter pins."));
    var scaleNote = el("p", { "class": "mha-attn-scale", "data-part": "scale" });
    box.appendChild(scaleNote);
    var tokenBar = el("div", { "class": "mha-attn-tokens", role: "toolbar", "aria-label": "tokens",
                               "aria-describedby": id + "-help" });
    box.appendChild(tokenBar);
    var heads = el("div", { "class": "mha-attn-heads" });
    box.appendChild(heads);
    var summary = el("p", { "class": "mha-attn-summary", "aria-live": "polite", "data-part": "summary" });
    box.appendChild(summary);

    // The whole head: thumbnails of every layer and head, the chosen head's matrix, one cell read out.
    var whole = el("div", { "class": "mha-attn-whole" });
    box.appendChild(whole);
    var thumbs = el("div", { "class": "mha-attn-thumbs", role: "group", "aria-label": "every layer and head" });
    var matrixBox = el("div", { "class": "mha-attn-matrixbox" });
    whole.appendChild(thumbs);
    whole.appendChild(matrixBox);
    var readout = el("p", { "class": "mha-attn-readout", "data-part": "readout" });
    box.appendChild(readout);
    var steps = el("div", { "class": "mha-attn-steps", "data-part": "steps" });
    box.appendChild(steps);
    var tableBox = el("details", { "class": "mha-attn-table" });
    tableBox.appendChild(el("summary", {}, "Every weight of the chosen head as a table"));
    box.appendChild(tableBox);
    tableBox.addEventListener("toggle", function () { if (tableBox.open) drawTable(); });

    function current() { return inputs[state.input]; }
    function headCount() { return current().layers[state.layer].length; }
    function chosenHead() { return state.head === "all" ? state.focus : state.head; }
    function matrixOf(layer, head) { return current().layers[layer][head]; }
    function scale() { return current().scale || { lo: 0, hi: 1 }; }

    function fillLayerAndHead() {
      var input = current();
      layerSelect.textContent = "";
      input.layers.forEach(function (_, l) { option(layerSelect, l, input.layer_names[l]); });
      state.layer = Math.min(state.layer, input.layers.length - 1);
      layerSelect.value = String(state.layer);
      headSelect.textContent = "";
      var count = headCount();
      if (count > 1) option(headSelect, "all", "all " + count + " heads");
      for (var h = 0; h < count; h++) option(headSelect, h, input.head_names[state.layer][h]);
      if (state.head !== "all" && state.head >= count) state.head = "all";
      if (count === 1) state.head = 0;
      if (state.focus >= count) state.focus = 0;
      headSelect.value = String(state.head);
    }

    // Tokens and bar cells share one column width (the longest label's), so that they wrap alike.
    function fillTokens() {
      var tokens = current().tokens;
      var longest = tokens.reduce(function (m, t) { return Math.max(m, Array.from(shown(t)).length); }, 1);
      box.style.setProperty("--mha-col", Math.min(longest, 8) + 1.2 + "ch");
      tokenBar.textContent = "";
      if (state.token === null || state.token >= tokens.length) state.token = tokens.length - 1;
      tokens.forEach(function (token, i) {
        var button = el("button", { type: "button", "class": "mha-attn-token", "data-index": String(i),
                                    "aria-label": "token " + i + ": " + spoken(token),
                                    title: "token " + i + ": " + spoken(token),
                                    tabindex: i === state.token ? "0" : "-1" }, shown(token));
        button.addEventListener("click", function () { pin(i, !(state.pinned && state.token === i)); });
        tokenBar.appendChild(button);
      });
    }

    tokenBar.addEventListener("keydown", function (event) {
      var last = current().tokens.length - 1;
      if (event.key === "Escape") { pin(state.token, false); return; }
      var moves = { ArrowRight: state.token + 1, ArrowDown: state.token + 1, ArrowLeft: state.token - 1,
                    ArrowUp: state.token - 1, Home: 0, End: last };
      if (!(event.key in moves)) return;
      event.preventDefault();
      select(Math.max(0, Math.min(last, moves[event.key])), true);
    });

    function select(i, focus) {
      if (i !== state.token) {
        state.token = i;
        state.key = null;
        draw();
      }
      if (focus) tokenBar.children[i].focus();
    }

    function pin(i, on) {
      state.pinned = on;
      if (!on) state.key = null;
      if (i !== state.token) { state.token = i; state.key = null; }
      draw();
    }

    // (query, key) weight of head h in the current layer, seen from the selected token.
    function weight(head, j) {
      var matrix = matrixOf(state.layer, head), i = state.token;
      return state.direction === "from" ? matrix[i][j] : matrix[j][i];
    }

    function barStyle(bar, w) {
      var s = scale(), span = s.hi - s.lo, zero = (0 - s.lo) / span, v = (Math.max(s.lo, Math.min(s.hi, w)) - s.lo) / span;
      bar.style.bottom = (100 * Math.min(zero, v)).toFixed(1) + "%";
      bar.style.height = (100 * Math.abs(v - zero)).toFixed(1) + "%";
      if (w < 0) bar.className += " mha-attn-negative";
    }

    function draw() {
      var input = current();
      var tokens = input.tokens;
      Array.prototype.forEach.call(tokenBar.children, function (button, i) {
        button.setAttribute("aria-pressed", i === state.token && state.pinned ? "true" : "false");
        button.classList.toggle("mha-attn-chosen", i === state.token);
        if (i === state.token) button.setAttribute("aria-current", "true"); else button.removeAttribute("aria-current");
        button.setAttribute("tabindex", i === state.token ? "0" : "-1");
      });
      var s = scale();
      var column = state.direction === "to"
        ? " Weights to a token are its column of the matrix: each query's row sums to 1, a column need not." : "";
      scaleNote.textContent = (s.note || "A full box is weight 1.") + column;
      var count = headCount();
      var shownHeads = state.head === "all" ? Array.from({ length: count }, function (_, h) { return h; })
                                            : [Number(state.head)];
      heads.textContent = "";
      shownHeads.forEach(function (h) {
        var name = input.head_names[state.layer][h];
        var removed = input.removed.some(function (r) { return r[0] === state.layer && r[1] === h; });
        var panel = el("div", { "class": "mha-attn-head" + (removed ? " mha-attn-removed" : ""),
                                "data-layer": String(state.layer), "data-head": String(h) });
        panel.appendChild(el("p", { "class": "mha-attn-head-name" }, name + (removed ? " (removed from the model's output)" : "")));
        var strip = el("div", { "class": "mha-attn-strip", "aria-hidden": "true" });
        var values = tokens.map(function (_, j) { return weight(h, j); });
        values.forEach(function (w, j) {
          var cell = el("span", { "class": "mha-attn-cell" + (j === state.token ? " mha-attn-self" : ""),
                                  "data-key": String(j), "data-weight": String(w),
                                  title: "token " + j + ": " + fixed(w) });
          var bar = el("span", { "class": "mha-attn-bar" });
          barStyle(bar, w);
          var barBox = el("span", { "class": "mha-attn-barbox" });
          barBox.appendChild(bar);
          cell.appendChild(barBox);
          cell.appendChild(el("span", { "class": "mha-attn-char" }, shown(tokens[j])));
          strip.appendChild(cell);
        });
        panel.appendChild(strip);
        var text = name + ": " + topText(values);
        if (state.direction === "to") text += "; the column sums to " + fixed(values.reduce(function (a, b) { return a + b; }, 0));
        panel.appendChild(el("p", { "class": "mha-attn-top" }, text));
        heads.appendChild(panel);
      });
      var h = chosenHead();
      summary.textContent = "Token " + state.token + " " + spoken(tokens[state.token]) + (state.pinned ? " pinned" : "")
        + "; " + input.head_names[state.layer][h] + " " + topText(tokens.map(function (_, j) { return weight(h, j); }), 1) + ".";
      drawWhole();
      drawSteps();
      if (tableBox.open) drawTable();
      if (data.onSelect) data.onSelect(state.token);
    }

    // The largest weights, those that round to 0.000 left out (all but the first).
    function topText(values, top) {
      var tokens = current().tokens;
      var order = values.map(function (w, j) { return j; })
        .sort(function (a, b) { return values[b] - values[a] || a - b; }).slice(0, top || TOP)
        .filter(function (j, rank) { return rank === 0 || values[j] >= 0.0005; });
      return (state.direction === "from" ? "attends most to " : "most attended by ") + order.map(function (j) {
        return "token " + j + " " + spoken(tokens[j]) + " " + fixed(values[j]);
      }).join(", ");
    }

    function shade(w) {
      var s = scale();
      return Math.max(0, Math.min(1, Math.abs(w) / Math.max(Math.abs(s.lo), s.hi)));
    }

    var drawn = null; // which (input, layer) the thumbnails show, which head the matrix shows
    function drawWhole() {
      var input = current(), L = input.tokens.length, h = chosenHead();
      var layerKey = state.input + "/" + state.layer;
      if (!drawn || drawn.thumbs !== state.input) {
        thumbs.textContent = "";
        input.layers.forEach(function (heads_, l) {
          var row = el("div", { "class": "mha-attn-thumbrow" });
          heads_.forEach(function (m, hh) {
            var b = el("button", { type: "button", "class": "mha-attn-thumb", "data-layer": String(l), "data-head": String(hh),
                                   "aria-label": "L" + l + " H" + hh + ": " + input.head_names[l][hh] + ", show its matrix" });
            var c = el("canvas", { width: String(L), height: String(L), "aria-hidden": "true" });
            var ctx = c.getContext && c.getContext("2d");
            if (ctx) {
              var img = ctx.createImageData(L, L);
              for (var i = 0; i < L; i++) for (var j = 0; j < L; j++) {
                var p = 4 * (i * L + j), v = shade(m[i][j]);
                img.data[p] = 31 + (1 - v) * 215; img.data[p + 1] = 78 + (1 - v) * 168; img.data[p + 2] = 156 + (1 - v) * 90;
                img.data[p + 3] = 255;
              }
              ctx.putImageData(img, 0, 0);
            }
            b.appendChild(c);
            b.appendChild(el("span", {}, "L" + l + " H" + hh));
            b.addEventListener("click", function () {
              state.layer = l; state.focus = hh;
              if (state.head !== "all") state.head = hh;
              fillLayerAndHead();
              draw();
            });
            row.appendChild(b);
          });
          thumbs.appendChild(row);
        });
        drawn = { thumbs: state.input };
      }
      Array.prototype.forEach.call(thumbs.querySelectorAll(".mha-attn-thumb"), function (b) {
        b.setAttribute("aria-pressed", Number(b.dataset.layer) === state.layer && Number(b.dataset.head) === h ? "true" : "false");
      });
      var key = layerKey + "/" + h;
      if (drawn.matrix !== key) {
        matrixBox.textContent = "";
        var m = matrixOf(state.layer, h), size = Math.max(5, Math.min(16, Math.floor(300 / L)));
        matrixBox.appendChild(el("p", { "class": "mha-attn-head-name", id: id + "-mx" },
          input.head_names[state.layer][h] + ": query (row) \u00d7 key (column)"));
        var grid = el("div", { "class": "mha-attn-matrix", role: "grid", "aria-labelledby": id + "-mx",
                               style: "--mha-sq:" + size + "px" });
        // Written as markup (a few thousand cells: much faster than one element at a time), every
        // string from Python escaped; the shade in eleven steps, a class each.
        var names = input.tokens.map(function (t, j) { return j + " " + escape(spoken(t)); }), html = [];
        for (var i = 0; i < L; i++) {
          html.push('<div role="row" class="mha-attn-mrow">');
          for (var j = 0; j < L; j++) {
            var w = m[i][j];
            html.push('<span role="gridcell" tabindex="-1" class="mha-attn-s' + Math.round(10 * shade(w))
              + (w < 0 ? ' mha-attn-negative' : '') + '" data-q="' + i + '" data-k="' + j + '" data-weight="' + w
              + '" aria-label="query ' + names[i] + ', key ' + names[j] + ': ' + fixed(w) + '"></span>');
          }
          html.push("</div>");
        }
        grid.innerHTML = html.join("");
        grid.addEventListener("click", function (event) {
          var c = event.target.closest("[data-q]");
          if (c) cellPin(Number(c.dataset.q), Number(c.dataset.k), true);
        });
        grid.addEventListener("keydown", matrixKeys);
        grid.addEventListener("focusin", function (event) {
          var c = event.target.closest("[data-q]");
          if (c) readCell(Number(c.dataset.q), Number(c.dataset.k));
        });
        matrixBox.appendChild(grid);
        drawn.matrix = key;
      }
      var q = state.token, k = state.key === null ? q : state.key;
      Array.prototype.forEach.call(matrixBox.querySelectorAll("[role=row]"), function (row, i) {
        row.classList.toggle("mha-attn-mchosen", i === q);
      });
      var marked = matrixBox.querySelector(".mha-attn-pinned");
      if (marked) marked.classList.remove("mha-attn-pinned");
      if (state.key !== null && cellAt(q, state.key)) cellAt(q, state.key).classList.add("mha-attn-pinned");
      var old = matrixBox.querySelector("[tabindex='0']");
      if (old) old.setAttribute("tabindex", "-1");
      var now = cellAt(q, Math.min(k, L - 1));
      if (now) now.setAttribute("tabindex", "0");
      readCell(q, state.key === null ? null : state.key, true);
    }

    function cellAt(q, k) { return matrixBox.querySelector("[data-q='" + q + "'][data-k='" + k + "']"); }

    function readCell(q, k, quiet) {
      var input = current(), h = chosenHead();
      if (k === null) {
        readout.textContent = "Matrix: Tab to it, move with the arrow keys, Enter pins the query and takes the score apart.";
        return;
      }
      var w = matrixOf(state.layer, h)[q][k];
      readout.textContent = input.head_names[state.layer][h] + ", query " + q + " " + spoken(input.tokens[q]) + ", key " + k
        + " " + spoken(input.tokens[k]) + ": weight " + w.toFixed(5);
      readout.setAttribute("data-weight", String(w));
      if (!quiet) readout.setAttribute("aria-live", "polite");
    }

    function matrixKeys(event) {
      var c = event.target.closest("[data-q]");
      if (!c) return;
      var q = Number(c.dataset.q), k = Number(c.dataset.k), last = current().tokens.length - 1;
      var moves = { ArrowRight: [q, k + 1], ArrowLeft: [q, k - 1], ArrowDown: [q + 1, k], ArrowUp: [q - 1, k],
                    Home: [q, 0], End: [q, last] };
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        cellPin(q, k, true);
      } else if (event.key === "Escape") {
        cellPin(q, k, false);
      } else if (event.key in moves) {
        event.preventDefault();
        var to = moves[event.key], target = cellAt(Math.max(0, Math.min(last, to[0])), Math.max(0, Math.min(last, to[1])));
        c.setAttribute("tabindex", "-1");
        target.setAttribute("tabindex", "0");
        target.focus();
      }
    }

    function cellPin(q, k, on) {
      var again = state.pinned && state.token === q && state.key === k;
      state.pinned = on && !again;
      state.token = q;
      state.key = state.pinned ? k : null;
      draw();
      var c = cellAt(q, k);
      if (c) { c.setAttribute("tabindex", "0"); c.focus(); }
      if (state.pinned) readCell(q, k);
    }

    // One score taken apart, from the page's own pass: q.k, / sqrt(d_k), the row's softmax.
    function drawSteps() {
      steps.textContent = "";
      if (!data.explain || !state.pinned || state.key === null) return;
      var h = chosenHead(), q = state.token, k = state.key, tokens = current().tokens;
      var x = data.explain(state.layer, h, q, k);
      if (!x) return;
      steps.setAttribute("data-steps", JSON.stringify(x));
      steps.appendChild(el("p", { "class": "mha-attn-head-name" }, "One score taken apart: layer " + state.layer + " head " + h
        + ", query " + q + " " + spoken(tokens[q]) + ", key " + k + " " + spoken(tokens[k])));
      var list = el("ol", {});
      list.appendChild(el("li", {}, "q \u00b7 k = " + x.qk.toFixed(5) + " (the query's and the key's " + x.dk + " numbers of this head, multiplied and summed)"));
      list.appendChild(el("li", {}, "\u00f7 \u221a" + x.dk + " = " + Math.sqrt(x.dk).toFixed(4) + ": score " + x.scaled.toFixed(5)));
      list.appendChild(el("li", {}, "softmax over the row's " + x.scores.length + " scores (the keys up to the query; later ones are masked): "
        + "exp(score \u2212 max) \u00f7 sum = weight " + x.weights[k].toFixed(5)));
      steps.appendChild(list);
      var t = el("table", { "class": "mha-attn-rowtable" });
      t.appendChild(el("caption", {}, "The row's scores and weights"));
      var head = el("tr", {});
      ["key", "score", "weight"].forEach(function (n) { head.appendChild(el("th", { scope: "col" }, n)); });
      t.appendChild(head);
      x.scores.forEach(function (sc, j) {
        var tr = el("tr", j === k ? { "class": "mha-attn-mchosen" } : {});
        tr.appendChild(el("th", { scope: "row" }, j + " " + shown(tokens[j]) + (j === k ? " (this key)" : "")));
        tr.appendChild(el("td", {}, sc.toFixed(5)));
        tr.appendChild(el("td", {}, x.weights[j].toFixed(5)));
        t.appendChild(tr);
      });
      steps.appendChild(t);
    }

    function drawTable() {
      var input = current(), h = chosenHead(), m = matrixOf(state.layer, h), tokens = input.tokens;
      var old = tableBox.querySelector("table");
      if (old) old.remove();
      var t = el("table", { "class": "mha-attn-fulltable" });
      t.appendChild(el("caption", {}, input.head_names[state.layer][h] + ": row = query, column = key; each row sums to 1"));
      var head = el("tr", {});
      head.appendChild(el("th", { scope: "col" }, "query \\ key"));
      tokens.forEach(function (tok, j) { head.appendChild(el("th", { scope: "col" }, j + " " + shown(tok))); });
      t.appendChild(head);
      m.forEach(function (row, i) {
        var tr = el("tr", {});
        tr.appendChild(el("th", { scope: "row" }, i + " " + shown(tokens[i])));
        row.forEach(function (w) { tr.appendChild(el("td", {}, w.toFixed(3))); });
        t.appendChild(tr);
      });
      tableBox.appendChild(t);
    }

    inputSelect.addEventListener("change", function () {
      state.input = Number(inputSelect.value);
      drawn = null;
      fillLayerAndHead();
      fillTokens();
      draw();
    });
    layerSelect.addEventListener("change", function () {
      state.layer = Number(layerSelect.value);
      fillLayerAndHead();
      draw();
    });
    headSelect.addEventListener("change", function () {
      state.head = headSelect.value === "all" ? "all" : Number(headSelect.value);
      if (state.head !== "all") state.focus = state.head;
      draw();
    });

    fillLayerAndHead();
    fillTokens();
    draw();
    return { state: state, draw: draw };
  }

  function mountAll() {
    var roots = document.querySelectorAll("div.mha-attn:not([data-mounted])");
    Array.prototype.forEach.call(roots, function (root) {
      var source = root.querySelector("script.mha-attn-data");
      if (!source) return;
      try {
        render(root, JSON.parse(source.textContent));
      } catch (error) {
        root.textContent = "The attention view could not be drawn: " + error.message;
      }
    });
  }

  window.mhaAttention = { render: render, mountAll: mountAll, shown: shown };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mountAll);
  } else {
    mountAll();
  }
})();
