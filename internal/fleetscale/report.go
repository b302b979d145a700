package fleetscale

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Op is a count over the window (or a gauge at its end) by kind.
type Op struct {
	Kind string
	N    float64
}

// AgentUse is one agent's share of the fleet and what it used.
type AgentUse struct {
	Name   string
	Owned  int
	Leader bool
	Usage  usage
}

// Point is one measured fleet at rest.
type Point struct {
	Switches, Agents      int
	Interval, Window      time.Duration
	LoadBefore, LoadAfter string // /proc/loadavg
	// Ops are etcd's requests by kind (etcdOps); StreamsOpened and
	// MsgsSent its streams' by method; MVCC its own counters, Gauges
	// its state at the end.
	Ops, StreamsOpened, MsgsSent, MVCC, Gauges []Op
	Etcd, Sim                                  usage
	AgentUse                                   []AgentUse
	Harness                                    time.Duration // this process's CPU in the window
	Moves, Silent                              int           // switches that changed owner; owned ones without new telemetry
	Snapshots                                  float64       // telemetry snapshots the owners decoded
}

// perMin is n per minute of the window.
func (p *Point) perMin(n float64) float64 { return n / p.Window.Minutes() }

// share is a CPU time as a percentage of one core over the window.
func (p *Point) share(d time.Duration) float64 { return 100 * d.Seconds() / p.Window.Seconds() }

// TotalOps is every etcd request of the window.
func (p *Point) TotalOps() float64 {
	var t float64
	for _, o := range p.Ops {
		t += o.N
	}
	return t
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func (p *Point) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d switches, %d agents (shadow), interval and sample-interval %v, window %v, load %s before, %s after\n",
		p.Switches, p.Agents, p.Interval, p.Window.Round(time.Second), p.LoadBefore, p.LoadAfter)
	tot := p.perMin(p.TotalOps())
	fmt.Fprintf(&b, "etcd requests: %.1f/min = %.4f per switch per minute = %.1f per agent per minute\n",
		tot, tot/float64(p.Switches), tot/float64(p.Agents))
	for _, o := range p.Ops {
		fmt.Fprintf(&b, "  %-22s %9.1f/min  %.4f/switch/min  %7.1f/agent/min\n", o.Kind, p.perMin(o.N), p.perMin(o.N)/float64(p.Switches), p.perMin(o.N)/float64(p.Agents))
	}
	list := func(title string, ops []Op, rate bool) {
		fmt.Fprintf(&b, "%s:", title)
		for _, o := range ops {
			if rate {
				fmt.Fprintf(&b, " %s %.1f/min;", o.Kind, p.perMin(o.N))
			} else {
				fmt.Fprintf(&b, " %s %.0f;", o.Kind, o.N)
			}
		}
		b.WriteString("\n")
	}
	list("etcd streams opened", p.StreamsOpened, true)
	list("etcd stream messages sent", p.MsgsSent, true)
	list("etcd counters", p.MVCC, true)
	list("etcd at the end", p.Gauges, false)
	fmt.Fprintf(&b, "CPU (%% of one core over the window) and memory:\n")
	fmt.Fprintf(&b, "  %-10s %6.2f%%  RSS %6.1f MB (peak %.1f)\n", "etcd", p.share(p.Etcd.CPU), mb(p.Etcd.RSS), mb(p.Etcd.HWM))
	for _, a := range p.AgentUse {
		role := ""
		if a.Leader {
			role = ", leader"
		}
		fmt.Fprintf(&b, "  %-10s %6.2f%%  RSS %6.1f MB (peak %.1f)  owns %d%s: %.3f%% per switch owned\n", a.Name, p.share(a.Usage.CPU),
			mb(a.Usage.RSS), mb(a.Usage.HWM), a.Owned, role, p.share(a.Usage.CPU)/float64(max(a.Owned, 1)))
	}
	fmt.Fprintf(&b, "  %-10s %6.2f%%  RSS %6.1f MB (peak %.1f)\n", "simswitch", p.share(p.Sim.CPU), mb(p.Sim.RSS), mb(p.Sim.HWM))
	fmt.Fprintf(&b, "  %-10s %6.2f%%  (the test process: scrapes outside the window)\n", "harness", p.share(p.Harness))
	fmt.Fprintf(&b, "telemetry snapshots decoded by the owners: %.0f (%.2f per switch per interval); owner changes in the window: %d\n",
		p.Snapshots, p.Snapshots/float64(p.Switches)/(p.Window.Seconds()/p.Interval.Seconds()), p.Moves)
	return b.String()
}

// metric is one figure of a point, for Fit.
type metric struct {
	name string
	f    func(p *Point) float64
}

func (p *Point) op(kind string) float64 {
	for _, o := range p.Ops {
		if o.Kind == kind {
			return p.perMin(o.N)
		}
	}
	return 0
}

func (p *Point) counter(name string) float64 {
	for _, o := range p.MVCC {
		if o.Kind == name {
			return p.perMin(o.N)
		}
	}
	return 0
}

// agentMean averages f over the agents (leader too when all).
func (p *Point) agentMean(f func(AgentUse) float64, all bool) float64 {
	var s float64
	n := 0
	for _, a := range p.AgentUse {
		if all || !a.Leader {
			s += f(a)
			n++
		}
	}
	return s / float64(max(n, 1))
}

func (p *Point) leaderUse() AgentUse {
	for _, a := range p.AgentUse {
		if a.Leader {
			return a
		}
	}
	return AgentUse{}
}

// metrics are the figures Fit fits: etcd requests per minute (all, then
// by kind), etcd's bytes and CPU, the agents' CPU and memory.
func metrics(ps []*Point) []metric {
	ms := []metric{{"etcd requests/min", func(p *Point) float64 { return p.perMin(p.TotalOps()) }}}
	var kinds []string
	for _, p := range ps {
		for _, o := range p.Ops {
			if !slices.Contains(kinds, o.Kind) {
				kinds = append(kinds, o.Kind)
			}
		}
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		ms = append(ms, metric{"  " + k + "/min", func(p *Point) float64 { return p.op(k) }})
	}
	return append(ms,
		metric{"etcd bytes received/min", func(p *Point) float64 { return p.counter("etcd_network_client_grpc_received_bytes_total") }},
		metric{"etcd bytes sent/min", func(p *Point) float64 { return p.counter("etcd_network_client_grpc_sent_bytes_total") }},
		metric{"etcd keys", func(p *Point) float64 { return gauge(p, "etcd_debugging_mvcc_keys_total") }},
		metric{"etcd CPU % of a core", func(p *Point) float64 { return p.share(p.Etcd.CPU) }},
		metric{"etcd RSS MB", func(p *Point) float64 { return mb(p.Etcd.RSS) }},
		metric{"leader agent CPU %", func(p *Point) float64 { return p.share(p.leaderUse().Usage.CPU) }},
		metric{"other agents' CPU % (mean)", func(p *Point) float64 {
			return p.agentMean(func(a AgentUse) float64 { return p.share(a.Usage.CPU) }, false)
		}},
		metric{"agent RSS MB (mean)", func(p *Point) float64 {
			return p.agentMean(func(a AgentUse) float64 { return mb(a.Usage.RSS) }, true)
		}},
		metric{"simswitch CPU %", func(p *Point) float64 { return p.share(p.Sim.CPU) }},
	)
}

func gauge(p *Point, name string) float64 {
	for _, o := range p.Gauges {
		if o.Kind == name {
			return o.N
		}
	}
	return 0
}

// Fit fits every figure to a + b·switches through the smallest and the
// largest point (same agents), projects it to target switches, and for
// the points between shows how far the line misses them.
func Fit(ps []*Point, target int) string {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b *Point) int { return a.Switches - b.Switches })
	if len(ps) < 2 || ps[0].Switches == ps[len(ps)-1].Switches {
		return "fit: two points of different sizes are needed\n"
	}
	lo, hi := ps[0], ps[len(ps)-1]
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s", "figure")
	for _, p := range ps {
		fmt.Fprintf(&b, " %12s", fmt.Sprintf("n=%d", p.Switches))
	}
	fmt.Fprintf(&b, " %12s %12s %14s\n", "a (const)", "b (/switch)", fmt.Sprintf("n=%d", target))
	for _, m := range metrics(ps) {
		y0, y1 := m.f(lo), m.f(hi)
		slope := (y1 - y0) / float64(hi.Switches-lo.Switches)
		icpt := y0 - slope*float64(lo.Switches)
		fmt.Fprintf(&b, "%-28s", m.name)
		for _, p := range ps {
			fmt.Fprintf(&b, " %12.4g", m.f(p))
		}
		fmt.Fprintf(&b, " %12.4g %12.4g %14.4g", icpt, slope, icpt+slope*float64(target))
		for _, p := range ps[1 : len(ps)-1] {
			fmt.Fprintf(&b, "  (line at n=%d: %.4g)", p.Switches, icpt+slope*float64(p.Switches))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// AgentFit fits each agent's CPU and RSS, over every agent of every
// point, to c0 + c1·switches listed + c2·switches owned (least squares:
// an agent lists every switch of the fleet and owns its share), and
// projects an agent of target switches owning its fair share and the
// leader's bound (1.25 times it).
func AgentFit(ps []*Point, target int) string {
	var xs [][3]float64
	var cpu, rss []float64
	agents := 0
	for _, p := range ps {
		agents = max(agents, p.Agents)
		for _, a := range p.AgentUse {
			xs = append(xs, [3]float64{1, float64(p.Switches), float64(a.Owned)})
			cpu, rss = append(cpu, p.share(a.Usage.CPU)), append(rss, mb(a.Usage.RSS))
		}
	}
	var b strings.Builder
	fair := float64(target) / float64(max(agents, 1))
	for _, m := range []struct {
		name string
		y    []float64
	}{{"agent CPU % of a core", cpu}, {"agent RSS MB", rss}} {
		c, ok := leastSquares(xs, m.y)
		if !ok {
			return "agent fit: too few distinct agents (two sizes, two shares needed)\n"
		}
		var worst float64
		for i, x := range xs {
			worst = max(worst, abs(c[0]+c[1]*x[1]+c[2]*x[2]-m.y[i]))
		}
		fmt.Fprintf(&b, "%s = %.4g + %.4g·listed + %.4g·owned (largest miss %.3g over %d agents); at %d listed: %.4g owning %.0f, %.4g owning %.0f\n",
			m.name, c[0], c[1], c[2], worst, len(xs), target, c[0]+c[1]*float64(target)+c[2]*fair, fair,
			c[0]+c[1]*float64(target)+c[2]*1.25*fair, 1.25*fair)
	}
	return b.String()
}

func abs(x float64) float64 { return max(x, -x) }

// leastSquares solves the normal equations of y ≈ X·c (three unknowns)
// by Gaussian elimination; false when they are singular.
func leastSquares(xs [][3]float64, y []float64) ([3]float64, bool) {
	var m [3][4]float64
	for k, x := range xs {
		for i := range 3 {
			for j := range 3 {
				m[i][j] += x[i] * x[j]
			}
			m[i][3] += x[i] * y[k]
		}
	}
	for i := range 3 {
		p := i
		for r := i + 1; r < 3; r++ {
			if abs(m[r][i]) > abs(m[p][i]) {
				p = r
			}
		}
		m[i], m[p] = m[p], m[i]
		if abs(m[i][i]) < 1e-9 {
			return [3]float64{}, false
		}
		for r := range 3 {
			if r != i {
				f := m[r][i] / m[i][i]
				for j := i; j < 4; j++ {
					m[r][j] -= f * m[i][j]
				}
			}
		}
	}
	return [3]float64{m[0][3] / m[0][0], m[1][3] / m[1][1], m[2][3] / m[2][2]}, true
}
