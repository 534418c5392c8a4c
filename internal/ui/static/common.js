// Gale web UI: what every page shares. Plain JavaScript, no build step:
// the pages read the REST API under /api/v1 and draw with the DOM, SVG
// and canvas.
"use strict";

const gale = {};

// How often the pages poll the REST API.
gale.pollMillis = 2000;

// el makes an element: el("td", {class: "num"}, "42", child, ...).
// Attributes whose name starts with "on" are listeners; text is set as
// text, never parsed as HTML.
gale.el = function (tag, attrs, ...children) {
  const ns = gale.svgTags.has(tag) ? "http://www.w3.org/2000/svg" : null;
  const e = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
};
gale.svgTags = new Set(["svg", "g", "rect", "path", "text", "line", "marker", "defs", "title", "tspan", "circle"]);

// replace makes the content of the element with the id children. It
// changes only what differs (gale.morph), so that the page does not
// flicker on each refresh, a hover or a selection survives it, and a
// click lands on the element it was aimed at.
gale.replace = function (id, ...children) {
  const e = document.getElementById(id);
  if (!e) return null;
  const next = e.cloneNode(false);
  next.append(...children.flat(Infinity).filter((c) => c !== null && c !== undefined));
  gale.morphChildren(e, next);
  return e;
};

// morph makes the node old like the node next, reusing old's elements
// where next has an element of the same tag at the same place. Event
// listeners stay those of the element first made.
gale.morph = function (old, next) {
  if (old.nodeType !== next.nodeType || old.nodeName !== next.nodeName) {
    old.replaceWith(next);
    return;
  }
  if (old.nodeType !== Node.ELEMENT_NODE) {
    if (old.nodeValue !== next.nodeValue) old.nodeValue = next.nodeValue;
    return;
  }
  // A <details> the reader opened stays open.
  for (const a of [...old.attributes]) if (!next.hasAttribute(a.name) && !(a.name === "open" && old.nodeName === "DETAILS")) old.removeAttribute(a.name);
  for (const a of [...next.attributes]) if (old.getAttribute(a.name) !== a.value) old.setAttribute(a.name, a.value);
  gale.morphChildren(old, next);
};

gale.morphChildren = function (old, next) {
  const oc = [...old.childNodes];
  const nc = [...next.childNodes];
  nc.forEach((n, i) => (i < oc.length ? gale.morph(oc[i], n) : old.append(n)));
  for (let i = nc.length; i < oc.length; i++) oc[i].remove();
};

// The nimbus bearer token, for the actions when nimbus.auth.token is set.
// It lives in sessionStorage: gone when the tab closes.
gale.tokenKey = "gale.nimbus.token";
gale.token = () => sessionStorage.getItem(gale.tokenKey) || "";
gale.setToken = (t) => (t ? sessionStorage.setItem(gale.tokenKey, t) : sessionStorage.removeItem(gale.tokenKey));

// APIError is a REST API call's failure: status 0 when the UI itself is
// unreachable, else the HTTP status with Storm's errorMessage.
class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}
gale.APIError = APIError;

// api calls the REST API: GET path, or method with a JSON body.
gale.api = async function (path, method, body) {
  const opts = { method: method || "GET", headers: { Accept: "application/json" } };
  if (opts.method !== "GET") {
    const t = gale.token();
    if (t) opts.headers.Authorization = "Bearer " + t;
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
  }
  let resp;
  try {
    resp = await fetch("/api/v1/" + path, opts);
  } catch (e) {
    throw new APIError(0, "the Gale UI does not answer (" + e.message + "): is gale ui (or gale dev) still running?");
  }
  let data = null;
  try {
    data = await resp.json();
  } catch (e) {
    // not JSON: judged by the status below
  }
  if (!resp.ok) {
    throw new APIError(resp.status, (data && data.errorMessage) || resp.status + " " + resp.statusText);
  }
  return data;
};

// Formatting.
gale.fmtInt = function (n) {
  n = Number(n) || 0;
  return n.toLocaleString("en-US");
};
gale.fmtShort = function (n) {
  n = Number(n) || 0;
  const a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(1) + "G";
  if (a >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (a >= 1e4) return (n / 1e3).toFixed(1) + "k";
  if (a >= 100) return n.toFixed(0);
  if (a >= 10) return n.toFixed(1);
  return n.toFixed(2).replace(/\.?0+$/, "") || "0";
};
gale.fmtRate = (n) => gale.fmtShort(n) + "/s";
gale.fmtMs = function (v) {
  v = Number(v) || 0;
  if (v >= 1000) return (v / 1000).toFixed(2) + " s";
  if (v >= 10) return v.toFixed(0) + " ms";
  return v.toFixed(2) + " ms";
};
gale.fmtBytes = function (b) {
  b = Number(b) || 0;
  if (b >= 1 << 30) return (b / (1 << 30)).toFixed(1) + " GiB";
  if (b >= 1 << 20) return (b / (1 << 20)).toFixed(1) + " MiB";
  if (b >= 1 << 10) return (b / (1 << 10)).toFixed(0) + " KiB";
  return b + " B";
};
gale.fmtTime = function (unixMs) {
  if (!unixMs) return "";
  const d = new Date(Number(unixMs));
  const time = d.toLocaleTimeString("en-GB", { hour12: false });
  return d.toDateString() === new Date().toDateString() ? time : d.toLocaleDateString("en-CA") + " " + time;
};

// statusBadge shows a topology's status.
gale.statusBadge = function (status, id) {
  const s = String(status || "UNKNOWN");
  return gale.el("span", { class: "badge status-" + s.toLowerCase(), id: id }, s);
};

// capacityClass names a load's colour: calm, busy, saturated.
gale.capacityClass = function (c) {
  c = Number(c) || 0;
  if (c >= 0.8) return "load-high";
  if (c >= 0.5) return "load-mid";
  return "load-low";
};

// banner shows (or, with no message, hides) the page's problem banner.
gale.banner = function (message, kind) {
  const b = document.getElementById("banner");
  if (!b) return;
  if (!message) {
    b.hidden = true;
    b.replaceChildren();
    return;
  }
  b.hidden = false;
  b.className = "banner " + (kind || "error");
  b.replaceChildren(message);
};

// unreachable says what an API failure means for the reader.
gale.explain = function (err) {
  if (err.status === 0) return err.message;
  if (err.status === 503) return "Nimbus is unreachable: " + err.message + ". The numbers shown are the last ones read; the page keeps trying.";
  return err.message;
};

// poller runs fn now and then every pollMillis, one call at a time, and
// not while the tab is hidden.
gale.poll = function (fn) {
  let timer = null;
  const tick = async () => {
    timer = null;
    if (!document.hidden) {
      try {
        await fn();
      } catch (e) {
        console.error(e);
      }
    }
    timer = setTimeout(tick, gale.pollMillis);
  };
  tick();
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && timer !== null) {
      clearTimeout(timer);
      tick();
    }
  });
};

// table makes a table with a header row and the rows given; an empty
// list shows the empty text across the table.
gale.table = function (columns, rows, empty, attrs) {
  const head = gale.el("tr", null, columns.map((c) => gale.el("th", { class: c.num ? "num" : null, title: c.title }, c.label)));
  const body = rows.length
    ? rows.map((r) => gale.el("tr", r.attrs || null, columns.map((c) => gale.el("td", { class: c.num ? "num" : c.cls }, c.cell(r)))))
    : [gale.el("tr", null, gale.el("td", { colspan: columns.length, class: "empty" }, empty))];
  return gale.el("table", attrs || null, gale.el("thead", null, head), gale.el("tbody", null, body));
};

// errorText shows an error: whole when short, else its first line with
// the rest behind a click.
gale.errorText = function (text) {
  text = String(text || "");
  const firstLine = text.split("\n", 1)[0];
  if (text.length <= 240 && firstLine === text) return gale.el("div", { class: "error-text" }, text);
  const head = firstLine.length > 160 ? firstLine.slice(0, 160) + "…" : firstLine;
  return gale.el("details", { class: "error-text" }, gale.el("summary", null, head), gale.el("pre", null, text));
};

// param is the page URL's query parameter.
gale.param = (name) => new URLSearchParams(location.search).get(name) || "";

gale.topologyLink = (id, text) => gale.el("a", { href: "topology.html?id=" + encodeURIComponent(id) }, text || id);
gale.componentLink = (topo, comp) =>
  gale.el("a", { href: "component.html?id=" + encodeURIComponent(comp) + "&topology_id=" + encodeURIComponent(topo) }, comp);

// The token dialog: the header's "Token" button lets the user give the
// cluster's nimbus.auth.token for the actions.
gale.setupToken = function () {
  const btn = document.getElementById("token-button");
  if (!btn) return;
  const label = () => (btn.textContent = gale.token() ? "Token set" : "Set token");
  label();
  btn.addEventListener("click", async () => {
    const input = gale.el("input", { type: "password", id: "token-input", autocomplete: "off", placeholder: "nimbus.auth.token", value: gale.token() });
    const ok = await gale.confirm({
      title: "Nimbus token",
      body: [
        gale.el("p", null, "Activate, deactivate, rebalance and kill need the cluster's nimbus.auth.token when it is set. " +
          "It is kept in this tab only (sessionStorage) and sent as Authorization: Bearer TOKEN."),
        input,
      ],
      action: "Save",
      focus: input,
    });
    if (ok) {
      gale.setToken(input.value.trim());
      label();
    }
  });
};

// confirm shows a modal dialog and resolves true when its action button
// is clicked, false when cancelled.
gale.confirm = function ({ title, body, action, danger, focus }) {
  return new Promise((resolve) => {
    const close = (v) => {
      overlay.remove();
      document.removeEventListener("keydown", onKey);
      resolve(v);
    };
    const onKey = (e) => {
      if (e.key === "Escape") close(false);
      // Enter in a field confirms, unless the action is dangerous; on a
      // button, the button decides.
      if (e.key === "Enter" && e.target.tagName === "INPUT" && !danger) {
        e.preventDefault();
        close(true);
      }
    };
    const ok = gale.el("button", { class: danger ? "danger" : "primary", id: "confirm-ok", onclick: () => close(true) }, action);
    const cancel = gale.el("button", { id: "confirm-cancel", onclick: () => close(false) }, "Cancel");
    const overlay = gale.el(
      "div",
      { class: "overlay", id: "confirm" },
      gale.el(
        "div",
        { class: "dialog", role: "dialog", "aria-modal": "true", "aria-labelledby": "confirm-title" },
        gale.el("h2", { id: "confirm-title" }, title),
        gale.el("div", { class: "dialog-body" }, body),
        gale.el("div", { class: "dialog-actions" }, cancel, ok)
      )
    );
    document.body.append(overlay);
    document.addEventListener("keydown", onKey);
    // A dangerous action starts on Cancel: a stray Enter does not kill.
    (focus || (danger ? cancel : ok)).focus();
  });
};

document.addEventListener("DOMContentLoaded", gale.setupToken);
