/* signal-eval HTML report: case table, timelines, pinned assertions, state inspector.
   Plain ES2020, no dependencies, no network. The summary is server-rendered HTML;
   this script adds what needs interaction. Pure helpers are exposed as window.SE. */
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("se-data").textContent);
  var detailsCache = null;
  function details() {  // signals are parsed the first time a timeline opens
    if (detailsCache === null) detailsCache = JSON.parse(document.getElementById("se-details").textContent);
    return detailsCache;
  }

  // -- DOM helper ---------------------------------------------------------------------------
  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = v;
      else if (k === "cls") node.className = v;
      else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return node;
  }
  var SVGNS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs) {
    var node = document.createElementNS(SVGNS, tag);
    for (var k in attrs) node.setAttribute(k, attrs[k]);
    return node;
  }
  function pretty(value, limit) {
    var text = value === undefined ? "undefined" : JSON.stringify(value, null, 2);
    limit = limit || 20000;
    return text.length > limit ? text.slice(0, limit) + "\n… (" + (text.length - limit) + " more chars)" : text;
  }
  function fmtAxis(v, span) {  // enough decimals to tell five ticks apart
    var places = span >= 50 ? 0 : span >= 5 ? 1 : span >= 0.5 ? 2 : 3;
    return span >= 50000 ? (v / 1000).toFixed(1) + " s" : v.toFixed(places) + " ms";
  }
  function fmtInt(v) { return Math.round(v).toLocaleString("en-US"); }
  function fmtMs(v) { return fmtInt(v) + " ms"; }

  // -- the engine's derived views, mirrored (signals.py, patterns.py) -------------------------
  function globRe(pattern) {  // '*' = any run without ':', '**' = anything; whole name
    var body = pattern.split(/(\*\*|\*)/).map(function (part) {
      if (part === "**") return "[\\s\\S]*";
      if (part === "*") return "[^:]*";
      return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    }).join("");
    return new RegExp("^(?:" + body + ")$");
  }
  function parsePath(path) {  // patterns.parse_path: every string is a path, [x] means .x
    if (!path) return [];
    var dotted = path.replace(/\[([^\[\]]*)\]/g, ".$1");
    if (/^\[[^\[\]]*\]/.test(path)) dotted = dotted.slice(1);
    return dotted.split(".");
  }
  function asIndex(token, length) {  // canonical non-negative integers only: not -1, not 01
    if (!/^(?:0|[1-9][0-9]{0,17})$/.test(token)) return null;
    var i = parseInt(token, 10);
    return i < length ? i : null;
  }
  function isMapping(v) { return v !== null && typeof v === "object" && !Array.isArray(v); }
  function setTokens(value, tokens, next) {
    if (!tokens.length) return next;
    var head = tokens[0], rest = tokens.slice(1);
    if (Array.isArray(value)) {
      var index = asIndex(head, value.length);
      if (index !== null) { var copy = value.slice(); copy[index] = setTokens(value[index], rest, next); return copy; }
      if (String(head) === String(value.length)) return value.concat([setTokens(null, rest, next)]);
    }
    var out = isMapping(value) ? Object.assign({}, value) : {};
    out[String(head)] = setTokens(out[String(head)], rest, next);
    return out;
  }
  function stateWrites(sig) {
    var name = sig.name;
    if (!/^state:/.test(name) || !/:changed$/.test(name) && name !== "state:changed") return [];
    var key = name === "state:changed" ? "" : name.slice(6, -8);
    var p = sig.payload;
    if (!isMapping(p)) return key ? [[key, p === undefined ? null : p]] : [];
    var value = p.newValue === undefined ? null : p.newValue;
    if (key === "batch" && Array.isArray(value)) {
      return value.filter(function (it) { return isMapping(it) && it.path; })
        .map(function (it) { return [String(it.path), it.newValue === undefined ? null : it.newValue]; });
    }
    if (typeof p.path === "string" && p.path) return [[p.path, value]];
    if (typeof p.key === "string" && p.key) return [[p.key, value]];
    return key ? [[key, value]] : [];
  }
  function initialState(signals) {
    for (var i = 0; i < signals.length; i++) {
      if (signals[i].name === "harness:start") {
        var p = signals[i].payload;
        return isMapping(p) && p.state !== undefined && p.state !== null ? p.state : null;
      }
    }
    return null;
  }
  function stateAfter(signals, index) {  // Trace.state_after: initial state plus every write
    var state = initialState(signals);
    for (var i = 0; i <= index && i < signals.length; i++) {
      var writes = stateWrites(signals[i]);
      for (var w = 0; w < writes.length; w++) {
        state = setTokens(state, parsePath(writes[w][0]), writes[w][1]);
      }
    }
    return state;
  }
  function flatten(value, prefix, out) {
    if (isMapping(value) && Object.keys(value).length) {
      for (var k in value) flatten(value[k], prefix ? prefix + "." + k : k, out);
    } else if (Array.isArray(value) && value.length) {
      value.forEach(function (v, i) { flatten(v, prefix + "[" + i + "]", out); });
    } else out[prefix || "(root)"] = JSON.stringify(value);
    return out;
  }
  function diffStates(before, after) {  // [{kind: add|del|chg, path, before, after}]
    var a = flatten(before, "", {}), b = flatten(after, "", {}), out = [];
    for (var k in b) {
      if (!(k in a)) out.push({kind: "add", path: k, after: b[k]});
      else if (a[k] !== b[k]) out.push({kind: "chg", path: k, before: a[k], after: b[k]});
    }
    for (k in a) if (!(k in b)) out.push({kind: "del", path: k, before: a[k]});
    return out;
  }

  // -- which signals a failed assertion concerns --------------------------------------------
  function stepPattern(step) { return typeof step === "string" ? step : (step && (step.pattern || step.name)) || ""; }
  function agentOf(sig) {
    if (sig.source && sig.source.agent) return String(sig.source.agent);
    if (isMapping(sig.payload) && typeof sig.payload.agent === "string") return sig.payload.agent;
    return null;
  }
  function lastIndex(signals, name) {
    for (var i = signals.length - 1; i >= 0; i--) if (signals[i].name === name) return i;
    return -1;
  }
  function pins(result, signals) {
    var spec = result.assertion || {}, found = {}, missing = null, stop = null, i;
    var add = function (j) { if (j >= 0 && j < signals.length) found[j] = true; };
    var engine = isMapping(result.pins) && Array.isArray(result.pins.indices) ? result.pins : null;
    if (engine) {  // the engine's own search (a trajectory): exact, payloads and windows included
      engine.indices.forEach(add);
      if (typeof engine.missing === "string") { missing = engine.missing; stop = typeof engine.stop === "number" ? engine.stop : null; }
      return pinned(found, missing, stop);
    }
    var re = /#(\d+)(?:\.\.#(\d+))?/g, m;
    while ((m = re.exec(result.message || ""))) { add(+m[1]); if (m[2] !== undefined) add(+m[2]); }
    if (spec.type === "signal.trajectory" && Array.isArray(spec.patterns)) {
      var steps = spec.patterns.map(function (s) { return globRe(stepPattern(s)); }), k = 0, last = -1;
      for (i = 0; i < signals.length && k < steps.length; i++) {
        if (steps[k].test(signals[i].name)) { add(i); last = i; k++; }
      }
      if (k < steps.length) { missing = stepPattern(spec.patterns[k]); stop = last; }
    } else if (Array.isArray(result.children) && result.children.length) {  // any / all / not
      result.children.forEach(function (child) {
        if (!child.passed || spec.type === "not") pins(child, signals).indices.forEach(add);
      });
    } else if (/^output\./.test(spec.type || "")) {  // Trace.output: where the output came from
      var src = lastIndex(signals, "text:complete");
      if (src < 0) src = lastIndex(signals, "provider:end");
      if (src < 0) src = lastIndex(signals, "text:delta");
      add(src);
    } else if (/^metric\./.test(spec.type || "")) {
      if (/latency/.test(spec.type)) add(lastIndex(signals, "harness:end"));
      else for (i = 0; i < signals.length; i++) if (signals[i].name === "provider:end") add(i);
    } else {
      var pattern = typeof spec.pattern === "string" ? spec.pattern : typeof spec.signal === "string" ? spec.signal : null;
      var isTool = /^tool\./.test(spec.type || ""), agent = spec.agentId;
      var tools = (isTool ? [spec.name].concat(Array.isArray(spec.tools) ? spec.tools : []) : [spec.tool || spec.toolName]).filter(function (t) { return typeof t === "string"; });
      var matcher = pattern ? globRe(pattern) : null, n = 0;
      for (i = 0; i < signals.length && n < 500; i++) {
        var s = signals[i], hit = false;
        if (matcher && matcher.test(s.name)) hit = !agent || agentOf(s) === agent;
        else if (!matcher && agent && /^agent:/.test(s.name) && agentOf(s) === agent) hit = true;
        if (tools.length && s.name === "tool:call" && isMapping(s.payload) && (tools.indexOf(s.payload.name) >= 0 || tools.indexOf(s.payload.toolName) >= 0)) hit = true;
        if (typeof spec.path === "string" && /^snapshot\./.test(spec.type || "") && stateWrites(s).some(function (w) { return w[0] === spec.path || w[0].indexOf(spec.path + ".") === 0 || spec.path.indexOf(w[0] + ".") === 0; })) hit = true;
        if (hit) { add(i); n++; }
      }
    }
    return pinned(found, missing, stop);
  }
  function pinned(found, missing, stop) {
    return {indices: Object.keys(found).map(Number).sort(function (a, b) { return a - b; }), missing: missing, stop: stop};
  }

  // -- timeline model ------------------------------------------------------------------------
  function epochMs(t) {
    if (typeof t === "number") return t < 1e11 ? t * 1000 : t;
    if (typeof t === "string") { var v = Date.parse(t); return isNaN(v) ? null : v; }
    return null;
  }
  function kindOf(name) {
    if (/^state:/.test(name)) return "state";
    if (/handoff/.test(name)) return "handoff";
    if (/^error|:error$|:failed$/.test(name)) return "error";
    if (/^tool:/.test(name)) return "tool";
    if (/^provider:/.test(name)) return "model";
    return "event";
  }
  function timelineModel(signals) {
    var ts = signals.map(function (s) { return epochMs(s.timestamp); });
    var known = ts.filter(function (t) { return t !== null; });
    var t0 = known.length ? Math.min.apply(null, known) : 0;
    var t1 = known.length ? Math.max.apply(null, known) : 0;
    // A replayed run writes its timestamps at replay speed: when they span under 1% of the
    // duration the harness reports, they do not show the run's time, and order is clearer.
    var ran = 0;
    signals.forEach(function (s) {
      if (s.name === "harness:end" && isMapping(s.payload) && typeof s.payload.durationMs === "number") ran = s.payload.durationMs;
    });
    var timeAxis = known.length === signals.length && t1 > t0 && !(ran > 0 && t1 - t0 < ran / 100);
    var pos = signals.map(function (s, i) { return timeAxis ? ts[i] - t0 : i; });
    var laneIndex = {}, lanes = [], items = [], endOf = {}, hidden = {};
    function lane(name) {
      if (!(name in laneIndex)) { laneIndex[name] = lanes.length; lanes.push(name); }
      return laneIndex[name];
    }
    lane("(harness)");
    var open = {};  // pending activation/model/tool starts per lane
    var byId = {};
    signals.forEach(function (s, i) { if (s.id) byId[s.id] = i; });
    signals.forEach(function (s, i) {
      var agent = agentOf(s), L = lane(agent || "(harness)"), name = s.name, p = isMapping(s.payload) ? s.payload : {};
      if (name === "agent:activated") { (open["a" + L] = open["a" + L] || []).push(i); return; }
      if (/^agent:(completed|failed|error)$/.test(name) && open["a" + L] && open["a" + L].length) {
        var a = open["a" + L].shift(); endOf[a] = i; hidden[i] = true; return;
      }
      if (name === "provider:start") { (open["m" + L] = open["m" + L] || []).push(i); return; }
      if (name === "provider:end") {
        var q = open["m" + L] || [], start = -1;
        var parent = s.source && s.source.parent;
        if (parent !== undefined && byId[parent] !== undefined && q.indexOf(byId[parent]) >= 0) start = byId[parent];
        else if (q.length) start = q[0];
        if (start >= 0) { q.splice(q.indexOf(start), 1); endOf[start] = i; hidden[i] = true; return; }
      }
      if (name === "tool:call") { (open["t" + L] = open["t" + L] || []).push(i); return; }
      if (name === "tool:result") {
        var tq = open["t" + L] || [], ts2 = -1;
        for (var k = 0; k < tq.length; k++) {
          var cp = signals[tq[k]].payload;
          if (isMapping(cp) && p.id !== undefined && cp.id === p.id) { ts2 = tq[k]; break; }
        }
        if (ts2 < 0 && tq.length) ts2 = tq[0];
        if (ts2 >= 0) { tq.splice(tq.indexOf(ts2), 1); endOf[ts2] = i; hidden[i] = true; return; }
      }
    });
    var span = timeAxis ? t1 - t0 : Math.max(1, signals.length - 1);
    // An activation with no completion signal lasts until its agent's last signal
    // before that agent's next activation.
    var laneOf = signals.map(function (s) { return laneIndex[agentOf(s) || "(harness)"]; });
    var lastInLane = {}, openAct = {};
    signals.forEach(function (s, i) {
      var L = laneOf[i];
      if (s.name === "agent:activated") {
        if (openAct[L] !== undefined && endOf[openAct[L]] === undefined) endOf[openAct[L]] = lastInLane[L];
        openAct[L] = i;
      }
      lastInLane[L] = i;
    });
    for (var L in openAct) if (endOf[openAct[L]] === undefined) endOf[openAct[L]] = lastInLane[L];
    signals.forEach(function (s, i) {
      if (hidden[i]) return;
      var agent = agentOf(s), L = laneIndex[agent || "(harness)"], kind = kindOf(s.name);
      if (s.name === "agent:activated") kind = "activation";
      var end = endOf[i];
      var x1 = end !== undefined ? pos[end] : pos[i];
      items.push({i: i, end: end, lane: L, x0: pos[i], x1: Math.max(x1, pos[i]), kind: kind, bar: end !== undefined && (x1 > pos[i] || kind !== "activation"), folded: end !== undefined && hidden[end] === true});
    });
    // activations under everything else in their lane
    items.sort(function (a, b) { return (a.kind === "activation" ? 0 : 1) - (b.kind === "activation" ? 0 : 1) || a.x0 - b.x0; });
    return {timeAxis: timeAxis, span: span, pos: pos, lanes: lanes, items: items, endOf: endOf};
  }
  function barLabel(item, signals, model) {
    var s = signals[item.i], p = isMapping(s.payload) ? s.payload : {};
    var e = item.end !== undefined && isMapping(signals[item.end].payload) ? signals[item.end].payload : {};
    if (item.kind === "model") {
      var u = isMapping(e.usage) ? e.usage : e;
      var tok = u.totalTokens || u.total_tokens || ((u.inputTokens || u.input_tokens || 0) + (u.outputTokens || u.output_tokens || 0));
      var ms = e.durationMs || e.latencyMs || (model.timeAxis && item.end !== undefined ? model.pos[item.end] - model.pos[item.i] : null);
      return (p.model || e.model || "model") + (tok ? " · " + tok + " tok" : "") + (ms ? " · " + fmtMs(ms) : "");
    }
    if (item.kind === "tool") {
      var args = p.arguments !== undefined ? p.arguments : p.args !== undefined ? p.args : p.input;
      var res = e.result !== undefined ? e.result : e.output;
      return (p.name || p.toolName || "tool") + "(" + (args === undefined ? "" : JSON.stringify(args)) + ")" + (res !== undefined ? " → " + JSON.stringify(res) : "");
    }
    if (item.kind === "activation") return agentOf(s) || "agent";
    return s.name;
  }

  // -- a case: assertions, timeline, signals, state inspector ---------------------------------
  function caseStatus(c) {
    if (c.skipped) return "skipped";
    if (c.error) return "errored";
    if (c.flaky) return "flaky";
    return c.passed ? "passed" : "failed";
  }
  function renderCase(target, row, bundle, title) {
    target.textContent = "";
    var status = caseStatus(row);
    var box = el("div", {cls: "detail", "data-case": row.caseId});
    box.appendChild(el("h3", null, title ? title + ": " : "", el("span", {cls: "badge " + status, text: status}), " ", el("span", {cls: "mono", text: row.caseId}), row.name ? " — " + row.name : ""));
    var m = row.metrics || {};
    box.appendChild(el("div", {cls: "muted", text: fmtMs(m.latencyMs || 0) + " · $" + (m.cost || 0).toFixed(4) + " · " + (m.totalTokens || 0) + " tokens" + (row.outcomes ? " · runs " + row.outcomes.map(function (o) { return o ? "✔" : "✘"; }).join("") : "")}));
    if (row.error) box.appendChild(el("pre", {cls: "warn", text: "error: " + row.error}));
    var signals = bundle && Array.isArray(bundle.signals) ? bundle.signals : null;
    var view = signals ? timelineView(signals, bundle.finalState) : null;
    var list = el("ul", {cls: "assertions"});
    (row.assertions || []).forEach(function (a) {
      var ok = a.passed;
      var li = el("li", {cls: "assertion " + (ok ? "pass" : "fail")},
        el("span", {cls: "badge " + (ok ? "pass" : "fail"), text: ok ? "pass" : "FAIL"}), " ",
        el("b", {text: String((a.assertion || {}).type || "?")}), " ", a.message || "");
      if (!ok && signals) {
        var pin = pins(a, signals), line = el("div", {cls: "pins"}, "pinned: ");
        pin.indices.slice(0, 40).forEach(function (j) {
          line.appendChild(el("button", {"data-i": j, text: "#" + j + " " + signals[j].name, onclick: function () { view.select(j); }}));
        });
        if (!pin.indices.length) line.appendChild(document.createTextNode("no signal named by this assertion "));
        if (pin.missing !== null) line.appendChild(el("span", {cls: "warn stopped", text: (pin.stop === null ? "" : "match stopped " + (pin.stop >= 0 ? "after #" + pin.stop : "at the start") + "; ") + "step '" + pin.missing + "' not found"}));
        li.appendChild(line);
        li.addEventListener("mouseenter", function () { view.pin(pin.indices); });
      }
      list.appendChild(li);
    });
    box.appendChild(el("h4", {text: "Assertions"}));
    box.appendChild(list);
    if (view) {
      box.appendChild(view.node);
      var firstFailed = (row.assertions || []).filter(function (a) { return !a.passed; })[0];
      if (firstFailed) view.pin(pins(firstFailed, signals).indices);
    } else {
      box.appendChild(el("p", {cls: "muted", text: "Signals not kept for this case (--signals " + (DATA.signals || "failed") + "); rerun with --signals all to see its timeline."}));
    }
    target.appendChild(box);
    if (view) view.redraw();  // now that it has a width
    return view;
  }

  function timelineView(signals, finalState) {
    var model = timelineModel(signals);
    var lo = 0, hi = model.span, selected = -1, pinned = {};
    var LANE = 28, LABEL = 120, AXIS = 20, W = 1000;
    var height = model.lanes.length * LANE + AXIS;
    var root = el("div", {cls: "timeline"});
    var info = el("span", {cls: "muted"});
    var bar = el("div", {cls: "tl-bar"},
      el("b", {text: "Timeline"}), " ",
      el("button", {title: "zoom in", "data-act": "zoom-in", text: "+", onclick: function () { zoom(0.5, center()); }}),
      el("button", {title: "zoom out", "data-act": "zoom-out", text: "−", onclick: function () { zoom(2, center()); }}),
      el("button", {title: "show all", "data-act": "fit", text: "fit", onclick: function () { lo = 0; hi = model.span; draw(); }}),
      info);
    var area = svg("svg", {"class": "tl-svg", viewBox: "0 0 " + W + " " + height, height: height, preserveAspectRatio: "none"});
    root.appendChild(bar); root.appendChild(area);
    var listBox = el("div", {cls: "siglist"}), listInner = el("div");
    listBox.appendChild(listInner);
    var inspector = el("div", {cls: "inspector"}, el("p", {cls: "muted", text: "Click a signal to inspect it and the state after it."}));
    root.appendChild(el("div", {cls: "panes"}, listBox, inspector));
    function center() { return selected >= 0 ? model.pos[selected] : (lo + hi) / 2; }
    function zoom(f, at) {
      var w = Math.max((hi - lo) * f, model.timeAxis ? 0.01 : 2);
      w = Math.min(w, model.span);
      lo = Math.max(0, Math.min(at - (at - lo) * (w / (hi - lo)), model.span - w)); hi = lo + w; draw();
    }
    function px(x) { return LABEL + (x - lo) / (hi - lo || 1) * (W - LABEL - 10); }
    function draw() {
      var measured = area.getBoundingClientRect().width;  // draw in screen pixels: text stays unsquashed
      if (measured > 0 && Math.abs(measured - W) > 1) { W = measured; area.setAttribute("viewBox", "0 0 " + W + " " + height); }
      while (area.firstChild) area.removeChild(area.firstChild);
      model.lanes.forEach(function (name, L) {
        area.appendChild(svg("rect", {"class": "lane" + (L % 2 ? " alt" : ""), x: 0, y: L * LANE, width: W, height: LANE}));
        var t = svg("text", {"class": "lname", x: 4, y: L * LANE + 18}); t.textContent = name.length > 18 ? name.slice(0, 17) + "…" : name; area.appendChild(t);
      });
      for (var k = 0; k <= 5; k++) {
        var v = lo + (hi - lo) * k / 5, tx = svg("text", {"class": "tick", x: px(v), y: height - 5, "text-anchor": k === 0 ? "start" : k === 5 ? "end" : "middle"});
        tx.textContent = model.timeAxis ? fmtAxis(v, hi - lo) : "#" + Math.round(v); area.appendChild(tx);
      }
      var visible = model.items.filter(function (it) { return it.x1 >= lo && it.x0 <= hi; });
      info.textContent = visible.length + " of " + model.items.length + " marks · " + (model.timeAxis ? "time axis" : "sequence axis (the timestamps do not show the run's time)") + " · wheel to zoom, drag to pan";
      if (visible.length > 3000) {  // too dense to draw one by one: a density strip per lane
        var bins = {};
        visible.forEach(function (it) { var key = it.lane + ":" + Math.floor(px(it.x0) / 3); bins[key] = (bins[key] || 0) + 1; });
        for (var key in bins) {
          var parts = key.split(":");
          area.appendChild(svg("rect", {"class": "density", x: parts[1] * 3, y: parts[0] * LANE + 5, width: 3, height: LANE - 10, "fill-opacity": Math.min(1, 0.15 + bins[key] / 20)}));
        }
        info.textContent += " · density view: zoom in for single signals";
        return;
      }
      visible.forEach(function (it) {
        var x0 = Math.max(px(it.x0), LABEL), x1 = Math.min(px(it.x1), W), y = it.lane * LANE, node;
        // a bar stands for its end signal too when it folded it in (a completion, a result)
        var cls = "it " + it.kind + (it.i === selected || (it.folded && it.end === selected) ? " sel" : "") + (pinned[it.i] || (it.folded && pinned[it.end]) ? " pin" : "");
        if (it.bar) {  // bars in the upper band, single signals in the lower one
          var inner = it.kind === "activation";
          node = svg("rect", {"class": cls, x: x0, y: y + (inner ? 1 : 3), width: Math.max(3, x1 - x0), height: inner ? LANE - 2 : 13, rx: 2});
        } else {
          node = svg("rect", {"class": cls, x: x0 - 3, y: y + 18, width: 6, height: 6, rx: it.kind === "state" || it.kind === "handoff" ? 0 : 3});
          if (it.kind === "state" || it.kind === "handoff") node.setAttribute("transform", "rotate(45 " + x0 + " " + (y + 21) + ")");
        }
        node.setAttribute("data-i", it.i);
        var title = svg("title", {}); title.textContent = "#" + it.i + " " + signals[it.i].name + (it.bar ? " — " + barLabel(it, signals, model) : "");
        node.appendChild(title);
        area.appendChild(node);
        if (it.bar && x1 - x0 > 60 && it.kind !== "activation") {
          var lab = svg("text", {"class": "blabel", x: x0 + 3, y: y + 13}); lab.textContent = barLabel(it, signals, model).slice(0, Math.floor((x1 - x0) / 6)); area.appendChild(lab);
        }
      });
    }
    area.addEventListener("click", function (ev) {
      var i = ev.target.getAttribute && ev.target.getAttribute("data-i");
      if (i !== null && i !== undefined) select(+i);
    });
    area.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var r = area.getBoundingClientRect(), fx = (ev.clientX - r.left) / r.width * W;
      zoom(ev.deltaY < 0 ? 0.8 : 1.25, lo + (fx - LABEL) / (W - LABEL - 10) * (hi - lo));
    }, {passive: false});
    var dragX = null;
    area.addEventListener("mousedown", function (ev) { dragX = ev.clientX; });
    window.addEventListener("mouseup", function () { dragX = null; });
    area.addEventListener("mousemove", function (ev) {
      if (dragX === null || ev.buttons !== 1) return;
      var r = area.getBoundingClientRect(), dx = (ev.clientX - dragX) / r.width * W / (W - LABEL - 10) * (hi - lo);
      if (Math.abs(ev.clientX - dragX) < 3) return;
      dragX = ev.clientX; var w = hi - lo; lo = Math.max(0, Math.min(lo - dx, model.span - w)); hi = lo + w; draw();
    });
    // the signal list: only the rows in view exist
    var ROW = 20;
    listInner.style.height = signals.length * ROW + "px";
    function drawList() {
      var first = Math.max(0, Math.floor(listBox.scrollTop / ROW) - 5), last = Math.min(signals.length, first + Math.ceil(300 / ROW) + 10);
      listInner.textContent = "";
      for (var i = first; i < last; i++) {
        var s = signals[i], t = model.timeAxis ? fmtMs(model.pos[i]) : "";
        var r = el("div", {cls: "srow" + (i === selected ? " sel" : "") + (pinned[i] ? " pin" : ""), "data-i": i, style: "top:" + i * ROW + "px", text: "#" + i + "  " + (t ? t + "  " : "") + "[" + (agentOf(s) || "harness") + "]  " + s.name});
        listInner.appendChild(r);
      }
    }
    listBox.addEventListener("scroll", drawList);
    listInner.addEventListener("click", function (ev) { var i = ev.target.getAttribute("data-i"); if (i !== null) select(+i); });
    function select(i) {
      selected = i;
      var x = model.pos[i];
      if (x < lo || x > hi) { var w = hi - lo; lo = Math.max(0, Math.min(x - w / 2, model.span - w)); hi = lo + w; }
      draw();
      if (i * ROW < listBox.scrollTop || i * ROW > listBox.scrollTop + 280) listBox.scrollTop = Math.max(0, i * ROW - 100);
      drawList();
      var after = stateAfter(signals, i), before = i > 0 ? stateAfter(signals, i - 1) : initialState(signals);
      var changes = diffStates(before, after);
      inspector.textContent = "";
      inspector.appendChild(el("h3", {cls: "insp-title", text: "#" + i + " " + signals[i].name}));
      inspector.appendChild(el("h4", {text: "Changed since #" + (i - 1) + " (" + changes.length + ")"}));
      var diff = el("pre", {cls: "state-diff"});
      if (!changes.length) diff.appendChild(el("span", {cls: "muted", text: "no change"}));
      changes.forEach(function (c) {
        var text = c.kind === "add" ? "+ " + c.path + ": " + c.after : c.kind === "del" ? "- " + c.path + ": " + c.before : "~ " + c.path + ": " + c.before + " → " + c.after;
        diff.appendChild(el("div", {cls: "dl-" + c.kind, text: text}));
      });
      inspector.appendChild(diff);
      inspector.appendChild(el("h4", {text: "Signal #" + i + " · " + signals[i].name}));
      inspector.appendChild(el("pre", {cls: "sig-payload", text: pretty(signals[i], 8000)}));
      inspector.appendChild(el("h4", {text: "State after #" + i}));
      inspector.appendChild(el("pre", {cls: "state-after", text: pretty(after)}));
      if (finalState !== undefined && i === signals.length - 1) inspector.appendChild(el("p", {cls: "muted", text: "(last signal: the case's final state is the harness:end state when it reports one)"}));
    }
    function pin(indices) { pinned = {}; indices.forEach(function (j) { pinned[j] = true; }); draw(); drawList(); }
    draw(); drawList();
    return {node: root, select: select, pin: pin, redraw: draw};
  }

  // -- run view: filters and a lazily rendered case table -------------------------------------
  function caseTable(target, rows, open) {
    var state = {status: "all", tag: "", q: ""}, shown = rows.map(function (_, i) { return i; }), selected = -1;
    var counts = {all: rows.length, passed: 0, failed: 0, flaky: 0, errored: 0, skipped: 0}, tags = {};
    rows.forEach(function (c) {
      if (c.skipped) counts.skipped++; else if (c.passed) counts.passed++; else counts.failed++;
      if (c.flaky) counts.flaky++;
      if (c.error) counts.errored++;
      (c.tags || []).forEach(function (t) { tags[t] = true; });
    });
    function matches(c) {
      var s = state.status;
      if (s === "passed" && !(c.passed && !c.skipped)) return false;
      if (s === "failed" && (c.passed || c.skipped)) return false;
      if (s === "flaky" && !c.flaky) return false;
      if (s === "errored" && !c.error) return false;
      if (s === "skipped" && !c.skipped) return false;
      if (state.tag && (c.tags || []).indexOf(state.tag) < 0) return false;
      if (state.q && String(c.caseId).toLowerCase().indexOf(state.q) < 0 && String(c.name || "").toLowerCase().indexOf(state.q) < 0) return false;
      return true;
    }
    var buttons = el("div", {cls: "filters", role: "toolbar"});
    ["all", "passed", "failed", "flaky", "errored", "skipped"].forEach(function (s) {
      buttons.appendChild(el("button", {"data-status": s, cls: s === "all" ? "on" : "", text: s + " " + fmtInt(counts[s]), onclick: function (ev) {
        state.status = s;
        Array.prototype.forEach.call(buttons.querySelectorAll("button"), function (b) { b.className = b.getAttribute("data-status") === s ? "on" : ""; });
        refilter();
      }}));
    });
    var tagSel = el("select", {"aria-label": "tag", onchange: function () { state.tag = tagSel.value; refilter(); }}, el("option", {value: "", text: "any tag"}));
    Object.keys(tags).sort().forEach(function (t) { tagSel.appendChild(el("option", {value: t, text: t})); });
    var search = el("input", {type: "search", placeholder: "search case id", "aria-label": "search", oninput: function () { state.q = search.value.trim().toLowerCase(); refilter(); }});
    var count = el("span", {cls: "count", id: "case-count"});
    buttons.appendChild(tagSel); buttons.appendChild(search); buttons.appendChild(count);
    var ROW = 28;
    var box = el("div", {cls: "vtable", role: "table"});
    var head = el("div", {cls: "vrow vhead", role: "row"});
    ["status", "case", "name", "latency", "cost", "tokens", "asserts", "tags"].forEach(function (h) { head.appendChild(el("span", {text: h})); });
    var inner = el("div", {style: "position:relative"});
    box.appendChild(head); box.appendChild(inner);
    function refilter() {
      shown = [];
      for (var i = 0; i < rows.length; i++) if (matches(rows[i])) shown.push(i);
      count.textContent = fmtInt(shown.length) + " of " + fmtInt(rows.length) + " cases";
      inner.style.height = shown.length * ROW + "px";
      box.style.height = Math.min(340, 34 + Math.max(shown.length, 1) * ROW) + "px";
      box.scrollTop = 0;
      draw();
    }
    function draw() {
      var first = Math.max(0, Math.floor(box.scrollTop / ROW) - 5), last = Math.min(shown.length, first + Math.ceil(box.clientHeight / ROW) + 12);
      inner.textContent = "";
      for (var k = first; k < last; k++) {
        var i = shown[k], c = rows[i], st = caseStatus(c), m = c.metrics || {};
        var failed = (c.assertions || []).filter(function (a) { return !a.passed; }).length;
        var r = el("div", {cls: "vrow case-row" + (i === selected ? " sel" : ""), role: "row", "data-index": i, "data-case": c.caseId, "data-status": st, style: "top:" + k * ROW + "px"},
          el("span", null, el("span", {cls: "badge " + st, text: st})),
          el("span", {cls: "mono", text: c.caseId}), el("span", {text: c.name || ""}),
          el("span", {text: fmtMs(m.latencyMs || 0)}), el("span", {text: "$" + (m.cost || 0).toFixed(4)}),
          el("span", {text: String(m.totalTokens || 0)}),
          el("span", {text: (c.assertions || []).length - failed + "/" + (c.assertions || []).length}),
          el("span", {cls: "muted", text: (c.tags || []).join(", ")}));
        inner.appendChild(r);
      }
    }
    box.addEventListener("scroll", function () { requestAnimationFrame(draw); });
    inner.addEventListener("click", function (ev) {
      var r = ev.target.closest(".case-row");
      if (!r) return;
      selected = +r.getAttribute("data-index"); draw(); open(selected);
    });
    target.appendChild(el("h2", {text: "Cases"}));
    target.appendChild(buttons); target.appendChild(box);
    refilter();
  }

  function runView() {
    var target = document.getElementById("cases"), detail = el("div", {id: "case-detail"});
    function open(i) {
      renderCase(detail, DATA.cases[i], details()["c" + i]);
      history.replaceState(null, "", "#case=" + encodeURIComponent(DATA.cases[i].caseId));
      detail.scrollIntoView({block: "start"});
    }
    caseTable(target, DATA.cases, open);
    target.appendChild(detail);
    var linked = /^#case=(.*)$/.exec(location.hash);  // a link to one case opens it
    if (linked) {
      var id = decodeURIComponent(linked[1]);
      for (var i = 0; i < DATA.cases.length; i++) if (DATA.cases[i].caseId === id) { open(i); break; }
    }
  }
  function matrixView() {
    var target = document.getElementById("cases"), detail = el("div", {id: "case-detail"});
    target.appendChild(detail);
    var grid = document.getElementById("grid");
    if (grid) grid.addEventListener("click", function (ev) {
      var cell = ev.target.closest("td[data-key]");
      if (!cell) return;
      var key = cell.getAttribute("data-key"), parts = key.slice(1).split(":"), variant = DATA.variants[+parts[0]];
      renderCase(detail, variant.cases[+parts[1]], details()[key], variant.id);
      detail.scrollIntoView({block: "start"});
    });
  }
  function compareView() {
    var target = document.getElementById("side-by-side");
    var flips = document.getElementById("flips");
    if (!flips) return;
    flips.addEventListener("click", function (ev) {
      var tr = ev.target.closest("tr[data-case]");
      if (!tr) return;
      var id = tr.getAttribute("data-case"), d = details();
      target.textContent = "";
      target.appendChild(el("h2", {text: "Side by side: " + id}));
      var cols = el("div", {cls: "side"});
      target.appendChild(cols);  // attached first: each timeline measures its column
      ["baseline", "candidate"].forEach(function (side) {
        var col = el("div", {cls: "side-" + side}), row = d[side + ":" + id];
        cols.appendChild(col);
        if (row) renderCase(col, row, row, side);
        else col.appendChild(el("p", {cls: "muted", text: side + ": case not in this result"}));
      });
      target.scrollIntoView({block: "start"});
    });
  }

  window.SE = {stateAfter: stateAfter, diffStates: diffStates, pins: pins, timelineModel: timelineModel, globRe: globRe, details: details, data: DATA};
  ({run: runView, matrix: matrixView, compare: compareView})[DATA.view]();
  document.body.setAttribute("data-ready", "1");
})();
