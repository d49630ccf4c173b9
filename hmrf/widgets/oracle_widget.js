// Browser side of hmrf.widgets.OracleWidget (an anywidget ES module; plain SVG, no build).
//
// Draws the points coloured by cluster, the constraints (green must-links, red
// cannot-links, dashed where violated), the pending query, and the learning curve.
// Sends {type: "answer", value, query} and {type: "pair", i, j, kind} to the kernel.
// The root element carries data-* attributes (version, counts, query, selection) so
// that tests and people inspecting the page can read the state without the kernel.

const SVG = "http://www.w3.org/2000/svg";
const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
const MUST = "#1a9850";
const CANNOT = "#d73027";
const PICK_RADIUS = 14; // pixels: a click this close to a point selects it
const KEYS = { m: "must", y: "must", c: "cannot", n: "cannot", d: "unknown", "?": "unknown" };

function svg(tag, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (parent) parent.appendChild(node);
  return node;
}

function html(tag, attrs = {}, parent = null, text = "") {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

function render({ model, el }) {
  const root = html("div", {
    class: "hmrf-oracle", tabindex: "0",
    // JupyterLab / Notebook 7 (Lumino) ignore their keyboard shortcuts inside this element,
    // so "m", "c" and "d" answer queries instead of changing or deleting cells
    "data-lm-suppress-shortcuts": "true",
  }, el);
  const plotBox = html("div", { class: "hmrf-oracle-plot" }, root);
  const side = html("div", { class: "hmrf-oracle-side" }, root);

  const W = model.get("width"), H = model.get("height"), PAD = 14;
  const plot = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "hmrf-oracle-svg" }, plotBox);
  svg("rect", { x: 0, y: 0, width: W, height: H, class: "hmrf-oracle-bg" }, plot);
  const gLinks = svg("g", { class: "links" }, plot);
  const gQuery = svg("g", { class: "query" }, plot);
  const gPoints = svg("g", { class: "points" }, plot);
  const gMarks = svg("g", { class: "marks" }, plot);

  const prompt = html("div", { class: "hmrf-oracle-prompt" }, side);
  const buttons = html("div", { class: "hmrf-oracle-buttons" }, side);
  const bMust = html("button", { "data-action": "must", title: "same cluster (key m)" }, buttons, "Must-link (m)");
  const bCannot = html("button", { "data-action": "cannot", title: "different clusters (key c)" }, buttons, "Cannot-link (c)");
  const bUnknown = html("button", { "data-action": "unknown", title: "don't know (key d)" }, buttons, "Don't know (d)");
  html("div", { class: "hmrf-oracle-hint" }, side,
       "Or click two points to link them yourself, then m or c (Esc cancels).");
  const counts = html("div", { class: "hmrf-oracle-counts" }, side);
  const legend = html("div", { class: "hmrf-oracle-legend" }, side);
  legend.innerHTML =
    `<span><svg width="26" height="8"><line x1="1" y1="4" x2="25" y2="4" stroke="${MUST}" stroke-width="2"/></svg> must-link</span>` +
    `<span><svg width="26" height="8"><line x1="1" y1="4" x2="25" y2="4" stroke="${CANNOT}" stroke-width="2"/></svg> cannot-link</span>` +
    `<span><svg width="26" height="8"><line x1="1" y1="4" x2="25" y2="4" stroke="${MUST}" stroke-width="2" stroke-dasharray="5 4"/></svg>` +
    `<svg width="26" height="8"><line x1="1" y1="4" x2="25" y2="4" stroke="${CANNOT}" stroke-width="2" stroke-dasharray="5 4"/></svg> violated</span>` +
    `<span><svg width="26" height="14"><circle cx="7" cy="7" r="5" fill="none" stroke="#000" stroke-width="2"/>` +
    `<line x1="12" y1="7" x2="25" y2="7" stroke="#000" stroke-width="2" stroke-dasharray="2 3"/></svg> query</span>`;
  const curveBox = html("div", { class: "hmrf-oracle-curve" }, side);
  const errorBox = html("div", { class: "hmrf-oracle-error" }, side);

  let circles = [];      // one <circle> per point
  let screen = [];       // [x, y] pixel position of each point
  let selected = [];     // points clicked for a pair of one's own
  let waitingFor = -1;   // version the kernel will bump once it has handled our message

  function layout() {
    const pts = model.get("points");
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const [x, y] of pts) {
      x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
    }
    const sx = x1 > x0 ? (W - 2 * PAD) / (x1 - x0) : 1, sy = y1 > y0 ? (H - 2 * PAD) / (y1 - y0) : 1;
    const cx = x1 > x0 ? 0 : W / 2 - PAD, cy = y1 > y0 ? 0 : H / 2 - PAD;
    screen = pts.map(([x, y]) => [PAD + cx + (x - (x1 > x0 ? x0 : x)) * sx,
                                  H - PAD - cy - (y - (y1 > y0 ? y0 : y)) * sy]);
    gPoints.replaceChildren();
    const r = pts.length > 500 ? 2.6 : 3.6;
    circles = screen.map(([x, y], i) => svg("circle", { cx: x.toFixed(2), cy: y.toFixed(2), r, "data-index": i }, gPoints));
  }

  function line(parent, i, j, attrs) {
    const [a, b] = [screen[i], screen[j]];
    return svg("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], ...attrs }, parent);
  }

  function ring(i, cls) {
    const [x, y] = screen[i];
    return svg("circle", { cx: x, cy: y, r: 8, class: cls, "data-index": i }, gMarks);
  }

  function pending() {
    // the pair the buttons and keys answer: one's own selection first, else the query
    if (selected.length === 2) return { own: true, pair: selected };
    const q = model.get("query");
    return q.length === 2 ? { own: false, pair: q } : null;
  }

  function draw() {
    const labels = model.get("labels");
    for (let i = 0; i < circles.length; i++) {
      const l = labels[i] ?? 0;
      circles[i].setAttribute("fill", COLORS[((l % COLORS.length) + COLORS.length) % COLORS.length]);
      circles[i].setAttribute("data-label", l);
    }
    gLinks.replaceChildren();
    let violated = 0;
    for (const [i, j, kind, bad] of model.get("constraints")) {
      violated += bad;
      line(gLinks, i, j, {
        stroke: kind > 0 ? MUST : CANNOT, "stroke-width": bad ? 2.4 : 1.3,
        "stroke-dasharray": bad ? "5 4" : "none", "stroke-opacity": bad ? 0.95 : 0.6,
        class: `constraint ${kind > 0 ? "must" : "cannot"}${bad ? " violated" : ""}`, "data-pair": `${i},${j}`,
      });
    }
    gQuery.replaceChildren();
    gMarks.replaceChildren();
    const q = model.get("query");
    if (q.length === 2) {
      line(gQuery, q[0], q[1], { class: "query-line" });
      ring(q[0], "query-ring"); ring(q[1], "query-ring");
    }
    for (const i of selected) ring(i, "selected-ring");
    if (selected.length === 2) line(gQuery, selected[0], selected[1], { class: "selected-line" });

    const p = pending();
    if (p && p.own) prompt.textContent = `Your pair: points ${p.pair[0]} and ${p.pair[1]}. Same cluster?`;
    else if (selected.length === 1) prompt.textContent = `Point ${selected[0]} chosen: click a second point.`;
    else prompt.textContent = q.length === 2 ? `${model.get("status")} Points ${q[0]} and ${q[1]}.` : model.get("status");
    const busy = waitingFor >= 0;
    bMust.disabled = busy || !p;
    bCannot.disabled = busy || !p;
    bUnknown.disabled = busy || !p;
    bUnknown.textContent = p && p.own ? "Cancel (Esc)" : "Don't know (d)";
    const n = model.get("constraints").length;
    const secs = model.get("fit_seconds");
    counts.textContent = `${model.get("n_answers")} answers · ${n} constraints · ${violated} violated` +
      (secs > 0 ? ` · refit ${secs < 1 ? `${Math.max(1, Math.round(secs * 1000))} ms` : `${secs.toFixed(1)} s`}` : "");
    errorBox.textContent = model.get("error");
    drawCurve();

    root.dataset.version = model.get("version");
    root.dataset.nAnswers = model.get("n_answers");
    root.dataset.nConstraints = n;
    root.dataset.nViolated = violated;
    root.dataset.query = q.join(",");
    root.dataset.selected = selected.join(",");
    root.dataset.busy = busy ? "1" : "0";
  }

  function drawCurve() {
    const curve = model.get("curve");
    curveBox.replaceChildren();
    if (!curve.length) return;
    const w = 250, h = 150, l = 30, b = 22, t = 16, r = 8;
    const g = svg("svg", { width: w, height: h, class: "hmrf-oracle-curve-svg" }, curveBox);
    const xmax = Math.max(1, curve[curve.length - 1][0]);
    const ymin = Math.min(0, ...curve.map((c) => c[2]));
    const X = (v) => l + (v / xmax) * (w - l - r);
    const Y = (v) => t + (1 - (v - ymin) / (1 - ymin)) * (h - t - b);
    svg("line", { x1: l, y1: Y(ymin), x2: w - r, y2: Y(ymin), class: "axis" }, g);
    svg("line", { x1: l, y1: t, x2: l, y2: Y(ymin), class: "axis" }, g);
    for (const v of [0, 0.5, 1]) {
      svg("text", { x: l - 4, y: Y(v) + 3, "text-anchor": "end", class: "tick" }, g).textContent = v;
    }
    const last = curve[curve.length - 1][0];
    svg("text", { x: w - r, y: h - 5, "text-anchor": "end", class: "tick" }, g).textContent =
      `${last} answer${last === 1 ? "" : "s"}`;
    [[1, "#1f77b4", "NMI"], [2, "#ff7f0e", "ARI"]].forEach(([col, color, name], k) => {
      const pts = curve.map((c) => `${X(c[0]).toFixed(1)},${Y(c[col]).toFixed(1)}`).join(" ");
      svg("polyline", { points: pts, fill: "none", stroke: color, "stroke-width": 1.8, class: `curve-${name}` }, g);
      const [n, v] = [curve[curve.length - 1][0], curve[curve.length - 1][col]];
      svg("circle", { cx: X(n), cy: Y(v), r: 2.5, fill: color }, g);
      svg("text", { x: l + 6 + 40 * k, y: 11, fill: color, class: "tick" }, g).textContent = name;
    });
  }

  function send(msg) {
    waitingFor = model.get("version") + 1;
    model.send(msg);
    draw();
  }

  function act(action) {
    const p = pending();
    if (!p || waitingFor >= 0) return;
    if (p.own) {
      if (action === "unknown") { selected = []; draw(); return; }
      const [i, j] = p.pair;
      selected = [];
      send({ type: "pair", i, j, kind: action });
    } else {
      send({ type: "answer", value: action, query: p.pair });
    }
  }

  function nearest(evt) {
    const box = plot.getBoundingClientRect();
    const x = ((evt.clientX - box.left) * W) / box.width, y = ((evt.clientY - box.top) * H) / box.height;
    let best = -1, dist = PICK_RADIUS * PICK_RADIUS;
    for (let i = 0; i < screen.length; i++) {
      const dx = screen[i][0] - x, dy = screen[i][1] - y, d = dx * dx + dy * dy;
      if (d <= dist) { best = i; dist = d; }
    }
    return best;
  }

  function onClick(evt) {
    root.focus();
    const i = nearest(evt);
    if (i < 0) return;
    if (selected.includes(i)) selected = selected.filter((s) => s !== i);
    else selected = selected.length >= 2 ? [i] : [...selected, i];
    draw();
  }

  function onKey(evt) {
    if (evt.ctrlKey || evt.metaKey || evt.altKey) return;
    if (evt.key === "Escape") {
      selected = []; draw();
    } else if (KEYS[evt.key.toLowerCase()]) {
      act(KEYS[evt.key.toLowerCase()]);
    } else {
      return;
    }
    evt.preventDefault();
    evt.stopPropagation();
  }

  function onButton(evt) {
    const action = evt.currentTarget.getAttribute("data-action");
    root.focus();
    act(action);
  }

  function onChange() {
    if (waitingFor >= 0 && model.get("version") >= waitingFor) waitingFor = -1;
    draw();
  }

  layout();
  draw();
  plot.addEventListener("click", onClick);
  root.addEventListener("keydown", onKey);
  for (const b of [bMust, bCannot, bUnknown]) b.addEventListener("click", onButton);
  const onPoints = () => { layout(); draw(); };
  model.on("change:points", onPoints);
  model.on("change:version", onChange);
  return () => {
    model.off("change:points", onPoints);
    model.off("change:version", onChange);
  };
}

export default { render };
