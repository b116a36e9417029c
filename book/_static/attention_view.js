/* The course's attention view: pick an input, a layer and a head; hover or focus a token and
   each head's weights from it (its query row) or to it (its key column) show as bars under the
   tokens, and as text (the largest weights, with their values).

   No library and no network: lab/views.py writes the data as JSON into the page, next to a
   <div class="mha-attn">, and this script (inlined by the same cell, or loaded once) draws it.
   Everything that came from Python (token strings included) goes in as text, never as HTML.

   window.mhaAttention.render(element, data) draws (or redraws) one view;
   window.mhaAttention.mountAll() draws every <div class="mha-attn"> of the page not yet drawn. */
(function () {
  "use strict";
  if (window.mhaAttention) {
    window.mhaAttention.mountAll();
    return;
  }
  var counter = 0;
  var TOP = 3; // weights spelled out per head

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) { node.setAttribute(name, attrs[name]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A token as the reader sees it: a space at either end (a character model's " ", a word
  // piece's " cat") is drawn as the open-box sign, an empty string as ∅.
  function shown(token) {
    if (token === "") return "\u2205";
    return String(token).replace(/^ +| +$/g, function (spaces) { return spaces.replace(/ /g, "\u2423"); });
  }

  function option(select, value, text) {
    var o = el("option", { value: String(value) }, text);
    select.appendChild(o);
    return o;
  }

  function labelled(text, control) {
    var label = el("label", { "class": "mha-attn-control" });
    label.appendChild(el("span", {}, text + " "));
    label.appendChild(control);
    return label;
  }

  function render(root, data) {
    var id = "mha-attn-" + (++counter);
    root.textContent = "";
    root.setAttribute("data-mounted", "1");
    var state = { input: 0, layer: 0, head: "all", direction: "from", token: null };
    var inputs = data.inputs;

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
      "Hover or focus a token; with the keyboard, Tab to the tokens, then the arrow keys, Home and End move along them."));
    var tokenBar = el("div", { "class": "mha-attn-tokens", role: "toolbar", "aria-label": "tokens",
                               "aria-describedby": id + "-help" });
    box.appendChild(tokenBar);
    var heads = el("div", { "class": "mha-attn-heads" });
    box.appendChild(heads);
    var summary = el("p", { "class": "mha-attn-summary", "aria-live": "polite" });
    box.appendChild(summary);

    function current() { return inputs[state.input]; }

    function fillLayerAndHead() {
      var input = current();
      layerSelect.textContent = "";
      input.layers.forEach(function (_, l) { option(layerSelect, l, input.layer_names[l]); });
      state.layer = Math.min(state.layer, input.layers.length - 1);
      layerSelect.value = String(state.layer);
      headSelect.textContent = "";
      var count = input.layers[state.layer].length;
      if (count > 1) option(headSelect, "all", "all " + count + " heads");
      for (var h = 0; h < count; h++) option(headSelect, h, input.head_names[state.layer][h]);
      if (state.head !== "all" && state.head >= count) state.head = "all";
      if (count === 1) state.head = 0;
      headSelect.value = String(state.head);
    }

    function fillTokens() {
      var tokens = current().tokens;
      tokenBar.textContent = "";
      if (state.token === null || state.token >= tokens.length) state.token = tokens.length - 1;
      tokens.forEach(function (token, i) {
        var button = el("button", { type: "button", "class": "mha-attn-token", "data-index": String(i),
                                    "aria-label": "token " + i + ": " + (token === " " ? "space" : token),
                                    tabindex: i === state.token ? "0" : "-1" }, shown(token));
        button.addEventListener("mouseenter", function () { select(i, false); });
        button.addEventListener("focus", function () { select(i, false); });
        button.addEventListener("click", function () { select(i, true); });
        tokenBar.appendChild(button);
      });
    }

    tokenBar.addEventListener("keydown", function (event) {
      var last = current().tokens.length - 1;
      var moves = { ArrowRight: state.token + 1, ArrowDown: state.token + 1, ArrowLeft: state.token - 1,
                    ArrowUp: state.token - 1, Home: 0, End: last };
      if (!(event.key in moves)) return;
      event.preventDefault();
      select(Math.max(0, Math.min(last, moves[event.key])), true);
    });

    function select(i, focus) {
      if (i !== state.token) {
        state.token = i;
        draw();
      }
      if (focus) tokenBar.children[i].focus();
    }

    // (query, key) weight of head h in the current layer, seen from the selected token.
    function weight(head, j) {
      var matrix = current().layers[state.layer][head];
      var i = state.token;
      return state.direction === "from" ? matrix[i][j] : matrix[j][i];
    }

    function draw() {
      var input = current();
      var tokens = input.tokens;
      Array.prototype.forEach.call(tokenBar.children, function (button, i) {
        var on = i === state.token;
        button.setAttribute("aria-pressed", on ? "true" : "false");
        button.setAttribute("tabindex", on ? "0" : "-1");
      });
      var count = input.layers[state.layer].length;
      var shownHeads = state.head === "all" ? Array.from({ length: count }, function (_, h) { return h; })
                                            : [Number(state.head)];
      heads.textContent = "";
      var said = [];
      var where = "token " + state.token + " " + JSON.stringify(tokens[state.token]);
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
                                  title: "token " + j + ": " + w.toFixed(3) });
          var bar = el("span", { "class": "mha-attn-bar" });
          bar.style.height = (100 * Math.max(0, Math.min(1, w))).toFixed(1) + "%";
          var barBox = el("span", { "class": "mha-attn-barbox" });
          barBox.appendChild(bar);
          cell.appendChild(barBox);
          cell.appendChild(el("span", { "class": "mha-attn-char" }, shown(tokens[j])));
          strip.appendChild(cell);
        });
        panel.appendChild(strip);
        // The largest weights, those that round to 0.000 left out (all but the first).
        var order = values.map(function (w, j) { return j; })
          .sort(function (a, b) { return values[b] - values[a] || a - b; }).slice(0, TOP)
          .filter(function (j, rank) { return rank === 0 || values[j] >= 0.0005; });
        var top = order.map(function (j) {
          return "token " + j + " " + JSON.stringify(tokens[j]) + " " + values[j].toFixed(3);
        }).join(", ");
        var verb = state.direction === "from" ? "attends most to " : "most attended by ";
        var text = el("p", { "class": "mha-attn-top" }, name + ": " + verb + top);
        panel.appendChild(text);
        said.push(name + ": " + top);
        heads.appendChild(panel);
      });
      summary.textContent = input.layer_names[state.layer] + ", weights " + state.direction + " " + where + ". "
        + said.join("; ") + ".";
    }

    inputSelect.addEventListener("change", function () {
      state.input = Number(inputSelect.value);
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

  window.mhaAttention = { render: render, mountAll: mountAll };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mountAll);
  } else {
    mountAll();
  }
})();
