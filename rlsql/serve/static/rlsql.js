// rlsql serve: draws each page's charts with uPlot from the JSON specs the server embeds, swaps in a
// page's new content when a run changes (server-sent events) or the smoothing moves, and keeps the
// page's state in its URL (history.pushState; the back button reloads that state).
(function () {
  "use strict";
  const PALETTE = ["#2f6fdf", "#e8590c", "#2b8a3e", "#c2255c", "#7048e8", "#0b7285", "#e67700", "#5c940d",
                   "#862e9c", "#495057"];
  const charts = new Map(); // element id -> {u, spec}

  // as the CLI's table prints a float: 4 decimals, trailing zeros dropped; 4 significant digits below 0.001
  function fmt(v) {
    if (v === null || v === undefined) return "–";
    if (!isFinite(v)) return String(v);
    if (v !== 0 && Math.abs(v) < 0.001) {  // Python's format(v, ".4g")
      const [m, e] = v.toExponential(3).split("e");
      const n = Number(e);
      if (n >= -4) return String(Number(v.toPrecision(4)));
      return m.replace(/\.?0+$/, "") + "e" + (n < 0 ? "-" : "+") + String(Math.abs(n)).padStart(2, "0");
    }
    const t = v.toFixed(4).replace(/0+$/, "").replace(/\.$/, "");
    return t === "-0" ? "0" : t;
  }
  // an axis tick: small and huge numbers (a learning rate of 1e-6) in exponent form, others as they are
  function tick(v) {
    if (v === null || v === undefined) return "";
    const a = Math.abs(v);
    if (v !== 0 && (a < 0.001 || a >= 1e7)) return v.toExponential(1).replace(".0e", "e");
    return Number(v.toPrecision(6)).toLocaleString("en-US", {maximumFractionDigits: 6});
  }
  function utc(v) {
    return v === null || v === undefined ? "–" : new Date(v * 1000).toISOString().replace("T", " ").slice(0, 19);
  }

  function options(spec, width) {
    const labels = spec.labels;
    const x = {
      label: spec.xlabel || "x",
      value: (u, v, si, idx) => {
        const text = spec.xtime ? utc(v) : fmt(v);
        return labels && idx !== null && idx !== undefined ? labels[idx] + " · " + text : text;
      },
    };
    const series = [x];
    spec.series.forEach((s, i) => {
      const color = s.color || PALETTE[i % PALETTE.length];
      const o = {label: s.label, stroke: color, width: s.width === undefined ? 1.5 : s.width, spanGaps: !spec.gaps,
                 value: (u, v) => fmt(v), points: {show: false}};
      if (s.dash) o.dash = s.dash;
      if (spec.kind === "bars") {
        o.paths = uPlot.paths.bars({size: [0.8, 48]});
        o.fill = color + "88";
      }
      if (spec.kind === "points" || s.width === 0) {
        o.paths = () => null;
        o.points = {show: true, size: s.size || 8, fill: color, stroke: color};
      } else if (s.points) {
        o.points = {show: true, size: s.size || 4, fill: color, stroke: color};
      }
      series.push(o);
    });
    return {
      width: width,
      height: spec.kind === "points" ? 340 : 260,
      series: series,
      scales: {x: Object.assign({time: !!spec.xtime, distr: spec.xlog ? 3 : 1},
                                spec.kind === "points" ? {range: padded(spec.xlog)} : {}),
               y: {distr: spec.ylog ? 3 : 1}},
      axes: [spec.xtime ? {label: spec.xlabel} : {label: spec.xlabel, values: (u, splits) => splits.map(tick)},
             {label: spec.ylabel, size: 64, values: (u, splits) => splits.map(tick)}],
      cursor: {drag: {x: true, y: false}},
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"),
    };
  }

  // A scatter's x scale reaches past its data: uPlot draws the points between the indexes the scale's ends
  // fall on, and a scale ending exactly on a value several runs share stopped at the first of them (one dot
  // for 127 runs at n_samples_per_prompt=8). A margin on each side puts every point inside.
  function padded(log) {
    return (u, min, max) => {
      if (min === null || max === null) return [min, max];
      if (log) return [min / 1.25, max * 1.25];
      const pad = (max - min) * 0.05 || Math.abs(max) * 0.05 || 1;
      return [min - pad, max + pad];
    };
  }

  function extent(xs) {
    const v = xs.filter((x) => x !== null);
    return v.length ? [Math.min.apply(null, v), Math.max.apply(null, v)] : [null, null];
  }

  function draw(root, zooms) {
    root.querySelectorAll("script.chart-spec").forEach((script) => {
      const el = document.getElementById(script.dataset.for);
      if (!el) return;
      const spec = JSON.parse(script.textContent);
      const data = [spec.x].concat(spec.series.map((s) => s.values));
      const u = new uPlot(options(spec, Math.max(el.clientWidth, 300)), data, el);
      const zoom = zooms && zooms.get(el.id);
      if (zoom) u.setScale("x", zoom);
      el.uplot = u;  // what the chart was given and draws, for a test to read back
      charts.set(el.id, {u: u, spec: spec});
      el.dataset.drawn = "1";
    });
  }

  // the x range of every chart the user zoomed into, so a live update keeps it
  function zoomed() {
    const out = new Map();
    charts.forEach((c, id) => {
      const [lo, hi] = extent(c.spec.x);
      const s = c.u.scales.x;
      if (lo !== null && (s.min > lo || s.max < hi)) out.set(id, {min: s.min, max: s.max});
      c.u.destroy();
    });
    charts.clear();
    return out;
  }

  function wire(root) {
    const span = root.querySelector("input[data-param=span]");
    if (span) {
      const out = root.querySelector("#span-value");
      span.addEventListener("input", () => { if (out) out.textContent = span.value; });
      span.addEventListener("change", () => {
        const url = new URL(location.href);
        url.searchParams.set("span", span.value);
        refresh(url.toString(), true);
      });
    }
    const q = root.querySelector("textarea#q");
    if (q) {
      q.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); q.form.submit(); }
      });
    }
  }

  let pending = Promise.resolve();
  function refresh(url, push) {
    pending = pending.then(async () => {
      const res = await fetch(url, {headers: {accept: "text/html"}, credentials: "same-origin"});
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const fresh = doc.getElementById("content");
      if (!fresh) return;
      const zooms = zoomed();
      const main = document.importNode(fresh, true);
      document.getElementById("content").replaceWith(main);
      document.title = doc.title;
      if (push) history.pushState({}, "", url);
      draw(main, zooms);
      wire(main);
      document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
    }).catch((err) => { console.warn("rlsql: could not refresh the page:", err); });
    return pending;
  }

  function listen() {
    if (!window.EventSource) return;
    const live = document.getElementById("live");
    const events = new EventSource("/api/events");
    events.addEventListener("change", (ev) => {
      const change = JSON.parse(ev.data);
      const main = document.getElementById("content");
      const mine = JSON.parse(main.dataset.runs || "null");
      const editing = document.activeElement && main.contains(document.activeElement) &&
        /^(TEXTAREA|INPUT|SELECT)$/.test(document.activeElement.tagName);
      const hit = mine === null || change.runs === null || change.runs.some((r) => mine.includes(r));
      const stamp = new Date().toLocaleTimeString();
      if (!hit) return;
      if (editing) {
        if (live) live.textContent = "runs changed at " + stamp + ": reload to see";
        return;
      }
      refresh(location.href, false).then(() => {
        if (live) live.textContent = "updated " + stamp;
        document.body.dataset.version = String(change.version);
      });
    });
  }

  window.addEventListener("popstate", () => refresh(location.href, false));
  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => charts.forEach((c, id) => {
      const el = document.getElementById(id);
      if (el) c.u.setSize({width: Math.max(el.clientWidth, 300), height: c.u.height});
    }), 150);
  });
  document.addEventListener("DOMContentLoaded", () => {
    const main = document.getElementById("content");
    draw(main, null);
    wire(main);
    listen();
    document.body.dataset.ready = "1";
  });
  window.rlsqlFormat = fmt;
  window.rlsqlCharts = charts; // the charts drawn, by element id (tests read their scales)
})();
