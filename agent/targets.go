package agent

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/agent/web"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// targetState is what the agent keeps of a target: what it serves, and
// what it compares the next snapshot and poll with.
type targetState struct {
	web.TargetInfo
	missing    env.Telemetry
	seen       bool
	skipCounts map[string]uint64
	// floorDistrusted: the target reports lossless floors above its
	// whole buffer (Ingest ignores them).
	floorDistrusted bool
	// countersMalformed: the target's counters said more was sent than
	// its links carry, in the last snapshot (noteMalformedCounters).
	countersMalformed bool
	// failing: the target's telemetry fails (telemetryFailed), logged at
	// failLogged; failErrs errors since.
	failing    bool
	failLogged time.Time
	failErrs   int
	// deferLogged is when changes deferred for an unreadable switch were
	// last said (logDeferred); deferN those since.
	deferLogged time.Time
	deferN      int
	// deferSince is when the changes of the target began to be deferred
	// (zero: the last read before a write succeeded), deferErr why.
	deferSince time.Time
	deferLast  time.Time
	deferErr   error
	// snapshots counts the target's snapshots (up to absentAfter): ports
	// are judged absent once it has sent that many.
	snapshots int
	// absentNote is the problem AbsentPorts make ("" none).
	absentNote string
	// absentQueues is the problem AbsentQueues make ("" none).
	absentQueues string
}

// absentAfter is how many snapshots a target sends before a configured
// port with no queue in them is called absent (the first can come before
// every port's counters have).
const absentAfter = 3

// SkipReporter is a Switch that skips telemetry elements it does not
// understand and counts them by path shape (gnmiclient.Switch).
type SkipReporter interface {
	Skipped() []gnmipath.Skipped
}

// ConnCounter is a Switch that says how many connections it holds open.
type ConnCounter interface {
	Connections() int
}

// pollTargets reads what the switches' clients count (elements skipped,
// connections) into /targets and /metrics, and logs each shape of skipped
// element once per target. It runs every interval, also while a target
// sends nothing the agent can use.
func (a *Agent) pollTargets() {
	a.noteOwners()
	for _, n := range a.names {
		sw := a.switches[n]
		var sk []gnmipath.Skipped
		if sr, ok := sw.(SkipReporter); ok {
			sk = sr.Skipped()
		}
		conns := -1
		if cc, ok := sw.(ConnCounter); ok {
			conns = cc.Connections()
			a.o.Instruments.Conns.WithLabelValues(n).Set(float64(conns))
		}
		a.mu.Lock()
		ti := a.info(n)
		if conns >= 0 {
			ti.Connections = conns
		}
		var fresh []gnmipath.Skipped
		if ti.skipCounts == nil && len(sk) > 0 {
			ti.skipCounts = map[string]uint64{}
		}
		for _, k := range sk {
			prev, seen := ti.skipCounts[k.Shape]
			if !seen {
				fresh = append(fresh, k)
			}
			if k.Count > prev {
				a.o.Instruments.Skipped.WithLabelValues(n, k.Shape).Add(float64(k.Count - prev))
			}
			ti.skipCounts[k.Shape] = k.Count
		}
		ti.Skipped = sk
		a.mu.Unlock()
		for _, k := range fresh {
			a.log.Warn("telemetry not understood; skipping it and using the rest (logged once per shape)", "target", n,
				"shape", k.Shape, "example", k.Example, "why", k.Why)
		}
	}
}

// info returns (creating) the state of target. Callers hold a.mu.
func (a *Agent) info(target string) *targetState {
	ti := a.tinfo[target]
	if ti == nil {
		ti = &targetState{TargetInfo: web.TargetInfo{Target: target}}
		a.tinfo[target] = ti
	}
	return ti
}

// targetEvent takes one report of a target's subscription: a device note
// or a refused group are logged once as what they are; anything else is a
// telemetry error.
func (a *Agent) targetEvent(target string, err error) {
	var dn *gnmiclient.DeviceNote
	var gr *gnmiclient.GroupRefusedError
	var cd *gnmiclient.ConfigDeletedNote
	var aq *gnmiclient.AbsentQueuesNote
	switch {
	case errors.As(err, &aq):
		a.mu.Lock()
		ti := a.info(target)
		was := ti.absentQueues
		ti.absentQueues, ti.AbsentQueues = "", aq.Absent
		if len(aq.Absent) > 0 {
			ti.absentQueues = aq.Error()
		}
		a.mu.Unlock()
		switch {
		case len(aq.Absent) > 0:
			a.log.Warn("configured queues the switch does not have", "target", target, "queues", aq.Absent, "switch_queues", aq.Have, "why", aq.Error())
		case was != "":
			a.log.Info("every configured queue is reported now", "target", target)
		}
	case errors.As(err, &cd):
		a.log.Info("configuration changed by a delete on the switch; reading it afresh", "target", target, "entries", cd.Entries)
	case errors.As(err, &dn):
		a.mu.Lock()
		ti := a.info(target)
		ti.Device, ti.DeviceWhy = dn.Device, dn.Why
		if strings.HasPrefix(dn.Why, "Capabilities failed") {
			// the profile is a fallback, not what the switch is
			ti.Device = "unknown"
		}
		a.mu.Unlock()
		a.log.Info("device profile", "target", target, "device", dn.Device, "why", dn.Why)
	case errors.As(err, &gr):
		a.mu.Lock()
		ti := a.info(target)
		ti.Refused = append(ti.Refused, gr.Group)
		a.mu.Unlock()
		a.o.Instruments.TelemetryErr.WithLabelValues(target).Inc()
		a.log.Warn("subscription refused; going on without it", "target", target, "group", gr.Group,
			"without", gr.Lost.String(), "err", gr.Err)
	default:
		a.o.Instruments.TelemetryErr.WithLabelValues(target).Inc()
		a.telemetryFailed(target, err)
	}
}

// TelemetryRepeat is how often a target whose telemetry keeps failing is
// logged again (its first error is logged at once; every error counts in
// ecntune_agent_telemetry_errors_total).
const TelemetryRepeat = time.Minute

// telemetryFailed logs a target's telemetry error once per change of state
// (good to failing), then at most every TelemetryRepeat with how many came
// since: a target sending garbage made 150 warnings a second.
func (a *Agent) telemetryFailed(target string, err error) {
	now := a.o.Clock()
	a.mu.Lock()
	ti := a.info(target)
	ti.failErrs++
	ti.Unreachable = whyUnreachable(err)
	first := !ti.failing
	again := !first && now.Sub(ti.failLogged) >= TelemetryRepeat
	n := ti.failErrs
	if first || again {
		ti.failing, ti.failLogged, ti.failErrs = true, now, 0
	}
	a.mu.Unlock()
	switch {
	case first:
		a.log.Warn("telemetry failing (logged again once a minute while it fails, and when it recovers)", "target", target, "err", err)
	case again:
		a.log.Warn("telemetry still failing", "target", target, "errors_since_last_log", n, "err", err)
	}
}

// whyUnreachable is a telemetry error in the few words an operator
// acts on: "connection refused", "timed out", "name not found", "TLS
// handshake failed: REASON", else the error's last part.
func whyUnreachable(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "connection refused"):
		return "connection refused"
	case strings.Contains(msg, "no such host"):
		return "name not found"
	case strings.Contains(msg, "certificate signed by unknown authority"):
		// the cause, not the nested "possibly because ..." part after it
		return "TLS handshake failed: x509: certificate signed by unknown authority (give the switch's CA as tls-ca, or skip-verify: true)"
	case strings.Contains(msg, "handshake failed") || strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:"):
		why := msg
		if i := strings.Index(msg, "x509: "); i >= 0 {
			why = msg[i:]
		} else if i := strings.LastIndex(msg, "tls: "); i >= 0 {
			why = msg[i:]
		}
		return "TLS handshake failed: " + strings.Trim(why, `"`)
	case strings.Contains(msg, "error reading server preface") || strings.Contains(msg, "first record does not look like a TLS handshake"):
		// a plain-text client against a TLS switch (or the other way)
		return "the switch did not answer in the protocol the agent speaks: it may want TLS (insecure: true is plain text), or plain text (tls-ca given)"
	case strings.Contains(msg, "DeadlineExceeded") || strings.Contains(msg, "deadline exceeded") ||
		strings.Contains(msg, "i/o timeout"):
		return "timed out"
	case strings.Contains(msg, "no route to host"), strings.Contains(msg, "network is unreachable"):
		return "no route to the switch"
	case strings.Contains(msg, "Unauthenticated") || strings.Contains(msg, "PermissionDenied"):
		return "refused our credentials"
	}
	if i := strings.LastIndex(msg, "desc = "); i >= 0 {
		msg = msg[i+len("desc = "):]
	}
	return strings.Trim(msg, `" `)
}

// telemetryGood notes a good snapshot of target: a failing target is
// logged as recovered. Callers hold a.mu.
func (a *Agent) telemetryGood(target string) {
	ti := a.info(target)
	if !ti.failing {
		return
	}
	ti.failing, ti.Unreachable = false, ""
	a.log.Info("telemetry good again", "target", target, "errors_since_last_log", ti.failErrs)
	ti.failErrs = 0
}

// noteMissing records the optional telemetry the queues of s lack (what
// none of them has), logging and exporting it when it changes. Callers
// hold a.mu.
func (a *Agent) noteMissing(s env.Snapshot) {
	if len(s.Queues) == 0 {
		return
	}
	m := env.AllTelemetry
	for i := range s.Queues {
		m &= s.Queues[i].Missing
	}
	ti := a.info(s.Target)
	if ti.seen && ti.missing == m {
		return
	}
	wasSeen, wasMissing := ti.seen, ti.missing
	ti.seen, ti.missing, ti.Missing = true, m, m.Names()
	for _, n := range env.AllTelemetry.Names() {
		a.o.Instruments.Missing.DeleteLabelValues(s.Target, n)
	}
	for _, n := range m.Names() {
		a.o.Instruments.Missing.WithLabelValues(s.Target, n).Set(1)
	}
	if m == 0 {
		if wasSeen && wasMissing != 0 {
			a.log.Info("telemetry complete again", "target", s.Target)
		}
		return
	}
	a.log.Warn("telemetry the switch does not export; deciding without it", "target", s.Target, "missing", m.String())
}

// noteAbsentPorts records the configured ports the switch reports no queue
// of: ports: names (the queues not tuned), fabric-ports names (where the
// switch reports all its ports, ports: "*"; a fabric port missing there is
// a typo that makes the real uplinks count as host ports). Logged when it
// changes, on /targets and /healthz. Callers hold a.mu.
func (a *Agent) noteAbsentPorts(s env.Snapshot) {
	tc, ok := a.targets[s.Target]
	ti := a.info(s.Target)
	if !ok || len(s.Queues) == 0 || ti.snapshots < absentAfter {
		if len(s.Queues) > 0 {
			ti.snapshots++
		}
		return
	}
	have := map[string]bool{}
	for i := range s.Queues {
		have[s.Queues[i].Key.Port] = true
	}
	var ports, fabric []string
	if !tc.AllPorts {
		for _, p := range tc.Ports {
			if !have[p] {
				ports = append(ports, p)
			}
		}
	} else {
		for _, p := range tc.FabricPorts {
			if !have[p] {
				fabric = append(fabric, p)
			}
		}
	}
	var note string
	switch {
	case len(ports) > 0:
		note = fmt.Sprintf("%s: ports %s in the configuration report no queue on the switch (a typo, or ports down or gone): not tuned", s.Target, strings.Join(ports, ", "))
	case len(fabric) > 0:
		note = fmt.Sprintf("%s: fabric-ports %s are not ports of the switch (a typo?): the uplinks not listed count as host ports", s.Target, strings.Join(fabric, ", "))
	}
	if note == ti.absentNote {
		return
	}
	ti.absentNote, ti.AbsentPorts = note, append(ports, fabric...)
	if note == "" {
		a.log.Info("every configured port reports queues now", "target", s.Target)
		return
	}
	a.log.Warn("configured ports the switch does not report", "target", s.Target, "ports", ports, "fabric_ports", fabric, "why", note)
}

// missingOf is the optional telemetry target lacks. Callers need not hold
// a.mu.
func (a *Agent) missingOf(target string) env.Telemetry {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ti := a.tinfo[target]; ti != nil {
		return ti.missing
	}
	return 0
}

// Targets returns what the agent knows of every target, sorted by name.
func (a *Agent) Targets() []web.TargetInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]web.TargetInfo, 0, len(a.names))
	for _, n := range a.names {
		ti := a.info(n)
		c := ti.TargetInfo
		c.Missing = append([]string(nil), ti.Missing...)
		c.Refused = append([]string(nil), ti.Refused...)
		c.Skipped = append([]gnmipath.Skipped(nil), ti.Skipped...)
		c.Unserved = a.unserved[n]
		c.AbsentPorts = slices.Clone(ti.AbsentPorts)
		c.AbsentQueues = slices.Clone(ti.AbsentQueues)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b web.TargetInfo) int { return env.NaturalCompare(a.Target, b.Target) })
	return out
}
