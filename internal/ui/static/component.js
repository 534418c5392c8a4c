// The component page: one spout's or bolt's counters, its inputs and
// outputs per stream, its executors and its recent errors.
"use strict";

(function () {
  const el = gale.el;
  const topo = gale.param("topology_id");
  const comp = gale.param("id");

  function stat(label, value, detail) {
    return el("div", { class: "stat" }, el("div", { class: "label" }, label), el("div", { class: "value" }, value), detail ? el("div", { class: "detail" }, detail) : null);
  }

  function render(p) {
    const bolt = p.componentType === "bolt";
    const s = ((bolt ? p.boltStats : p.spoutSummary) || [])[0] || {};
    document.title = "Gale · " + p.id;
    gale.replace("component-name", p.id);
    gale.replace("component-type", p.componentType);
    gale.replace("component-topology", el("a", { href: "topology.html?id=" + encodeURIComponent(p.topologyId) }, p.name), " ", gale.statusBadge(p.topologyStatus));
    document.getElementById("topology-link").href = "topology.html?id=" + encodeURIComponent(p.topologyId);
    document.getElementById("api-link").href = "/api/v1/topology/" + encodeURIComponent(p.topologyId) + "/component/" + encodeURIComponent(p.id);
    gale.replace("window-hint", s.windowPretty ? "totals: " + s.windowPretty.toLowerCase() : "");
    const stats = [
      stat("Executors · tasks", p.executors + " · " + p.tasks),
      stat("Emitted", gale.fmtInt(s.emitted), "transferred " + gale.fmtInt(s.transferred)),
      stat("Acked", gale.fmtInt(s.acked)),
      stat("Failed", gale.fmtInt(s.failed), bolt ? null : "timed out " + gale.fmtInt(s.timedOut) + " · by a bolt " + gale.fmtInt(s.failedByBolt)),
    ];
    if (bolt) {
      stats.push(stat("Executed", gale.fmtInt(s.executed)), stat("Capacity", Number(s.capacity || 0).toFixed(3)), stat("Execute latency", gale.fmtMs(s.executeLatency)), stat("Process latency", gale.fmtMs(s.processLatency)));
    } else {
      stats.push(stat("Complete latency", gale.fmtMs(s.completeLatency)), stat("In flight", gale.fmtInt(s.pending), s.maxPending ? "max " + gale.fmtInt(s.maxPending) : "no max set"), stat("Throttled", (Number(s.throttledSeconds) || 0).toFixed(1) + " s"));
    }
    stats.push(stat("Queue", gale.fmtInt(s.queueDepth), s.queueCapacity ? "of " + gale.fmtInt(s.queueCapacity) : null), stat("Backpressured", (Number(s.backpressureSeconds) || 0).toFixed(1) + " s"), stat("Retries · dead letters", gale.fmtInt(s.retries) + " · " + gale.fmtInt(s.deadLetters)));
    gale.replace("component-stats", stats);
    document.getElementById("inputs").closest("section").hidden = !bolt;
    gale.replace(
      "inputs",
      gale.table(
        [
          { label: "From", cell: (i) => gale.componentLink(p.topologyId, i.component) },
          { label: "Stream", cell: (i) => i.stream },
          { label: "Grouping", cell: (i) => (i.grouping || "") + ((i.groupingFields || []).length ? "(" + i.groupingFields.join(", ") + ")" : "") },
          { label: "Executed", num: true, cell: (i) => gale.fmtInt(i.executed) },
          { label: "Acked", num: true, cell: (i) => gale.fmtInt(i.acked) },
          { label: "Failed", num: true, cell: (i) => gale.fmtInt(i.failed) },
          { label: "Execute latency", num: true, cell: (i) => gale.fmtMs(i.executeLatency) },
          { label: "Process latency", num: true, cell: (i) => gale.fmtMs(i.processLatency) },
        ],
        p.inputStats || [],
        "No inputs."
      )
    );
    gale.replace(
      "outputs",
      gale.table(
        [
          { label: "Stream", cell: (o) => o.stream },
          { label: "Emitted", num: true, cell: (o) => gale.fmtInt(o.emitted) },
          { label: "Transferred", num: true, cell: (o) => gale.fmtInt(o.transferred) },
        ],
        p.outputStats || [],
        "It declares no output stream."
      )
    );
    gale.replace(
      "executors",
      gale.table(
        [
          { label: "Tasks", cell: (e) => el("span", { class: "mono" }, e.id) },
          { label: "Worker", cell: (e) => el("span", { class: "mono" }, e.host + ":" + e.port) },
          { label: "Uptime", cell: (e) => e.uptime },
          { label: "Emitted", num: true, cell: (e) => gale.fmtInt(e.emitted) },
          { label: "Transferred", num: true, cell: (e) => gale.fmtInt(e.transferred) },
          { label: "Executed", num: true, cell: (e) => (bolt ? gale.fmtInt(e.executed) : "") },
          { label: "Acked", num: true, cell: (e) => gale.fmtInt(e.acked) },
          { label: "Failed", num: true, cell: (e) => gale.fmtInt(e.failed) },
          { label: "Capacity", num: true, cell: (e) => (bolt ? e.capacity : "") },
          { label: "Queue", num: true, cell: (e) => (bolt ? gale.fmtInt(e.queueDepth) : "") },
        ],
        p.executorStats || [],
        "No executor has reported yet."
      )
    );
    const errs = (p.componentErrors || []).slice().reverse();
    gale.replace(
      "errors",
      gale.table(
        [
          { label: "Time", cls: "nowrap", cell: (e) => gale.fmtTime(e.errorTimeUnixMs || e.errorTime * 1000) },
          { label: "Task", num: true, cell: (e) => e.errorTask },
          { label: "Worker", cell: (e) => el("span", { class: "mono" }, e.errorHost + ":" + e.errorPort) },
          { label: "Error", cell: (e) => gale.errorText(e.error) },
        ],
        errs,
        "No errors reported."
      )
    );
  }

  async function refresh() {
    try {
      const p = await gale.api("topology/" + encodeURIComponent(topo) + "/component/" + encodeURIComponent(comp));
      render(p);
      gale.banner(null);
      document.getElementById("content").classList.remove("stale");
      gale.replace("updated", "updated " + new Date().toLocaleTimeString("en-GB", { hour12: false }));
    } catch (e) {
      if (e.status === 404) {
        gale.banner(e.message + " ", "error");
        document.getElementById("banner").append(el("a", { href: "/" }, "Back to the cluster"));
        return;
      }
      gale.banner(gale.explain(e));
      document.getElementById("content").classList.add("stale");
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    if (!topo || !comp) {
      gale.replace("content", el("section", { class: "card empty-state" }, el("p", null, "No component named: open this page from a ", el("a", { href: "/" }, "topology's page"), ".")));
      return;
    }
    gale.replace("component-name", comp);
    gale.poll(refresh);
  });
})();
