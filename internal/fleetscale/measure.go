package fleetscale

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// measure reads everything, waits the window (only checking that every
// process lives), reads again, and checks that nothing went wrong: every
// switch still has one owner, and every owner had telemetry of each of
// its switches during the window.
func (h *harness) measure(ctx context.Context) (*Point, error) {
	a, err := h.read(ctx, true)
	if err != nil {
		return nil, err
	}
	for end := a.at.Add(h.cfg.Window); time.Now().Before(end); time.Sleep(min(5*time.Second, time.Until(end))) {
		if err := errors.Join(ctx.Err(), h.dead()); err != nil {
			return nil, err
		}
	}
	b, err := h.read(ctx, false)
	if err != nil {
		return nil, err
	}
	_ = os.WriteFile(filepath.Join(h.cfg.Dir, "etcd-metrics-before.txt"), a.etcdRaw, 0o644)
	_ = os.WriteFile(filepath.Join(h.cfg.Dir, "etcd-metrics-after.txt"), b.etcdRaw, 0o644)
	p := h.point(a, b)
	var errs []error
	if len(b.fleet.owner) != h.cfg.Switches {
		errs = append(errs, fmt.Errorf("after the window %d of %d switches have an owner", len(b.fleet.owner), h.cfg.Switches))
	}
	if len(b.fleet.twice) > 0 {
		errs = append(errs, fmt.Errorf("after the window %d switches have two owners (%v)", len(b.fleet.twice), b.fleet.twice[:min(5, len(b.fleet.twice))]))
	}
	if p.Silent > 0 {
		errs = append(errs, fmt.Errorf("%d owned switches had no new telemetry snapshot in the window", p.Silent))
	}
	return p, errors.Join(errs...)
}

// point computes the figures of the window from its two readings.
func (h *harness) point(a, b *readings) *Point {
	p := &Point{Switches: h.cfg.Switches, Agents: h.cfg.Agents, Interval: h.cfg.Interval, Window: b.at.Sub(a.at),
		LoadBefore: a.load, LoadAfter: b.load, Harness: b.self - a.self}
	p.Etcd = delta(a.use["etcd"], b.use["etcd"])
	p.Sim = delta(a.use["simswitch"], b.use["simswitch"])
	for i, ag := range h.agents {
		u := AgentUse{Name: ag.name, Usage: delta(a.use[ag.name], b.use[ag.name]), Owned: b.fleet.owned[i], Leader: b.fleet.leader == i}
		p.AgentUse = append(p.AgentUse, u)
	}
	for t, o := range b.fleet.owner {
		if w, ok := a.fleet.owner[t]; !ok || w != o {
			p.Moves++
		}
		if b.fleet.snapshots[t] <= a.fleet.snapshots[t] && a.fleet.owner[t] == o {
			p.Silent++
		}
		p.Snapshots += b.fleet.snapshots[t] - a.fleet.snapshots[t]
	}
	p.Ops, p.StreamsOpened, p.MsgsSent = etcdOps(a.etcd, b.etcd)
	for _, n := range mvccCounters {
		p.MVCC = append(p.MVCC, Op{n, b.etcd.sum(n) - a.etcd.sum(n)})
	}
	for _, n := range mvccGauges {
		p.Gauges = append(p.Gauges, Op{n, b.etcd.sum(n)})
	}
	return p
}

// delta is b's CPU time since a's, with b's memory.
func delta(a, b usage) usage { return usage{CPU: b.CPU - a.CPU, RSS: b.RSS, HWM: b.HWM} }

// etcdOps are the requests etcd served between a and b by kind: unary
// calls by method (handled), and the requests clients sent on streams by
// method: the messages etcd received less the streams that ended, as
// the interceptor counts a stream's end as one more message received
// (LeaseKeepAlive: a renewal each; Watch: a watch created or cancelled
// each); then the streams opened and the messages etcd sent on streams
// (renewals answered, watches' events and answers), by method.
func etcdOps(a, b scrape) (ops, opened, sent []Op) {
	diff := func(name, typ string) map[string]float64 {
		x, y := a.by(name, "grpc_method", "grpc_type", typ), b.by(name, "grpc_method", "grpc_type", typ)
		out := map[string]float64{}
		for m, v := range y {
			if d := v - x[m]; d != 0 {
				out[m] = d
			}
		}
		return out
	}
	ops = sorted(diff("grpc_server_handled_total", "unary"), "")
	ended := diff("grpc_server_handled_total", "bidi_stream")
	recv := diff("grpc_server_msg_received_total", "bidi_stream")
	for m := range recv {
		recv[m] -= ended[m]
	}
	ops = append(ops, sorted(recv, " (stream)")...)
	return ops, sorted(diff("grpc_server_started_total", "bidi_stream"), ""), sorted(diff("grpc_server_msg_sent_total", "bidi_stream"), "")
}

// sorted lists m by kind, suffix added to each.
func sorted(m map[string]float64, suffix string) []Op {
	var out []Op
	for k, v := range m {
		out = append(out, Op{k + suffix, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// mvccCounters are etcd's own counters of the work behind the requests.
var mvccCounters = []string{
	"etcd_mvcc_range_total", "etcd_mvcc_txn_total", "etcd_mvcc_put_total", "etcd_mvcc_delete_total",
	"etcd_server_proposals_committed_total", "etcd_debugging_mvcc_events_total",
	"etcd_network_client_grpc_received_bytes_total", "etcd_network_client_grpc_sent_bytes_total",
}

// mvccGauges are etcd's state at the end of the window.
var mvccGauges = []string{
	"etcd_debugging_mvcc_keys_total", "etcd_mvcc_db_total_size_in_use_in_bytes",
	"etcd_debugging_mvcc_watcher_total", "etcd_debugging_mvcc_watch_stream_total",
}
