// A small live line chart on a canvas: the last points of a few series
// against time, with a y axis from 0 to the largest value shown.
"use strict";

gale.Chart = class {
  // canvas: the element; series: [{label, color}]; fmt formats a value.
  constructor(canvas, series, fmt, maxPoints) {
    this.canvas = canvas;
    this.series = series;
    this.fmt = fmt;
    this.maxPoints = maxPoints || 150; // 5 minutes at one point each 2 s
    this.points = []; // {t, values: [..]}
  }

  push(t, values) {
    this.points.push({ t, values });
    if (this.points.length > this.maxPoints) this.points.shift();
    this.draw();
  }

  draw() {
    const c = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth || 300;
    const h = c.clientHeight || 150;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
    }
    const g = c.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const left = 52, right = 8, top = 8, bottom = 18;
    const pw = w - left - right, ph = h - top - bottom;
    let max = 0;
    for (const p of this.points) for (const v of p.values) if (v !== null && v > max) max = v;
    max = niceCeil(max);
    g.font = "11px system-ui, sans-serif";
    g.textBaseline = "middle";
    g.strokeStyle = "#e3e6eb";
    g.fillStyle = "#7b8494";
    g.lineWidth = 1;
    for (let i = 0; i <= 4; i++) {
      const y = top + ph - (ph * i) / 4;
      g.beginPath();
      g.moveTo(left, Math.round(y) + 0.5);
      g.lineTo(left + pw, Math.round(y) + 0.5);
      g.stroke();
      g.textAlign = "right";
      g.fillText(this.fmt((max * i) / 4), left - 6, y);
    }
    if (this.points.length === 0) {
      g.textAlign = "center";
      g.fillText("waiting for data…", left + pw / 2, top + ph / 2);
      return;
    }
    const t1 = this.points[this.points.length - 1].t;
    const span = Math.max(this.maxPoints * gale.pollMillis, 1);
    const x = (t) => left + pw - ((t1 - t) / span) * pw;
    const y = (v) => top + ph - (max > 0 ? (v / max) * ph : 0);
    g.textAlign = "left";
    g.fillText("−" + Math.round(span / 60000) + " min", left, h - 8);
    g.textAlign = "right";
    g.fillText("now", left + pw, h - 8);
    if (this.series.length > 1) {
      let lx = left + 8;
      g.textAlign = "left";
      for (const s of this.series) {
        g.fillStyle = s.color;
        g.fillRect(lx, top + 4, 10, 3);
        g.fillStyle = "#4b5565";
        g.fillText(s.label, lx + 14, top + 6);
        lx += 24 + g.measureText(s.label).width;
      }
    }
    this.series.forEach((s, i) => {
      g.strokeStyle = s.color;
      g.lineWidth = 1.8;
      g.beginPath();
      let drawing = false;
      for (const p of this.points) {
        const v = p.values[i];
        if (v === null || v === undefined) {
          drawing = false;
          continue;
        }
        if (drawing) g.lineTo(x(p.t), y(v));
        else g.moveTo(x(p.t), y(v));
        drawing = true;
      }
      g.stroke();
    });
  }

  // last is the latest value of series i, or null.
  last(i) {
    for (let k = this.points.length - 1; k >= 0; k--) {
      const v = this.points[k].values[i];
      if (v !== null && v !== undefined) return v;
    }
    return null;
  }
};

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
function niceCeil(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}
