/* Chapter 8's sentence model, run in the page: the committed weights (lab/weights/sentences.pt,
   exported by scripts/export_sentence_model.py to sentence_model.json) and the forward pass of
   lab/language_model.py's CausalLM written out by hand: embedding plus sinusoidal positions,
   pre-norm blocks of multi-head attention (causal) and a GELU MLP, a final LayerNorm, the
   unembedding. It decodes one token at a time with a cache of keys and values, as `generate`
   does in Python; the arithmetic is float64 on the float32 weights, so its logits are within
   rounding of torch's, and greedy decoding picks the same tokens (tests/test_views_browser.py).

   Sampling with a temperature draws from the page's own seeded generator (mulberry32): the same
   seed gives the same text here, but not the text torch.multinomial draws in Python.

   window.mhaSentenceModel.load(json), .generate(model, ids, count, {temperature, seed}),
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

  // One token at position caches[0].keys.length: its next-token logits and, per layer and head,
  // its attention weights over every position so far.
  function step(model, token, caches) {
    var c = model.config, t = model.t, d = c.d_model, H = c.num_heads, hd = d / H;
    var pos = caches[0].keys.length;
    var pe = position(pos, d), h = new Float64Array(d);
    for (var i = 0; i < d; i++) h[i] = t["embed.weight"][token * d + i] + pe[i];
    var rows = [];
    for (var l = 0; l < c.num_layers; l++) {
      var p = "blocks." + l + ".";
      var a = layerNorm(h, t[p + "norm1.weight"], t[p + "norm1.bias"]);
      var q = linear(a, t[p + "attn.W_q.weight"], t[p + "attn.W_q.bias"], d, d);
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
    return { logits: logits, rows: rows };
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
    var caches = newCaches(model), tokens = ids.slice(), rows = [], result = null;
    tokens.forEach(function (id) { result = step(model, id, caches); rows.push(result.rows); });
    for (var n = 0; n < count; n++) {
      var next = choose(result.logits, temperature, random);
      tokens.push(next);
      result = step(model, next, caches); // the last one too: its attention row completes the view
      rows.push(result.rows);
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
    return { ids: tokens, weights: weights };
  }

  function encode(model, text) {
    var unknown = [];
    var ids = Array.from(text).map(function (ch) {
      var i = model.alphabet.indexOf(ch);
      if (i < 0 && unknown.indexOf(ch) < 0) unknown.push(ch);
      return i;
    });
    if (unknown.length) {
      throw new Error("characters outside the model's alphabet: " + unknown.map(function (ch) { return JSON.stringify(ch); }).join(", ")
                      + " (it knows lower-case letters of its grammar, the space and the full stop)");
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

  function render(root, model, defaults) {
    root.textContent = "";
    root.setAttribute("data-mounted", "1");
    var box = el("div", { "class": "mha-lm-box", role: "group", "aria-label": "the sentence model, running in this page" });
    root.appendChild(box);
    box.appendChild(el("p", { "class": "mha-attn-title" },
      "The sentence model of this chapter, running in your browser (" + model.parameters.toLocaleString("en") + " parameters)"));
    var form = el("form", { "class": "mha-lm-controls" });
    box.appendChild(form);
    var prompt = field(form, "Prompt", el("input", { type: "text", value: defaults.prompt, size: "24", spellcheck: "false",
                                                     "data-control": "prompt" }));
    var mode = field(form, "Decoding", el("select", { "data-control": "mode" }));
    mode.appendChild(el("option", { value: "greedy" }, "greedy (the most likely character)"));
    mode.appendChild(el("option", { value: "sample" }, "sample with a temperature"));
    var temperature = field(form, "Temperature (sampling)", el("input", { type: "number", min: "0.05", max: "5", step: "0.05",
                                                               value: "0.8", "data-control": "temperature" }));
    var seed = field(form, "Seed (sampling)", el("input", { type: "number", min: "0", max: "4294967295", step: "1", value: "0",
                                                 "data-control": "seed" }));
    var count = field(form, "New characters", el("input", { type: "number", min: "1", max: String(model.context - 1),
                                                            step: "1", value: String(defaults.count), "data-control": "count" }));
    form.appendChild(el("button", { type: "submit", "data-control": "generate" }, "Generate"));
    var output = el("p", { "class": "mha-lm-output", "aria-live": "polite" });
    box.appendChild(output);
    var view = el("div", { "class": "mha-attn" });
    box.appendChild(view);

    function run() {
      output.textContent = "";
      output.removeAttribute("data-text");
      var ids, n = Number(count.value), temp = mode.value === "greedy" ? 0 : Number(temperature.value);
      try {
        ids = encode(model, prompt.value);
        if (!ids.length) throw new Error("the prompt is empty: type at least one character");
        if (!(Number.isInteger(n) && n >= 1)) throw new Error("new characters: a whole number of at least 1");
        if (ids.length + n > model.context) {
          throw new Error("prompt and new characters make " + (ids.length + n) + " positions; the model was trained on "
                          + model.context + ": shorten the prompt or ask for fewer characters");
        }
        if (temp && !(temp > 0 && temp <= 5)) throw new Error("temperature: a number above 0 and at most 5");
      } catch (error) {
        output.appendChild(el("span", { "class": "mha-lm-error", role: "alert" }, error.message));
        return;
      }
      var result = generate(model, ids, n, { temperature: temp, seed: Number(seed.value) });
      var text = decode(model, result.ids);
      output.setAttribute("data-text", text);
      output.setAttribute("data-ids", JSON.stringify(result.ids));
      output.appendChild(document.createTextNode(mode.value === "greedy" ? "Greedy: " : "Sampled (T = " + temp + ", seed " + seed.value + "): "));
      output.appendChild(el("span", { "class": "mha-lm-prompt" }, prompt.value));
      output.appendChild(document.createTextNode(text.slice(prompt.value.length)));
      var layers = result.weights;
      window.mhaAttention.render(view, {
        title: "Attention of each step (the prompt is underlined above; a token's weights 'from' it are those of the step that read it)",
        inputs: [{ label: "generated text", tokens: Array.from(text), layers: layers,
                   layer_names: layers.map(function (_, l) { return "layer " + l; }),
                   head_names: layers.map(function (heads, l) { return heads.map(function (_, h) { return "layer " + l + " head " + h; }); }),
                   removed: [] }]
      });
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

  window.mhaSentenceModel = { load: load, generate: generate, encode: encode, decode: decode, erf: erf, mountAll: mountAll };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mountAll);
  } else {
    mountAll();
  }
})();
