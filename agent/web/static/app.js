// The ecntune dashboard: polls /api/overview every control interval
// (at least 1 s) and redraws tables and pictures in place.
"use strict";
const $ = (id) => document.getElementById(id);
let intervals = [];
let refreshMs = 2000;
let picked = null; // {target, port, queue}
let auditBefore = 0; // 0: the newest page of the audit log; else /changes?before= this sequence
let auditNext = 0; // next_before of the newest page, or of the page shown
let newestAudit = null; // the last overview, whose audit page is the newest

function keyText(k) { return `${k.target} ${k.port} q${k.queue}`; }
function keyParams(k) {
  return `target=${encodeURIComponent(k.target)}&port=${encodeURIComponent(k.port)}&queue=${k.queue}`;
}
// sig is x to p significant digits without trailing zeros (1.5, 100,
// 1000: a whole number keeps its zeros).
function sig(x, p) {
  return String(parseFloat(x.toPrecision(p)));
}
// fmtBytes: sizes in decimal units, 4 significant digits; a size that
// rounds to 1000 of a unit is written in the next (999999 B: 1MB).
function fmtBytes(b) {
  for (const [u, name] of [[1e9, "GB"], [1e6, "MB"], [1e3, "KB"]]) {
    if (b >= u * 0.99995) return sig(b / u, 4) + name;
  }
  return b + "B";
}
// fmtAlpha: a PG's alpha as agent report writes it (env.FormatAlpha):
// 1/N for the inverse of a whole number, else 4 significant digits.
function fmtAlpha(a) {
  if (!(a > 0) || !isFinite(a)) return "unknown";
  if (a < 1 && Math.abs(1 / a - Math.round(1 / a)) < 1e-9) return "1/" + Math.round(1 / a);
  return sig(a, 4);
}
function setting(s) {
  let t = `kmin ${fmtBytes(s.kmin_bytes)} kmax ${fmtBytes(s.kmax_bytes)} pmax ${sig(s.pmax * 100, 3)}%`;
  if (s.headroom_bytes) t += ` headroom ${fmtBytes(s.headroom_bytes)}`;
  if (s.alpha > 0) t += ` alpha ${fmtAlpha(s.alpha)}`;
  return t;
}
// fmtTime renders Unix ns as the audit log does: UTC, 24-hour, with the
// date ("2026-11-29 14:01:02 UTC"; ms adds milliseconds).
function fmtTime(ns, ms = false) {
  const iso = new Date(ns / 1e6).toISOString(); // 2026-11-29T14:01:02.123Z
  return iso.slice(0, 10) + " " + iso.slice(11, ms ? 23 : 19) + " UTC";
}
// show points img at url, unless it already shows it (inline at load).
function show(img, url) {
  if (img.dataset && img.dataset.src === url) { img.hidden = false; return false; }
  if (img.dataset) img.dataset.src = url;
  img.src = url;
  return true;
}
function num(v, d = 1) { return v === null || v === undefined ? "–" : v.toFixed(d); }
function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}
function fill(tableId, rows, render) {
  const body = $(tableId).tBodies[0];
  body.replaceChildren();
  for (const r of rows) body.appendChild(render(r));
}
function pickRow(tr, key) {
  tr.classList.add("pick");
  tr.addEventListener("click", () => pick(key));
}

function pick(k) {
  picked = k;
  const v = JSON.stringify(k);
  const sel = $("queue");
  if (![...sel.options].some((o) => o.value === v)) {
    const o = document.createElement("option");
    o.value = v; o.textContent = keyText(k);
    sel.appendChild(o);
  }
  sel.value = v;
  drawQueue();
}

function drawQueue() {
  if (!picked) return;
  const img = $("queue-chart");
  const newest = intervals.length ? intervals[intervals.length - 1] : 0;
  img.onload = () => { img.hidden = false; $("queue-msg").textContent = ""; };
  img.onerror = () => { img.hidden = true; $("queue-msg").textContent = `no history of ${keyText(picked)} yet`; };
  if (!show(img, `/dashboard/queue.png?${keyParams(picked)}&v=${newest}`)) $("queue-msg").textContent = "";
}

// pinned is the time (Unix ns) of the interval picked with the slider,
// live off: it stays on screen as newer intervals come (the slider
// follows it) until live is checked again; 0: none picked.
let pinned = 0;

// agoPicked pins the interval the slider points at.
function agoPicked() {
  $("live").checked = false;
  const ago = Number($("ago").value);
  pinned = intervals.length ? intervals[Math.max(0, intervals.length - 1 - ago)] : 0;
  drawHeatmap();
}

function drawHeatmap() {
  const img = $("heatmap");
  const view = $("view").value;
  $("slider-box").style.visibility = view === "fabric" ? "visible" : "hidden";
  if (!intervals.length) { $("heatmap-msg").textContent = "waiting for the first control interval…"; return; }
  const newest = intervals[intervals.length - 1];
  if ($("live").checked) pinned = 0;
  let at = "";
  if (pinned) {
    const i = intervals.indexOf(pinned);
    if (i < 0) {
      // gone from the kept history: said, not replaced by another interval
      $("ago").value = intervals.length - 1;
      $("ago-label").textContent = `${fmtTime(pinned, true)}: no longer kept (the kept intervals run from ${fmtTime(intervals[0], true)}); move the slider or check live`;
      if (view === "fabric") { img.hidden = true; $("heatmap-msg").textContent = "the interval picked has left the kept history"; return; }
    } else {
      $("ago").value = intervals.length - 1 - i;
      at = `&at=${pinned}`;
    }
  }
  const ago = Number($("ago").value);
  const t = intervals[intervals.length - 1 - ago];
  if (!pinned || at) {
    $("ago-label").textContent = ago === 0 && !pinned ? "newest" : `${fmtTime(t, true)}, ${((newest - t) / 1e9).toFixed(1)} s before the newest`;
  }
  img.onload = () => { img.hidden = false; $("heatmap-msg").textContent = ""; };
  // no broken image: the picture goes, a sentence says why
  img.onerror = () => {
    img.hidden = true;
    $("heatmap-msg").textContent = queuesHeard ? "heatmap not available yet" : "no switch has sent telemetry yet: nothing to draw (see Switches for why)";
  };
  const where = at && view === "fabric" ? at : `&ago=${ago}`;
  if (!show(img, `/dashboard/heatmap.png?metric=${$("metric").value}&view=${view}${where}&v=${newest}`)) $("heatmap-msg").textContent = "";
}

let queuesHeard = 0; // queues of the newest overview

function render(ov) {
  intervals = ov.intervals_ns || [];
  queuesHeard = ov.queues;
  refreshMs = Math.max(1000, Math.min(10000, ov.interval_s * 1000));
  const mode = ov.approve ? `${ov.mode}, approve mode: ${ov.pending_n} waiting for approval` : ov.mode;
  $("mode").textContent = ov.pause && ov.pause.paused ? `${mode}, paused by ${ov.pause.by}: ${ov.pause.reason || "no reason given"}` : mode;
  $("mode").className = ov.pause && ov.pause.paused ? "pill bad" : "pill";
  $("policy").textContent = `policy ${ov.policy}, every ${ov.interval_s} s`;
  const h = $("health");
  const notes = ov.notes || [];
  h.textContent = (ov.healthy ? "healthy" : "unhealthy") + (notes.length ? `, ${notes.length === 1 ? "a note" : notes.length + " notes"}` : "");
  h.className = "pill " + (ov.healthy ? (notes.length ? "warn" : "ok") : "bad");
  $("problems").hidden = ov.healthy && !notes.length;
  $("problems").textContent = ov.problems.concat(notes).join("\n");
  $("updated").textContent = "updated " + fmtTime(ov.now_ns);
  $("n-targets").textContent = ov.targets.length;
  $("n-queues").textContent = ov.queues;
  $("n-change").textContent = ov.would_change;
  $("change-label").textContent = ov.mode === "shadow" ? "would change this interval (as the guard allows)" :
    ov.approve ? `changed in the last interval (approved, or safety changes); ${ov.pending_n} wait for approval` : "changed in the last interval";
  // the guard aside, as /metrics' target_recommended_changes counts
  $("n-differ").textContent = `${ov.differing} of ${ov.queues} recommend another setting than the switch's`;
  $("n-audit").textContent = ov.changes_in_window;
  $("n-flaps").textContent = ov.flaps_in_window;
  $("n-flaps").className = ov.flaps_in_window > 0 ? "big bad" : "big";
  $("n-rate").textContent = ov.changes_per_queue_per_100_intervals.toFixed(2);
  $("n-rate").className = ov.changes_per_queue_per_100_intervals > 2 ? "big bad" : "big";
  $("rate-label").textContent = `changes per queue per 100 intervals (window: ${ov.window_queues} queues heard in it)`;
  $("n-kinds").textContent = ov.rollbacks_in_window + " · " + ov.repairs_in_window + " · " + ov.fallbacks_in_window;

  const slider = $("ago");
  slider.max = Math.max(0, intervals.length - 1);
  if ($("live").checked) slider.value = 0;

  fill("targets", ov.targets, (t) => {
    const tr = document.createElement("tr");
    cell(tr, t.target);
    cell(tr, t.device || "?").title = t.device_why || "";
    let age = t.heard ? `${t.telemetry_age_s.toFixed(1)} s` : "none yet";
    if (t.unreachable) age += ` (${t.unreachable})`; // why the switch does not answer
    cell(tr, age, t.stale ? "bad" : "");
    cell(tr, t.queues);
    let miss = (t.missing || []).join(", ");
    if (t.refused_groups && t.refused_groups.length) miss += (miss ? "; " : "") + "refused: " + t.refused_groups.join(", ");
    // nothing heard: what the switch lacks is not known
    cell(tr, miss || (t.heard ? "none" : "unknown"));
    if (t.stale) tr.style.background = "#fdecec";
    return tr;
  });
  // Targets with stale telemetry (or none yet) are not idle: nothing is
  // known of them.
  // Targets another member of the fleet serves are neither.
  const served = ov.targets.filter((t) => !t.unserved);
  const silent = served.filter((t) => t.stale || !t.heard).map((t) => t.target);
  if (!ov.hot.length && intervals.length) {
    // An idle fabric is said, not drawn as rows of zeros.
    const tr = document.createElement("tr");
    let msg = "idle: no queue held bytes, marked or was paused in the newest interval";
    let queueMsg = "idle: no congested queue to show; pick one here to see it anyway.";
    if (silent.length === served.length && silent.length) {
      msg = `no telemetry: none of the ${silent.length} targets reports (see health): not idle, unknown`;
      queueMsg = "no telemetry: nothing to show.";
    } else if (silent.length) {
      msg += `, of the targets that report; no telemetry from ${silent.join(", ")}`;
    }
    cell(tr, msg, silent.length ? "bad" : "muted").colSpan = 6;
    fill("hot", [tr], (r) => r);
    if (!picked) $("queue-msg").textContent = queueMsg;
  } else fill("hot", ov.hot, (q) => {
    const tr = document.createElement("tr");
    cell(tr, keyText(q.key));
    cell(tr, num(q.depth_kb)); cell(tr, num(q.marks_pct)); cell(tr, num(q.pfc_pct)); cell(tr, num(q.util_pct));
    cell(tr, q.setting_text || "");
    pickRow(tr, q.key);
    return tr;
  });
  fill("recs", ov.recommendations, (r) => {
    const tr = document.createElement("tr");
    // highlighted: what "would change" / "changed" counts, the changes
    // the guard lets through; a recommendation it holds is shown, not
    // highlighted (its rule in the guard column)
    if (r.changes) tr.className = "change";
    const differs = JSON.stringify(r.current) !== JSON.stringify(r.recommended);
    cell(tr, keyText(r.key));
    cell(tr, setting(r.current));
    cell(tr, r.changes || differs ? setting(r.allowed || r.recommended) : "hold").title = r.allowed ? "the policy asked for " + setting(r.recommended) : "";
    cell(tr, (r.confidence * 100).toFixed(0) + "%");
    cell(tr, r.guard || "");
    cell(tr, r.reason, "reason");
    pickRow(tr, r.key);
    return tr;
  });
  $("approvals").hidden = !ov.approve;
  if (ov.approve) {
    $("pending-n").textContent = ov.pending_n;
    $("pending-more").textContent = ov.pending_n > ov.pending.length ? `The first ${ov.pending.length} of ${ov.pending_n} are listed (GET /pending lists all).` : "";
    fill("pending", ov.pending, (p) => {
      const tr = document.createElement("tr");
      cell(tr, keyText(p.key));
      cell(tr, `${setting(p.old)} → ${setting(p.new)}`);
      cell(tr, p.plan);
      cell(tr, fmtTime(p.since_ns));
      cell(tr, p.approved ? `by ${p.approved_by} at ${fmtTime(p.approved_at_ns)}` : "no");
      cell(tr, p.reason, "reason");
      pickRow(tr, p.key);
      return tr;
    });
  }
  newestAudit = ov;
  if (auditBefore === 0) { auditNext = ov.changes_before || 0; drawAudit(ov.changes); }
  const sel = $("queue");
  for (const r of ov.recommendations) {
    const v = JSON.stringify(r.key);
    if (![...sel.options].some((o) => o.value === v)) {
      const o = document.createElement("option");
      o.value = v; o.textContent = keyText(r.key);
      sel.appendChild(o);
    }
  }
  if (!picked && ov.hot.length) pick(ov.hot[0].key);
  drawHeatmap();
  drawQueue();
}

// drawAudit fills the audit table with a page of entries, newest first,
// and the paging buttons.
function drawAudit(changes) {
  fill("audit", changes, auditRow);
  $("audit-older").hidden = !auditNext;
  $("audit-newest").hidden = auditBefore === 0;
  $("audit-page").textContent = auditBefore === 0 ? "newest entries" : `entries before #${auditBefore}`;
}

function auditRow(c) {
  const tr = document.createElement("tr");
  cell(tr, fmtTime(c.time_ns, true));
  cell(tr, keyText(c.key));
  cell(tr, c.kind);
  cell(tr, c.state);
  cell(tr, `${setting(c.old)} → ${setting(c.new)}`);
  cell(tr, c.reason, "reason");
  pickRow(tr, c.key);
  return tr;
}

// olderAudit shows the page of the audit log before the one shown.
async function olderAudit() {
  const before = auditNext;
  const r = await fetch(`/changes?limit=25&before=${before}`, { cache: "no-store" });
  if (!r.ok) return;
  const p = await r.json();
  auditBefore = before;
  auditNext = p.next_before || 0;
  drawAudit(p.changes.slice().reverse()); // /changes pages are oldest first
}

// The fleet panel: GET /fleet, shown while the agent is in a fleet (a 404
// says it is not: the panel stays hidden and is not asked for again).
let inFleet = true;
let fleetBusy = false; // a /fleet request under way: the next refresh does not add one
// refreshFleet reads /fleet on its own: refresh() does not wait for it, so
// an etcd that does not answer leaves the fleet panel stale (said so), not
// the whole page (every refresh waited out /fleet's 15 s before).
async function refreshFleet() {
  if (!inFleet || fleetBusy) return;
  fleetBusy = true;
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), 5000);
  let st;
  try {
    const r = await fetch("/fleet", { cache: "no-store", signal: ctl.signal });
    if (r.status === 404) { inFleet = false; $("fleet").hidden = true; return; }
    const text = await r.text();
    let body = null;
    try { body = JSON.parse(text); } catch (e) { /* not JSON: said as text */ }
    if (!r.ok) {
      if (body && body.stale) {
        // etcd did not answer: the last status read, marked stale
        renderFleet(body);
        $("fleet-msg").textContent = `stale: fleet status as of ${fmtTime(Date.parse(body.as_of) * 1e6)}, etcd did not answer: ${body.error}`;
        return;
      }
      throw new Error(`${r.status} ${body && body.error ? body.error : text}`);
    }
    st = body;
  } catch (e) {
    $("fleet-msg").textContent = `fleet status not read: ${e.name === "AbortError" ? "no answer in 5 s" : e.message}`;
    return;
  } finally {
    clearTimeout(timer);
    fleetBusy = false;
  }
  renderFleet(st);
  $("fleet-msg").textContent = "";
}

function renderFleet(st) {
  $("fleet").hidden = false;
  // The window's counts come from this member's own db: a switch it took
  // over brings none of its earlier owner's changes (they are in the
  // fleet's audit in etcd), so the rate drops at a failover; said, not
  // hidden.
  $("window-scope").hidden = false;
  $("window-scope").textContent = `In a fleet: the audit window's counts (changes, flaps, rate, rollbacks · repairs · fallbacks) are ${st.self || "this member"}'s own changes, ` +
    "from its db; switches it took over bring none of their earlier owner's (ecntune agent history --fleet lists the fleet's).";
  $("fleet-name").textContent = st.name;
  $("fleet-self").textContent = st.self || "–";
  $("fleet-leader").textContent = st.leader || "none";
  const leads = st.self && st.self === st.leader;
  $("fleet-role").textContent = leads ? "leader" : "member";
  $("fleet-role").className = leads ? "pill ok" : "pill";
  fill("fleet-members", st.members || [], (m) => {
    const tr = document.createElement("tr");
    cell(tr, m.id + (m.id === st.self ? " (this agent)" : ""));
    cell(tr, m.zone || "–");
    cell(tr, (m.draining ? "draining" : "active") + (m.leader ? ", leader" : ""), m.draining ? "bad" : "");
    cell(tr, m.owns);
    cell(tr, m.assigned);
    cell(tr, `${m.lease_ttl_s} s`);
    return tr;
  });
  const owned = st.owned || [];
  $("fleet-n-owned").textContent = owned.length;
  $("fleet-n-switches").textContent = (st.switches || []).length;
  $("fleet-owned").textContent = owned.length ? owned.join(", ") : "none";
}

async function refresh() {
  try {
    const r = await fetch("/api/overview", { cache: "no-store" });
    if (!r.ok) throw new Error(`${r.status} ${await r.text()}`);
    render(await r.json());
    refreshFleet(); // not awaited: the fleet panel does not hold the page
    document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes || 0) + 1);
  } catch (e) {
    const h = $("health");
    h.textContent = "agent unreachable";
    h.className = "pill bad";
  }
  setTimeout(refresh, refreshMs);
}

$("audit-older").addEventListener("click", olderAudit);
$("audit-newest").addEventListener("click", () => {
  auditBefore = 0;
  if (newestAudit) { auditNext = newestAudit.changes_before || 0; drawAudit(newestAudit.changes); }
});
$("metric").addEventListener("change", drawHeatmap);
$("view").addEventListener("change", drawHeatmap);
$("ago").addEventListener("input", agoPicked);
$("live").addEventListener("change", drawHeatmap);
$("queue").addEventListener("change", (e) => { if (e.target.value) { picked = JSON.parse(e.target.value); drawQueue(); } });
// The page comes with the newest overview inline: draw it at once.
const initial = document.getElementById("initial");
if (initial && initial.textContent) {
  render(JSON.parse(initial.textContent));
  setTimeout(refresh, refreshMs);
} else refresh();
