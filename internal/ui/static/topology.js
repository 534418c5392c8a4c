// The topology page: its summary, graph, live charts, components,
// recent errors and workers, and the actions on it.
"use strict";

(function () {
  const el = gale.el;
  const id = gale.param("id");
  let graph, charts;
  let status = "";
  let name = id;
  let errorsAt = 0; // when the errors were last read
  let gone = false;

  function stat(label, value, detail, statId) {
    return el("div", { class: "stat" }, el("div", { class: "label" }, label), el("div", { class: "value", id: statId }, value), detail ? el("div", { class: "detail" }, detail) : null);
  }

  // windowStats picks topology/:id's all-time totals.
  function windowStats(page) {
    const ws = page.topologyStats || [];
    return ws.find((w) => w.window === ":all-time") || ws[ws.length - 1] || {};
  }

  function renderHeader(page) {
    status = page.status;
    name = page.name;
    document.title = "Gale · " + page.name;
    gale.replace("topology-name", page.name);
    gale.replace("topology-status-wrap", gale.statusBadge(page.status, "topology-status"));
    gale.replace("topology-id", page.id);
    document.getElementById("api-link").href = "/api/v1/topology/" + encodeURIComponent(page.id);
    const can = { activate: status === "INACTIVE", deactivate: status === "ACTIVE", rebalance: status === "ACTIVE" || status === "INACTIVE", kill: status !== "KILLED" };
    for (const [a, ok] of Object.entries(can)) document.getElementById("action-" + a).disabled = !ok;
  }

  function renderStats(page, rates) {
    const w = windowStats(page);
    let timedOut = 0, byBolt = 0;
    for (const s of page.spouts || []) {
      timedOut += Number(s.timedOut) || 0;
      byBolt += Number(s.failedByBolt) || 0;
    }
    gale.replace(
      "topology-stats",
      stat("Acked", gale.fmtInt(w.acked), rates ? gale.fmtRate(rates.acked) + (rates.measured < rates.running ? " (" + rates.measured + " of " + rates.running + " workers)" : "") : "", "stat-acked"),
      stat("Failed", gale.fmtInt(w.failed), "timed out " + gale.fmtInt(timedOut) + " · by a bolt " + gale.fmtInt(byBolt), "stat-failed"),
      stat("Emitted", gale.fmtInt(w.emitted), "transferred " + gale.fmtInt(w.transferred), "stat-emitted"),
      stat("Complete latency", gale.fmtMs(w.completeLatency), "mean, " + (w.windowPretty || "all time").toLowerCase(), "stat-latency"),
      stat("Workers", (page.workersRunning !== undefined ? page.workersRunning + " / " : "") + page.workersTotal, "running / asked", "stat-workers"),
      stat("Executors · tasks", page.executorsTotal + " · " + page.tasksTotal),
      stat("Uptime", page.uptime || "–"),
      stat("Message timeout", page.msgTimeout !== undefined ? page.msgTimeout + " s" : "–", "topology.message.timeout.secs")
    );
    gale.replace("window-hint", w.windowPretty ? "totals: " + w.windowPretty.toLowerCase() : "");
  }

  function load(cap) {
    const c = Number(cap) || 0;
    return el("span", null, el("span", { class: "load" }, el("span", { class: gale.capacityClass(c), style: "width:" + Math.min(100, c * 100).toFixed(0) + "%" })), c.toFixed(3));
  }

  function renderComponents(page) {
    const rows = [];
    for (const s of page.spouts || []) rows.push(Object.assign({ cid: s.spoutId, type: "spout" }, s));
    for (const b of page.bolts || []) rows.push(Object.assign({ cid: b.boltId, type: "bolt" }, b));
    gale.replace(
      "components",
      gale.table(
        [
          { label: "Component", cell: (r) => (r.cid.startsWith("__") ? r.cid : gale.componentLink(page.id, r.cid)) },
          { label: "Type", cell: (r) => r.type },
          { label: "Executors", num: true, cell: (r) => r.executors },
          { label: "Tasks", num: true, cell: (r) => r.tasks },
          { label: "Emitted", num: true, cell: (r) => gale.fmtInt(r.emitted) },
          { label: "Transferred", num: true, cell: (r) => gale.fmtInt(r.transferred) },
          { label: "Executed", num: true, cell: (r) => (r.type === "bolt" ? gale.fmtInt(r.executed) : "") },
          { label: "Acked", num: true, cell: (r) => el("span", { "data-field": "acked" }, gale.fmtInt(r.acked)) },
          { label: "Failed", num: true, title: "a spout's: timed out / failed by a bolt", cell: (r) => gale.fmtInt(r.failed) + (r.type === "spout" ? " (" + gale.fmtInt(r.timedOut) + " / " + gale.fmtInt(r.failedByBolt) + ")" : "") },
          { label: "Capacity", cls: "nowrap", cell: (r) => (r.type === "bolt" ? load(r.capacity) : "") },
          { label: "Latency", title: "a spout's complete latency; a bolt's execute / process latency", num: true, cell: (r) => (r.type === "spout" ? gale.fmtMs(r.completeLatency) : gale.fmtMs(r.executeLatency) + " / " + gale.fmtMs(r.processLatency)) },
          { label: "Last error", cell: (r) => (r.lastError ? el("span", { class: "error-text", title: r.lastError }, r.lastError.slice(0, 80)) : "") },
        ],
        rows.map((r) => Object.assign({ attrs: { "data-component": r.cid } }, r)),
        "The topology has no components.",
        { id: "component-table" }
      )
    );
  }

  function renderWorkers(page) {
    gale.replace(
      "workers",
      gale.table(
        [
          { label: "Worker", cell: (w) => el("span", { class: "mono" }, w.host + ":" + w.port) },
          { label: "Supervisor", cell: (w) => el("span", { class: "mono" }, w.supervisorId) },
          { label: "State", cell: (w) => [w.state, w.reason ? el("div", { class: "muted" }, w.reason) : null] },
          { label: "Pid", num: true, cell: (w) => w.pid || "" },
          { label: "Executors", num: true, cell: (w) => w.executorsTotal },
          { label: "RSS", num: true, cell: (w) => (w.rssBytes ? gale.fmtBytes(w.rssBytes) : "") },
          { label: "Emitted", num: true, cell: (w) => gale.fmtInt(w.emitted) },
          { label: "Acked", num: true, cell: (w) => gale.fmtInt(w.acked) },
          { label: "Failed", num: true, cell: (w) => gale.fmtInt(w.failed) },
          { label: "Pending", num: true, cell: (w) => gale.fmtInt(w.pending) },
        ],
        page.workers || [],
        page.status === "INACTIVE" || page.status === "ACTIVE" ? "No worker has reported yet." : "No workers."
      )
    );
  }

  async function refreshErrors(page) {
    const comps = [...(page.spouts || []).map((s) => s.spoutId), ...(page.bolts || []).map((b) => b.boltId)].filter((c) => !c.startsWith("__"));
    const pages = await Promise.all(comps.map((c) => gale.api("topology/" + encodeURIComponent(page.id) + "/component/" + encodeURIComponent(c)).catch(() => null)));
    const errs = [];
    pages.forEach((p, i) => {
      for (const e of (p && p.componentErrors) || []) errs.push(Object.assign({ component: comps[i] }, e));
    });
    errs.sort((a, b) => (b.errorTimeUnixMs || b.errorTime * 1000) - (a.errorTimeUnixMs || a.errorTime * 1000));
    gale.replace(
      "errors",
      gale.table(
        [
          { label: "Time", cls: "nowrap", cell: (e) => gale.fmtTime(e.errorTimeUnixMs || e.errorTime * 1000) },
          { label: "Component", cell: (e) => gale.componentLink(page.id, e.component) },
          { label: "Task", num: true, cell: (e) => (e.errorTask === undefined || e.errorTask === null ? "" : e.errorTask) },
          { label: "Worker", cell: (e) => el("span", { class: "mono" }, e.errorHost + (e.errorPort ? ":" + e.errorPort : "")) },
          { label: "Error", cell: (e) => gale.errorText(e.error) },
        ],
        errs.slice(0, 25),
        "No errors reported.",
        { id: "error-table" }
      )
    );
  }

  // rates reads the page's live rates (liveRates): each worker's counters
  // between its last two reports over the time between them, summed.
  // Counters move only when a supervisor reports (every few seconds), so
  // rates over the poll interval would read 0 or several times the truth.
  // Null until a worker has a rate.
  function rates(page) {
    const lr = page.liveRates;
    if (!lr || !(Number(lr.workersMeasured) > 0)) return null;
    const r = {
      nodes: {},
      edges: {},
      acked: Number(lr.acked) || 0,
      failed: Number(lr.failed) || 0,
      emitted: Number(lr.emitted) || 0,
      timedOut: Number(lr.timedOut) || 0,
      byBolt: Number(lr.failedByBolt) || 0,
      latency: lr.completeLatency === null || lr.completeLatency === undefined ? null : Number(lr.completeLatency),
      asOf: Number(lr.asOfUnixMs) || Date.now(),
      measured: Number(lr.workersMeasured) || 0,
      running: Number(lr.workersRunning) || 0,
    };
    for (const [cid, v] of Object.entries(lr.components || {})) r.nodes[cid] = Number(v) || 0;
    for (const e of lr.inputs || []) r.edges[gale.edgeKey({ src: e.source, dst: e.component, input: { ":stream": e.stream } })] = Number(e.rate) || 0;
    return r;
  }
  gale.liveRates = rates; // for the tests

  function selectedWindow() {
    return document.getElementById("window").value;
  }

  let unreachable = false; // the banner says the API could not be reached

  async function refresh() {
    let page, viz;
    try {
      const q = "?window=" + encodeURIComponent(selectedWindow());
      [page, viz] = await Promise.all([
        gale.api("topology/" + encodeURIComponent(id) + q),
        gale.api("topology/" + encodeURIComponent(id) + "/visualization"),
      ]);
    } catch (e) {
      if (e.status === 404) return showGone(e);
      gale.banner(gale.explain(e));
      unreachable = true;
      document.getElementById("content").classList.add("stale");
      return;
    }
    if (gone) {
      gone = false;
      location.reload(); // it is back (submitted again): start afresh
      return;
    }
    // Only the banner this refresh put up goes: an action's message stays,
    // so the page does not shift under the reader's pointer on each poll.
    if (unreachable) {
      unreachable = false;
      gale.banner(null);
    }
    document.getElementById("content").classList.remove("stale");
    const r = rates(page);
    renderHeader(page);
    renderStats(page, r);
    graph.update(viz, r || { nodes: {}, edges: {} });
    renderComponents(page);
    renderWorkers(page);
    if (r) {
      const now = Date.now();
      charts.throughput.push(now, [r.acked, r.emitted]);
      charts.latency.push(now, [r.latency]);
      charts.failures.push(now, [r.timedOut, r.byBolt]);
      gale.replace("now-throughput", gale.fmtRate(r.acked) + " acked");
      gale.replace("now-latency", r.latency === null ? "–" : gale.fmtMs(r.latency));
      gale.replace("now-failures", gale.fmtRate(r.timedOut + r.byBolt));
    }
    if (Date.now() - errorsAt > 4000) {
      errorsAt = Date.now();
      await refreshErrors(page);
    }
    gale.replace("updated", "updated " + new Date().toLocaleTimeString("en-GB", { hour12: false }));
  }

  function showGone(e) {
    gone = true;
    gale.banner(null);
    for (const a of ["activate", "deactivate", "rebalance", "kill"]) document.getElementById("action-" + a).disabled = true;
    gale.replace("topology-status-wrap", gale.statusBadge("GONE", "topology-status"));
    const content = document.getElementById("content");
    content.classList.remove("stale");
    let msg = document.getElementById("gone");
    if (!msg) {
      msg = el(
        "section",
        { class: "card empty-state", id: "gone" },
        el("p", null, "Topology ", el("strong", null, name || id), " is not on the cluster: it was killed, or never submitted."),
        el("p", { class: "muted" }, e.message),
        el("p", null, el("a", { href: "/" }, "Back to the cluster"))
      );
      content.querySelectorAll("section").forEach((s) => (s.hidden = true));
      content.append(msg);
    }
  }

  // act runs an action after its confirmation.
  async function act(op, path, body, done) {
    try {
      await gale.api("topology/" + encodeURIComponent(id) + "/" + path, "POST", body);
      gale.banner(done, "info");
      errorsAt = 0;
      await refresh();
      gale.banner(done, "info");
    } catch (e) {
      let msg = op + " failed: " + e.message;
      if (e.status === 401 || e.status === 403) msg += " Set the cluster's token with the Set token button, then try again.";
      gale.banner(msg);
    }
  }

  function setupActions() {
    document.getElementById("action-activate").addEventListener("click", async () => {
      if (await gale.confirm({ title: "Activate " + name + "?", body: el("p", null, "Its spouts start emitting again."), action: "Activate" }))
        act("activate", "activate", undefined, "Activated " + name + ".");
    });
    document.getElementById("action-deactivate").addEventListener("click", async () => {
      if (await gale.confirm({ title: "Deactivate " + name + "?", body: el("p", null, "Its spouts stop emitting; trees in flight complete. Activate resumes it."), action: "Deactivate" }))
        act("deactivate", "deactivate", undefined, "Deactivated " + name + ".");
    });
    document.getElementById("action-kill").addEventListener("click", async () => {
      const wait = el("input", { type: "number", min: "0", value: "30", id: "kill-wait" });
      const ok = await gale.confirm({
        title: "Kill " + name + "?",
        body: [el("p", null, "The topology is deactivated, its trees in flight get the wait to drain, then its workers stop and it is removed. This cannot be undone."), el("label", { for: "kill-wait" }, "Wait (seconds)"), wait],
        action: "Kill",
        danger: true,
      });
      if (ok) act("kill", "kill/" + Math.max(0, parseInt(wait.value, 10) || 0), undefined, "Killing " + name + ".");
    });
    document.getElementById("action-rebalance").addEventListener("click", async () => {
      const page = await gale.api("topology/" + encodeURIComponent(id)).catch(() => null);
      const wait = el("input", { type: "number", min: "0", value: "10", id: "rebalance-wait" });
      const workers = el("input", { type: "number", min: "1", value: page ? page.workersTotal : "", id: "rebalance-workers" });
      const comps = page ? [...page.spouts.map((s) => [s.spoutId, s.executors, s.tasks]), ...page.bolts.filter((b) => !b.boltId.startsWith("__")).map((b) => [b.boltId, b.executors, b.tasks])] : [];
      const inputs = comps.map(([c, n, tasks]) => [c, n, el("input", { type: "number", min: "1", max: String(tasks), value: n, "data-component": c, title: "at most " + tasks + " (its tasks)" })]);
      const ok = await gale.confirm({
        title: "Rebalance " + name + "?",
        body: [
          el("p", null, "The topology is deactivated for the wait, reassigned with these numbers, and activated again if it was active."),
          el("label", { for: "rebalance-wait" }, "Wait (seconds)"), wait,
          el("label", { for: "rebalance-workers" }, "Workers"), workers,
          el("label", null, "Executors per component"),
          el("div", { class: "grid" }, inputs.map(([c, , input]) => [el("span", { class: "mono" }, c), input])),
        ],
        action: "Rebalance",
      });
      if (!ok) return;
      const executors = {};
      for (const [c, n, input] of inputs) {
        const v = parseInt(input.value, 10);
        if (v > 0 && v !== n) executors[c] = v;
      }
      const numWorkers = parseInt(workers.value, 10);
      const body = { rebalanceOptions: { executors } };
      if (numWorkers > 0 && (!page || numWorkers !== page.workersTotal)) body.rebalanceOptions.numWorkers = numWorkers;
      act("rebalance", "rebalance/" + Math.max(0, parseInt(wait.value, 10) || 0), body, "Rebalancing " + name + ".");
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    if (!id) {
      gale.replace("content", el("section", { class: "card empty-state" }, el("p", null, "No topology named: open this page from the ", el("a", { href: "/" }, "cluster page"), ".")));
      return;
    }
    gale.replace("topology-name", id);
    graph = new gale.Graph(document.getElementById("graph"));
    charts = {
      throughput: new gale.Chart(document.getElementById("chart-throughput"), [{ label: "acked/s", color: "#1f5fbf" }, { label: "emitted/s", color: "#9aa4b2" }], gale.fmtShort),
      latency: new gale.Chart(document.getElementById("chart-latency"), [{ label: "ms", color: "#7a3fb8" }], (v) => gale.fmtShort(v) + " ms"),
      failures: new gale.Chart(document.getElementById("chart-failures"), [{ label: "timed out/s", color: "#d99a1e" }, { label: "failed by a bolt/s", color: "#d14334" }], gale.fmtShort),
    };
    document.getElementById("window").addEventListener("change", () => refresh());
    gale.charts = charts; // for the tests: the points drawn, one a poll
    window.addEventListener("resize", () => Object.values(charts).forEach((c) => c.draw()));
    setupActions();
    gale.poll(refresh);
  });
})();
