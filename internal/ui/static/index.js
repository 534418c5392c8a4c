// The cluster page: summary, topologies, supervisors, nimbuses.
"use strict";

(function () {
  const el = gale.el;

  function stat(label, value, detail, id) {
    return el("div", { class: "stat" }, el("div", { class: "label" }, label), el("div", { class: "value", id: id }, value), detail ? el("div", { class: "detail" }, detail) : null);
  }

  function renderSummary(c) {
    gale.replace("version", "version " + (c.galeVersion || c.stormVersion || "?"));
    gale.replace(
      "cluster-stats",
      stat("Supervisors", gale.fmtInt(c.supervisors), null, "stat-supervisors"),
      stat("Topologies", gale.fmtInt(c.topologies), null, "stat-topologies"),
      stat("Slots used", gale.fmtInt(c.slotsUsed) + " / " + gale.fmtInt(c.slotsTotal), gale.fmtInt(c.slotsFree) + " free"),
      stat("Executors", gale.fmtInt(c.executorsTotal)),
      stat("Tasks", gale.fmtInt(c.tasksTotal)),
      stat("Nimbus uptime", c.nimbusUptime || "–")
    );
  }

  function renderTopologies(list) {
    const rows = list.topologies || [];
    gale.replace(
      "topologies",
      rows.length
        ? gale.table(
            [
              { label: "Name", cell: (t) => gale.topologyLink(t.id, t.name) },
              { label: "Id", cell: (t) => el("span", { class: "mono" }, t.id) },
              { label: "Status", cell: (t) => [gale.statusBadge(t.status), t.pendingReason ? el("div", { class: "muted" }, t.pendingReason) : null] },
              { label: "Uptime", cell: (t) => t.uptime },
              { label: "Workers", num: true, cell: (t) => (t.workersRunning !== undefined ? t.workersRunning + " / " : "") + t.workersTotal },
              { label: "Executors", num: true, cell: (t) => gale.fmtInt(t.executorsTotal) },
              { label: "Tasks", num: true, cell: (t) => gale.fmtInt(t.tasksTotal) },
            ],
            rows.map((t) => Object.assign({ attrs: { "data-topology": t.name } }, t)),
            "",
            { id: "topology-table" }
          )
        : el(
            "div",
            { class: "empty-state", id: "no-topologies" },
            el("p", null, "No topology is running."),
            el("p", null, "Submit one with ", el("code", null, "gale submit wordcount --nimbus HOST:PORT"), ", or run ", el("code", null, "gale demo"), ".")
          )
    );
  }

  function renderSupervisors(s) {
    const rows = s.supervisors || [];
    gale.replace(
      "supervisors",
      gale.table(
        [
          { label: "Id", cell: (x) => el("span", { class: "mono" }, x.id) },
          { label: "Host", cell: (x) => x.host },
          { label: "Platform", cell: (x) => (x.goos ? x.goos + "/" + x.goarch : "") },
          { label: "Uptime", cell: (x) => x.uptime },
          { label: "Slots used", num: true, cell: (x) => x.slotsUsed + " / " + x.slotsTotal },
          { label: "Ports", cell: (x) => el("span", { class: "mono" }, (x.ports || []).join(", ")) },
        ],
        rows,
        "No supervisor has registered: start one with gale supervisor."
      )
    );
  }

  function renderNimbuses(n) {
    gale.replace(
      "nimbuses",
      gale.table(
        [
          { label: "Id", cell: (x) => el("span", { class: "mono" }, x.id) },
          { label: "Address", cell: (x) => el("span", { class: "mono" }, x.host + ":" + x.port) },
          { label: "Status", cell: (x) => x.status },
          { label: "Uptime", cell: (x) => x.nimbusUpTime },
          { label: "Version", cell: (x) => x.version },
        ],
        n.nimbuses || [],
        "No nimbus answers."
      )
    );
  }

  async function refresh() {
    try {
      const [c, t, s, n] = await Promise.all([
        gale.api("cluster/summary"),
        gale.api("topology/summary"),
        gale.api("supervisor/summary"),
        gale.api("nimbus/summary"),
      ]);
      renderSummary(c);
      renderTopologies(t);
      renderSupervisors(s);
      renderNimbuses(n);
      gale.banner(null);
      document.getElementById("content").classList.remove("stale");
      gale.replace("updated", "updated " + new Date().toLocaleTimeString("en-GB", { hour12: false }));
    } catch (e) {
      gale.banner(gale.explain(e));
      document.getElementById("content").classList.add("stale");
    }
  }

  document.addEventListener("DOMContentLoaded", () => gale.poll(refresh));
})();
