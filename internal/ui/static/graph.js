// The topology drawn as a graph, in SVG: components as boxes in layers
// from the spouts (left) to the sinks (right), each showing its load
// (a bolt's capacity) and its rate; edges labelled with their grouping
// and the tuples per second on them.
"use strict";

gale.Graph = class {
  constructor(svg) {
    this.svg = svg;
    this.shape = ""; // the components and edges last laid out
    this.layout = null;
  }

  // update draws viz (topology/:id/visualization) with rates: {nodes:
  // {id: tuples/s}, edges: {"src|stream|dst": tuples/s}}.
  update(viz, rates) {
    const ids = Object.keys(viz).sort();
    const edges = [];
    for (const id of ids) {
      for (const inp of viz[id][":inputs"] || []) {
        if (viz[inp[":component"]]) edges.push({ src: inp[":component"], dst: id, input: inp });
      }
    }
    const shape = JSON.stringify([ids, edges.map((e) => [e.src, e.dst, e.input[":stream"]])]);
    if (shape !== this.shape) {
      this.shape = shape;
      this.layout = layOut(ids, edges);
    }
    this.draw(viz, edges, rates);
  }

  draw(viz, edges, rates) {
    const el = gale.el;
    const L = this.layout;
    const svg = this.svg;
    svg.setAttribute("width", L.width);
    svg.setAttribute("height", L.height);
    svg.setAttribute("viewBox", "0 0 " + L.width + " " + L.height);
    const maxRate = Math.max(1, ...Object.values(rates.edges));
    const defs = el("defs", null, el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" }, el("path", { d: "M0,0 L10,5 L0,10 z" })));
    const edgeEls = [];
    const labelEls = [];
    const bySrcDst = {};
    for (const e of edges) (bySrcDst[e.src + ">" + e.dst] = bySrcDst[e.src + ">" + e.dst] || []).push(e);
    for (const [key, group] of Object.entries(bySrcDst)) {
      const [src, dst] = key.split(">");
      const a = L.pos[src], b = L.pos[dst];
      group.forEach((e, k) => {
        const off = (k - (group.length - 1) / 2) * 14;
        const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2 + off;
        const x2 = b.x, y2 = b.y + NODE_H / 2 + off;
        let d;
        if (x2 > x1) {
          const mx = (x1 + x2) / 2;
          d = `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`;
        } else {
          // A back edge (a loop): round below the boxes.
          const low = Math.max(a.y, b.y) + NODE_H + 30 + k * 10;
          d = `M${a.x + NODE_W / 2},${a.y + NODE_H} C${a.x + NODE_W / 2},${low} ${b.x + NODE_W / 2},${low} ${b.x + NODE_W / 2},${b.y + NODE_H}`;
        }
        const rate = rates.edges[edgeKey(e)] || 0;
        const width = 1.2 + 4 * Math.sqrt(rate / maxRate);
        const grouping = e.input[":grouping"] || "?";
        const fields = (e.input[":fields"] || []).length ? "(" + e.input[":fields"].join(", ") + ")" : "";
        const stream = e.input[":stream"] === "default" ? "" : e.input[":stream"] + " · ";
        const label = stream + grouping + fields + " · " + gale.fmtRate(rate);
        edgeEls.push(
          el("path", { class: "edge", d, "stroke-width": width.toFixed(2), "marker-end": "url(#arrow)", "data-src": e.src, "data-dst": e.dst, "data-grouping": grouping },
            el("title", null, `${e.src} → ${e.dst}: stream ${e.input[":stream"]}, ${grouping} grouping${fields}, ${gale.fmtRate(rate)}`))
        );
        const lx = x2 > x1 ? (x1 + x2) / 2 : (a.x + b.x) / 2 + NODE_W / 2;
        const ly = x2 > x1 ? (y1 + y2) / 2 - 6 : Math.max(a.y, b.y) + NODE_H + 22 + k * 10;
        labelEls.push(el("text", { class: "edge-label", x: lx, y: ly, "text-anchor": "middle" }, label));
      });
    }
    const nodeEls = Object.keys(L.pos).map((id) => {
      const p = L.pos[id];
      const c = viz[id];
      const spout = c[":type"] === "spout";
      const cap = Number(c[":capacity"]) || 0;
      const rate = rates.nodes[id] || 0;
      const barW = NODE_W - 20;
      const lines = spout
        ? ["spout · emits " + gale.fmtRate(rate), "complete " + gale.fmtMs(c[":latency"])]
        : ["bolt · executes " + gale.fmtRate(rate), "process " + gale.fmtMs(c[":latency"])];
      return el(
        "g",
        {
          class: "node " + (spout ? "spout" : "bolt"), "data-id": id, "data-link": c[":link"], transform: `translate(${p.x},${p.y})`,
          // From the attribute: a redraw may reuse the element for another component.
          onclick: function () { const l = this.getAttribute("data-link"); if (l) location.href = l; },
        },
        el("title", null, `${id} (${c[":type"]}): ${spout ? "" : "capacity " + cap.toFixed(3) + ", "}acked ${c[":acked"]}, failed ${c[":failed"]}`),
        el("rect", { class: "box", width: NODE_W, height: NODE_H, rx: 6 }),
        el("text", { class: "name", x: 10, y: 18 }, truncate(id, 22)),
        el("text", { class: "small", x: 10, y: 34 }, lines[0]),
        el("text", { class: "small", x: 10, y: 48 }, lines[1]),
        el("rect", { class: "loadbg", x: 10, y: 56, width: barW, height: 7, rx: 3 }),
        el("rect", { class: "loadbar " + gale.capacityClass(cap), x: 10, y: 56, width: Math.max(0, Math.min(1, cap)) * barW, height: 7, rx: 3 }),
        el("text", { class: "small load-text", x: NODE_W - 10, y: 18, "text-anchor": "end" }, spout ? "" : "load " + Math.round(cap * 100) + "%")
      );
    });
    gale.morphChildren(svg, el("svg", null, defs, ...edgeEls, ...labelEls, ...nodeEls));
  }
};

const NODE_W = 190, NODE_H = 70, GAP_X = 110, GAP_Y = 34, PAD = 20;

function edgeKey(e) {
  return e.src + "|" + e.input[":stream"] + "|" + e.dst;
}
gale.edgeKey = edgeKey;

function truncate(s, n) {
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

// layOut puts each component in a column by its longest path from a
// component with no inputs, and orders each column by the mean row of
// its sources, so that edges cross little.
function layOut(ids, edges) {
  const ins = {};
  for (const id of ids) ins[id] = [];
  for (const e of edges) if (e.src !== e.dst) ins[e.dst].push(e.src);
  const layer = {};
  const visiting = new Set();
  const depth = (id) => {
    if (layer[id] !== undefined) return layer[id];
    if (visiting.has(id)) return 0; // a cycle: cut it here
    visiting.add(id);
    let d = 0;
    for (const s of ins[id]) d = Math.max(d, depth(s) + 1);
    visiting.delete(id);
    return (layer[id] = d);
  };
  ids.forEach(depth);
  const cols = [];
  for (const id of ids) (cols[layer[id]] = cols[layer[id]] || []).push(id);
  const row = {};
  cols.forEach((col, i) => {
    if (i > 0) {
      const mean = (id) => {
        const rs = ins[id].map((s) => row[s]).filter((r) => r !== undefined);
        return rs.length ? rs.reduce((a, b) => a + b, 0) / rs.length : 0;
      };
      col.sort((a, b) => mean(a) - mean(b) || a.localeCompare(b));
    }
    col.forEach((id, k) => (row[id] = k));
  });
  const tallest = Math.max(1, ...cols.map((c) => (c ? c.length : 0)));
  // Room below the boxes for the loops (edges back to an earlier column).
  const below = edges.some((e) => layer[e.dst] <= layer[e.src]) ? 40 : 0;
  const height = PAD * 2 + tallest * NODE_H + (tallest - 1) * GAP_Y + below;
  const pos = {};
  cols.forEach((col, i) => {
    const colH = col.length * NODE_H + (col.length - 1) * GAP_Y;
    const y0 = (height - below - colH) / 2;
    col.forEach((id, k) => (pos[id] = { x: PAD + i * (NODE_W + GAP_X), y: y0 + k * (NODE_H + GAP_Y) }));
  });
  const width = PAD * 2 + cols.length * NODE_W + (cols.length - 1) * GAP_X;
  return { pos, width, height };
}
