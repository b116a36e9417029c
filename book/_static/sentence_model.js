/* Chapter 8's sentence model, run in the page: the committed weights (lab/weights/sentences.pt,
   exported by scripts/export_sentence_model.py to sentence_model.json) and the forward pass of
   lab/language_model.py's CausalLM written out by hand: embedding plus sinusoidal positions,
   pre-norm blocks of multi-head attention (causal) and a GELU MLP, a final LayerNorm, the
   unembedding. It decodes one token at a time with a cache of keys and values, as `generate`
   does in Python; the arithmetic is float64 on the float32 weights, so its logits are within
   rounding of torch's, and greedy decoding picks the same tokens (tests/test_views_browser.py).

   Sampling with a temperature draws from the page's own seeded generator (mulberry32): the same
   seed gives the same text here, but not the text torch.multinomial draws in Python.

   The form reads its own fields (no browser validation): an empty field takes the default its
   label states, a field that does not apply (temperature and seed when greedy) is ignored, and
   every problem is named in the page. Under the text: the selected step's most likely next
   characters at T = 1 and at the temperature used, and the attention view, whose layer, head and
   direction survive a new Generate; a pinned query and key there show their score taken apart.

   window.mhaSentenceModel.load(json), .generate(model, ids, count, {temperature, seed}) (ids,
   weights, logits per step, explain(layer, head, query, key)), .probabilities(logits, T),
   .encode(model, text), .decode(model, ids); .mountAll() draws every <div class="mha-lm">. */
(function () {
  "use strict";
  if (window.mhaSentenceModel) {
    window.mhaSentenceModel.mountAll();
    return;
  }

  function floats(base64) {
    var bytes = atob(base64);
    var view = new DataView(new ArrayBuffer(bytes.length));
    for (var i = 0; i < bytes.length; i++) view.setUint8(i, bytes.charCodeAt(i));
    var out = new Float32Array(bytes.length / 4);
    for (var j = 0; j < out.length; j++) out[j] = view.getFloat32(4 * j, true); // little-endian, as exported
    return out;
  }

  function load(json) {
    var data = floats(json.data);
    var tensors = {};
    Object.keys(json.tensors).forEach(function (name) {
      var entry = json.tensors[name];
      var size = entry.shape.reduce(function (a, b) { return a * b; }, 1);
      tensors[name] = data.subarray(entry.offset, entry.offset + size);
    });
    return { config: json.config, alphabet: json.alphabet, context: json.context, t: tensors };
  }

  // erf to ~1e-15: its Taylor series below 3, the continued fraction of erfc above (GELU is exact-erf in torch).
  function erf(x) {
    var z = Math.abs(x);
    var result;
    if (z < 3) {
      var term = z, sum = z, n = 0;
      while (Math.abs(term) > 1e-17 * Math.abs(sum)) {
        n += 1;
        term *= -z * z / n;
        sum += term / (2 * n + 1);
      }
      result = 2 / Math.sqrt(Math.PI) * sum;
    } else if (z > 6) {
      result = 1;
    } else {
      var fraction = 0;
      for (var k = 60; k >= 1; k--) fraction = (k / 2) / (z + fraction);
      result = 1 - Math.exp(-z * z) / Math.sqrt(Math.PI) / (z + fraction);
    }
    return x < 0 ? -result : result;
  }

  function linear(x, weight, bias, inDim, outDim) { // nn.Linear: y = x W^T + b, W of shape (out, in)
    var y = new Float64Array(outDim);
    for (var o = 0; o < outDim; o++) {
      var s = bias[o], row = o * inDim;
      for (var i = 0; i < inDim; i++) s += weight[row + i] * x[i];
      y[o] = s;
    }
    return y;
  }

  function layerNorm(x, weight, bias) {
    var n = x.length, mean = 0, variance = 0;
    for (var i = 0; i < n; i++) mean += x[i];
    mean /= n;
    for (var j = 0; j < n; j++) variance += (x[j] - mean) * (x[j] - mean);
    variance /= n;
    var scale = 1 / Math.sqrt(variance + 1e-5), y = new Float64Array(n);
    for (var k = 0; k < n; k++) y[k] = (x[k] - mean) * scale * weight[k] + bias[k];
    return y;
  }

  function position(t, dim) { // solutions/language_model.sinusoidal_positions: interleaved sin, cos
    var pe = new Float64Array(dim);
    for (var i = 0; i < dim; i += 2) {
      var angle = t * Math.pow(10000, -i / dim);
      pe[i] = Math.fround(Math.sin(angle));
      pe[i + 1] = Math.fround(Math.cos(angle));
    }
    return pe;
  }

  function newCaches(model) {
    var caches = [];
    for (var l = 0; l < model.config.num_layers; l++) caches.push({ keys: [], values: [] });
    return caches;
  }

  // One token at position caches[0].keys.length: its next-token logits, per layer its query (for
  // explain) and, per layer and head, its attention weights over every position so far.
  function step(model, token, caches) {
    var c = model.config, t = model.t, d = c.d_model, H = c.num_heads, hd = d / H;
    var pos = caches[0].keys.length;
    var pe = position(pos, d), h = new Float64Array(d);
    for (var i = 0; i < d; i++) h[i] = t["embed.weight"][token * d + i] + pe[i];
    var rows = [], queries = [];
    for (var l = 0; l < c.num_layers; l++) {
      var p = "blocks." + l + ".";
      var a = layerNorm(h, t[p + "norm1.weight"], t[p + "norm1.bias"]);
      var q = linear(a, t[p + "attn.W_q.weight"], t[p + "attn.W_q.bias"], d, d);
      queries.push(q);
      var cache = caches[l];
      cache.keys.push(linear(a, t[p + "attn.W_k.weight"], t[p + "attn.W_k.bias"], d, d));
      cache.values.push(linear(a, t[p + "attn.W_v.weight"], t[p + "attn.W_v.bias"], d, d));
      var merged = new Float64Array(d), layerRows = [], scale = Math.sqrt(hd);
      for (var head = 0; head < H; head++) {
        var off = head * hd, scores = new Float64Array(pos + 1), max = -Infinity;
        for (var j = 0; j <= pos; j++) {
          var s = 0, key = cache.keys[j];
          for (var e = 0; e < hd; e++) s += (q[off + e] / scale) * key[off + e];
          scores[j] = s;
          if (s > max) max = s;
        }
        var total = 0;
        for (var j2 = 0; j2 <= pos; j2++) { scores[j2] = Math.exp(scores[j2] - max); total += scores[j2]; }
        for (var j3 = 0; j3 <= pos; j3++) {
          var w = scores[j3] / total, value = cache.values[j3];
          scores[j3] = w;
          for (var e2 = 0; e2 < hd; e2++) merged[off + e2] += w * value[off + e2];
        }
        layerRows.push(scores);
      }
      rows.push(layerRows);
      var attended = linear(merged, t[p + "attn.W_o.weight"], t[p + "attn.W_o.bias"], d, d);
      for (var i2 = 0; i2 < d; i2++) h[i2] += attended[i2];
      if (c.d_ff) {
        var b = layerNorm(h, t[p + "norm2.weight"], t[p + "norm2.bias"]);
        var hidden = linear(b, t[p + "mlp.0.weight"], t[p + "mlp.0.bias"], d, c.d_ff);
        for (var f = 0; f < c.d_ff; f++) hidden[f] = 0.5 * hidden[f] * (1 + erf(hidden[f] / Math.SQRT2));
        var out = linear(hidden, t[p + "mlp.2.weight"], t[p + "mlp.2.bias"], c.d_ff, d);
        for (var i3 = 0; i3 < d; i3++) h[i3] += out[i3];
      }
    }
    var logits = linear(layerNorm(h, t["norm.weight"], t["norm.bias"]), t["unembed.weight"], t["unembed.bias"],
                        d, c.vocab_size);
    return { logits: logits, rows: rows, queries: queries };
  }

  // softmax(logits / T), in float64, as Python's torch.softmax(logits / T, -1).
  function probabilities(logits, temperature) {
    var max = -Infinity, total = 0, out = new Float64Array(logits.length);
    for (var i = 0; i < logits.length; i++) max = Math.max(max, logits[i] / temperature);
    for (var j = 0; j < logits.length; j++) { out[j] = Math.exp(logits[j] / temperature - max); total += out[j]; }
    for (var k = 0; k < logits.length; k++) out[k] /= total;
    return out;
  }

  function mulberry32(seed) {
    var a = seed >>> 0;
    return function () {
      a = (a + 0x6D2B79F5) >>> 0;
      var x = Math.imul(a ^ (a >>> 15), 1 | a);
      x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
      return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
    };
  }

  function choose(logits, temperature, random) {
    var best = 0;
    for (var i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i; // the first of equal maxima, as torch.argmax
    if (!temperature) return best;
    var probs = new Float64Array(logits.length), total = 0;
    for (var j = 0; j < logits.length; j++) { probs[j] = Math.exp((logits[j] - logits[best]) / temperature); total += probs[j]; }
    var u = random() * total;
    for (var k = 0; k < probs.length; k++) { u -= probs[k]; if (u < 0) return k; }
    return probs.length - 1;
  }

  // ids: the prompt's token ids; returns every id (prompt and `count` new ones) and the attention
  // weights of the whole text, weights[layer][head][query][key] (zero above the diagonal).
  function generate(model, ids, count, options) {
    var temperature = (options && options.temperature) || 0;
    var random = mulberry32((options && options.seed) || 0);
    var caches = newCaches(model), tokens = ids.slice(), rows = [], result = null, logits = [], queries = [];
    function read(id) {
      result = step(model, id, caches);
      rows.push(result.rows);
      logits.push(result.logits);
      queries.push(result.queries);
    }
    tokens.forEach(read);
    for (var n = 0; n < count; n++) {
      var next = choose(result.logits, temperature, random);
      tokens.push(next);
      read(next); // the last one too: its attention row completes the view
    }
    var L = tokens.length, c = model.config, weights = [];
    for (var l = 0; l < c.num_layers; l++) {
      var layer = [];
      for (var h = 0; h < c.num_heads; h++) {
        var matrix = [];
        for (var i = 0; i < L; i++) {
          var row = new Array(L).fill(0);
          for (var j = 0; j <= i; j++) row[j] = rows[i][l][h][j];
          matrix.push(row);
        }
        layer.push(matrix);
      }
      weights.push(layer);
    }
    // One score of layer l, head h taken apart: query i's q . k_j for every key j <= i, / sqrt(d_k),
    // the row's softmax; the numbers of this pass (the cached keys), not recomputed otherwise.
    function explain(l, h, i, j) {
      if (j > i) return null;
      var dk = c.d_model / c.num_heads, off = h * dk, q = queries[i][l], qks = [], scores = [], max = -Infinity;
      for (var key = 0; key <= i; key++) {
        var s = 0, k = caches[l].keys[key];
        for (var e = 0; e < dk; e++) s += q[off + e] * k[off + e];
        qks.push(s);
        scores.push(s / Math.sqrt(dk));
        max = Math.max(max, s / Math.sqrt(dk));
      }
      var ex = scores.map(function (s) { return Math.exp(s - max); }), total = ex.reduce(function (a, b) { return a + b; }, 0);
      return { dk: dk, qk: qks[j], scaled: scores[j], scores: scores, weights: ex.map(function (v) { return v / total; }) };
    }
    return { ids: tokens, weights: weights, logits: logits, explain: explain };
  }

  function encode(model, text) {
    var unknown = [];
    var ids = Array.from(text).map(function (ch) {
      var i = model.alphabet.indexOf(ch);
      if (i < 0 && unknown.indexOf(ch) < 0) unknown.push(ch);
      return i;
    });
    if (unknown.length) {
      throw new Error("the prompt has characters outside the model's alphabet: " + unknown.map(function (ch) { return JSON.stringify(ch); }).join(", ")
                      + ". It knows only these " + model.alphabet.length + ": " + JSON.stringify(model.alphabet)
                      + " (the lower-case letters of its grammar, the space and the full stop)");
    }
    return ids;
  }

  function decode(model, ids) {
    return ids.map(function (i) { return model.alphabet[i]; }).join("");
  }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) { node.setAttribute(name, attrs[name]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function field(parent, text, control) {
    var label = el("label", {});
    label.appendChild(document.createTextNode(text + " "));
    label.appendChild(control);
    parent.appendChild(label);
    return control;
  }

  var DEFAULT_TEMPERATURE = 0.8, DEFAULT_SEED = 0, MAX_TEMPERATURE = 5, MAX_SEED = 4294967295, TOP_K = 5;

  // A field's number, read by the page (no browser validation: its messages are the page's own).
  // Empty: the stated default. Returns {value, given} or throws a message that names the field.
  function number(input, name, fallback, whole, low, high, range) {
    var text = input.value.trim().replace(/\u2212/g, "-").replace(",", ".");
    if (text === "") return { value: fallback, given: false };
    var value = Number(text);
    if (!Number.isFinite(value)) throw new Error(name + " " + JSON.stringify(input.value) + " is not a number: " + range);
    if (whole && !Number.isInteger(value)) throw new Error(name + " " + text + " is not a whole number: " + range);
    if (!(value >= low && value <= high)) throw new Error(name + " " + text + " is out of range: " + range);
    return { value: value, given: true };
  }

  function render(root, model, defaults) {
    root.textContent = "";
    root.setAttribute("data-mounted", "1");
    var box = el("div", { "class": "mha-lm-box", role: "group", "aria-label": "the sentence model, running in this page" });
    root.appendChild(box);
    box.appendChild(el("p", { "class": "mha-attn-title" },
      "The sentence model of this chapter, running in your browser (" + model.parameters.toLocaleString("en") + " parameters)"));
    var form = el("form", { "class": "mha-lm-controls", novalidate: "" });
    box.appendChild(form);
    var prompt = field(form, "Prompt", el("input", { type: "text", value: defaults.prompt, size: "24", spellcheck: "false",
                                                     autocomplete: "off", "data-control": "prompt" }));
    var mode = field(form, "Decoding", el("select", { "data-control": "mode" }));
    mode.appendChild(el("option", { value: "greedy" }, "greedy (the most likely character)"));
    mode.appendChild(el("option", { value: "sample" }, "sample with a temperature"));
    var temperature = field(form, "Temperature (sampling only; empty: " + DEFAULT_TEMPERATURE + ")",
                            el("input", { type: "text", inputmode: "decimal", size: "5", value: String(DEFAULT_TEMPERATURE),
                                          "data-control": "temperature" }));
    var seed = field(form, "Seed (sampling only; empty: " + DEFAULT_SEED + ")",
                     el("input", { type: "text", inputmode: "numeric", size: "10", value: String(DEFAULT_SEED), "data-control": "seed" }));
    var count = field(form, "New characters (empty: " + defaults.count + ")",
                      el("input", { type: "text", inputmode: "numeric", size: "4", value: String(defaults.count), "data-control": "count" }));
    form.appendChild(el("button", { type: "submit", "data-control": "generate" }, "Generate"));
    var output = el("p", { "class": "mha-lm-output", "aria-live": "polite" });
    box.appendChild(output);
    var next = el("div", { "class": "mha-lm-next" });
    box.appendChild(next);
    var view = el("div", { "class": "mha-attn" });
    box.appendChild(view);
    var handle = null; // the attention view's state survives a new Generate: layer, head, direction

    function read() {
      var problems = [], sampling = mode.value === "sample", settings = {};
      function attempt(fn) { try { return fn(); } catch (error) { problems.push(error.message); return null; } }
      settings.ids = attempt(function () {
        var ids = encode(model, prompt.value);
        if (!ids.length) throw new Error("the prompt is empty: type at least one character");
        return ids;
      });
      settings.count = attempt(function () {
        return number(count, "New characters", defaults.count, true, 1, model.context - 1,
                      "a whole number from 1 to " + (model.context - 1));
      });
      if (sampling) { // in greedy mode the sampling fields do not apply, whatever they hold
        settings.temperature = attempt(function () {
          return number(temperature, "Temperature", DEFAULT_TEMPERATURE, false, Number.MIN_VALUE, MAX_TEMPERATURE,
                        "a number above 0 and at most " + MAX_TEMPERATURE + " (e.g. 0.33)");
        });
        settings.seed = attempt(function () {
          return number(seed, "Seed", DEFAULT_SEED, true, 0, MAX_SEED, "a whole number from 0 to " + MAX_SEED);
        });
      }
      if (settings.ids && settings.count && settings.ids.length + settings.count.value > model.context) {
        problems.push("the prompt and the new characters make " + (settings.ids.length + settings.count.value)
                      + " positions; the model was trained on " + model.context + ": shorten the prompt or ask for fewer characters");
      }
      settings.problems = problems;
      settings.sampling = sampling;
      return settings;
    }

    function run() {
      output.textContent = "";
      output.removeAttribute("data-text");
      output.removeAttribute("data-ids");
      var s = read();
      if (s.problems.length) {
        // The last text and its views are gone: nothing on the page belongs to settings that failed.
        if (handle) handle = { state: handle.state };
        view.textContent = "";
        view.removeAttribute("data-mounted");
        next.textContent = "";
        var alert = el("div", { "class": "mha-lm-error", role: "alert" });
        s.problems.forEach(function (p) { alert.appendChild(el("p", {}, p)); });
        output.appendChild(alert);
        return;
      }
      var temp = s.sampling ? s.temperature.value : 0, seedValue = s.sampling ? s.seed.value : 0;
      var result = generate(model, s.ids, s.count.value, { temperature: temp, seed: seedValue });
      var text = decode(model, result.ids);
      output.setAttribute("data-text", text);
      output.setAttribute("data-ids", JSON.stringify(result.ids));
      output.setAttribute("data-temperature", String(temp));
      var label = s.sampling
        ? "Sampled (T = " + temp + (s.temperature.given ? "" : ", the default") + ", seed " + seedValue
          + (s.seed.given ? "" : ", the default") + "): "
        : "Greedy: ";
      output.appendChild(document.createTextNode(label));
      output.appendChild(el("span", { "class": "mha-lm-prompt" }, prompt.value));
      output.appendChild(document.createTextNode(text.slice(prompt.value.length)));
      var layers = result.weights, promptLength = s.ids.length;
      handle = window.mhaAttention.render(view, {
        title: "Attention of each step (the prompt is underlined above; a token's weights 'from' it are those of the step that read it)",
        initial: handle && handle.state,
        explain: result.explain,
        onSelect: function (i) { showNext(result, i, promptLength, temp); },
        inputs: [{ label: "generated text", tokens: Array.from(text), layers: layers,
                   layer_names: layers.map(function (_, l) { return "layer " + l; }),
                   head_names: layers.map(function (heads, l) { return heads.map(function (_, h) { return "layer " + l + " head " + h; }); }),
                   removed: [] }]
      });
    }

    // The step that read token i: its top-k next characters at T = 1 and at the temperature used.
    function showNext(result, i, promptLength, temp) {
      next.textContent = "";
      var p1 = probabilities(result.logits[i], 1), pt = temp ? probabilities(result.logits[i], temp) : null;
      var order = Array.from(p1.keys()).sort(function (a, b) { return p1[b] - p1[a] || a - b; }).slice(0, TOP_K);
      var following = i + 1 < result.ids.length ? result.ids[i + 1] : null;
      var what = following === null ? "the text ends here (no character was drawn)"
        : (i + 1 < promptLength ? "the next character is the prompt's: " : (temp ? "sampled: " : "chosen (the most likely): "))
          + JSON.stringify(model.alphabet[following]);
      var t = el("table", { "data-step": String(i), "data-chosen": following === null ? "" : String(following) });
      t.appendChild(el("caption", {}, "Next character after step " + i + " (" + JSON.stringify(decode(model, result.ids.slice(0, i + 1)).slice(-12))
        + "): the " + TOP_K + " most likely; " + what));
      var head = el("tr", {});
      ["character", "probability at T = 1"].concat(temp ? ["at T = " + temp] : []).forEach(function (n) {
        head.appendChild(el("th", { scope: "col" }, n));
      });
      t.appendChild(head);
      order.forEach(function (id) {
        var tr = el("tr", { "data-id": String(id), "data-p1": String(p1[id]) });
        if (pt) tr.setAttribute("data-pt", String(pt[id]));
        tr.appendChild(el("th", { scope: "row" }, window.mhaAttention.shown(model.alphabet[id]) + (id === following ? " \u2190" : "")));
        [p1].concat(pt ? [pt] : []).forEach(function (p) {
          var td = el("td", {}), barBox = el("span", { "class": "mha-lm-pbox", "aria-hidden": "true" });
          var bar = el("span", { "class": "mha-lm-pbar" });
          bar.style.width = (100 * p[id]).toFixed(1) + "%";
          barBox.appendChild(bar);
          td.appendChild(barBox);
          td.appendChild(document.createTextNode(p[id].toFixed(4)));
          tr.appendChild(td);
        });
        t.appendChild(tr);
      });
      next.appendChild(t);
      if (following !== null && order.indexOf(following) < 0) {
        next.appendChild(el("p", {}, JSON.stringify(model.alphabet[following]) + " (the next character) is outside the top "
          + TOP_K + ": probability " + p1[following].toFixed(4) + " at T = 1" + (pt ? ", " + pt[following].toFixed(4) + " at T = " + temp : "")));
      }
    }

    form.addEventListener("submit", function (event) { event.preventDefault(); run(); });
    run();
  }

  function mountAll() {
    var roots = document.querySelectorAll("div.mha-lm:not([data-mounted])");
    Array.prototype.forEach.call(roots, function (root) {
      var source = root.querySelector("script.mha-lm-model");
      if (!source) return;
      try {
        var json = JSON.parse(source.textContent);
        var model = load(json);
        model.parameters = json.parameters;
        render(root, model, { prompt: root.getAttribute("data-prompt") || "the ",
                              count: Number(root.getAttribute("data-count") || 60) });
      } catch (error) {
        root.textContent = "The sentence model could not run: " + error.message;
      }
    });
  }

  window.mhaSentenceModel = { load: load, generate: generate, encode: encode, decode: decode, erf: erf,
                             probabilities: probabilities, mountAll: mountAll };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mountAll);
  } else {
    mountAll();
  }
})();
