package simenv

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// generator is the run-time state of one workload.
type generator struct {
	w         *Workload
	index     int
	hosts     []int32 // node ids
	exhausted bool
	// epoch is the start of the current repetition (Config.Loop), 0
	// before the first wrap.
	epoch Time
	// cdf
	meanBytes float64
	rate      float64 // flows per simulated second, all hosts together
	// srcCum: the cumulative link rates of hosts, when they differ: a
	// flow's source is drawn in proportion to its link, so that each host
	// sends the load of its own link (drawn uniformly, 10G hosts beside
	// 100G ones were offered 1.4-2.2 of their link at load 0.5), and its
	// destination in proportion to its link among the others (receiving
	// near its load: 2 x 100G + 2 x 10G at 0.5, 0.86 on the 10G links, not
	// 3.5). nil: one rate, uniform draws.
	srcCum []float64
	// trace
	cursor int
	// collectives
	coll int
}

// collState tracks one allreduce/alltoall workload: ranks, current
// iteration, and per-rank progress through the steps.
type collState struct {
	gen       int
	ranks     []int32 // node ids in ring order
	iter      int
	iterStart Time
	steps     int     // ring steps per iteration (allreduce) or 1 (alltoall)
	stepDone  []int32 // allreduce: steps rank i has finished sending
	recvDone  []int32 // allreduce: steps rank i has received from its predecessor
	pending   int     // alltoall: flows outstanding in this iteration
	finished  int     // ranks done with the iteration
	chunk     int64
	done      []CollectiveRecord
}

// MaxFlowBytes is the largest flow the simulator carries (32-bit sequence
// numbers, as RoCE's PSN space is finite too).
const MaxFlowBytes = 1<<31 - 1<<20

// CDFMean is the trapezoid mean of a piecewise-linear flow-size CDF.
func CDFMean(cdf []CDFPoint) float64 {
	m := 0.0
	for i := 1; i < len(cdf); i++ {
		m += (cdf[i].Bytes + cdf[i-1].Bytes) / 2 * (cdf[i].Percent - cdf[i-1].Percent) / 100
	}
	return m
}

// sampleCDF draws a flow size the way the HPCC traffic generator does.
func (s *Sim) sampleCDF(cdf []CDFPoint) int64 {
	r := s.rngWork.Float64() * 100
	for i := 1; i < len(cdf); i++ {
		if cdf[i].Percent >= r {
			a, b := cdf[i-1], cdf[i]
			x := a.Bytes + (r-a.Percent)*(b.Bytes-a.Bytes)/(b.Percent-a.Percent)
			if v := int64(x); v > 0 {
				return v
			}
			return 1
		}
	}
	return int64(math.Max(1, cdf[len(cdf)-1].Bytes))
}

// initWorkloads builds a generator per workload, in configuration order
// (collectives draw their ranks from the workload RNG then), and schedules
// the first event of each.
func (s *Sim) initWorkloads() error {
	for i := range s.cfg.Workloads {
		g, err := s.newGenerator(i)
		if err != nil {
			return err
		}
		s.gens = append(s.gens, g)
	}
	for i := range s.gens {
		s.startGenerator(i)
	}
	return nil
}

// newGenerator checks workload i and builds its generator.
func (s *Sim) newGenerator(i int) (generator, error) {
	w := &s.cfg.Workloads[i]
	g := generator{w: w, index: i, coll: -1}
	hosts, err := s.workloadHosts(i, w)
	if err != nil {
		return g, err
	}
	g.hosts = hosts
	if w.Kind != WorkloadTrace {
		if err := s.oneFabricPart(i, hosts); err != nil {
			return g, err
		}
	}
	if w.End > 0 && w.End <= w.Start {
		return g, fmt.Errorf("workloads[%d]: end %v is not after start %v", i, w.End, w.Start)
	}
	switch w.Kind {
	case WorkloadCDF:
		err = s.initCDF(&g)
	case WorkloadIncast:
		err = s.checkIncast(&g)
	case WorkloadAllReduce, WorkloadAllToAll:
		err = s.initCollective(&g)
	case WorkloadTrace:
		err = s.checkTrace(&g)
	default:
		err = fmt.Errorf("workloads[%d]: unknown kind %q", i, w.Kind)
	}
	return g, err
}

// errNotConnected: two hosts of one workload have no path between them.
var errNotConnected = errors.New("not connected (no path through switches between their switches): each part of a fabric carries its own workloads")

// oneFabricPart says which two of a workload's hosts (node ids) the
// fabric does not connect: a flow between them could only be dropped as
// unroutable, which a lossless fabric reported as losses.
func (s *Sim) oneFabricPart(i int, hosts []int32) error {
	for _, h := range hosts[min(1, len(hosts)):] {
		if !s.connected(s.nodeHost[hosts[0]], s.nodeHost[h]) {
			return fmt.Errorf("workloads[%d]: hosts %s and %s: %w", i, s.hostName(hosts[0]), s.hostName(h), errNotConnected)
		}
	}
	return nil
}

// hostName is node nd's name, or "node N".
func (s *Sim) hostName(nd int32) string {
	if name := s.cfg.Topology.Nodes[nd].Name; name != "" {
		return name
	}
	return fmt.Sprintf("node %d", nd)
}

// workloadHosts returns the node ids of the hosts workload i uses: those it
// lists, or every host.
func (s *Sim) workloadHosts(i int, w *Workload) ([]int32, error) {
	var hosts []int32
	if len(w.Hosts) > 0 {
		for _, h := range w.Hosts {
			if h < 0 || h >= len(s.nodeHost) || s.nodeHost[h] < 0 {
				return nil, fmt.Errorf("workloads[%d]: node %d is not a host", i, h)
			}
			hosts = append(hosts, int32(h))
		}
		return hosts, nil
	}
	for _, h := range s.hosts {
		hosts = append(hosts, h.node)
	}
	return hosts, nil
}

// initCDF checks a cdf workload and sets its flow arrival rate: Load of
// its hosts' NIC capacity, in flows of the CDF's mean size.
func (s *Sim) initCDF(g *generator) error {
	i, w := g.index, g.w
	if len(w.CDF) < 2 {
		return fmt.Errorf("workloads[%d]: cdf needs at least 2 points", i)
	}
	if !(w.Load >= MinLoad && w.Load <= 1) {
		return fmt.Errorf("workloads[%d]: load %g is outside the allowed range %g..1 (a fraction of the hosts' link capacity)", i, w.Load, MinLoad)
	}
	g.meanBytes = CDFMean(w.CDF)
	if last := w.CDF[len(w.CDF)-1].Bytes; last > MaxFlowBytes {
		return &FieldError{fmt.Sprintf("Workloads[%d].CDF", i), fmt.Sprintf("workloads[%d]: cdf reaches %g B, above the %d B a flow may carry", i, last, int64(MaxFlowBytes))}
	}
	for j, p := range w.CDF[1:] {
		if !(p.Bytes >= 1) {
			return &FieldError{fmt.Sprintf("Workloads[%d].CDF", i),
				fmt.Sprintf("workloads[%d]: cdf point %d has flow size %g B; a flow carries at least 1 byte", i, j+2, p.Bytes)}
		}
	}
	if len(g.hosts) < 2 {
		return fmt.Errorf("workloads[%d]: cdf needs at least 2 hosts", i)
	}
	capacity := s.linkCapacity(g.hosts)
	g.rate = capacity * w.Load / (8 * g.meanBytes)
	g.srcCum = nil
	first := s.ports[s.hosts[s.nodeHost[g.hosts[0]]].port].rate
	for _, h := range g.hosts {
		if s.ports[s.hosts[s.nodeHost[h]].port].rate != first {
			cum, sum := make([]float64, len(g.hosts)), 0.0
			for k, h := range g.hosts {
				sum += s.ports[s.hosts[s.nodeHost[h]].port].rate
				cum[k] = sum
			}
			g.srcCum = cum
			break
		}
	}
	if max := s.maxFlowStarts(capacity); g.rate > max {
		return &FieldError{fmt.Sprintf("Workloads[%d].CDF", i),
			fmt.Sprintf("workloads[%d]: load %g of flows of %.4g B on average is %.4g flows/s, more than the %.4g/s its %d hosts' links can start (one %d B frame, header and 1 byte, per flow)",
				i, w.Load, g.meanBytes, g.rate, max, len(g.hosts), s.cfg.HeaderBytes+1)}
	}
	return nil
}

// linkCapacity sums the link rates of hosts (node ids), in bits per second.
func (s *Sim) linkCapacity(hosts []int32) float64 {
	total := 0.0
	for _, h := range hosts {
		total += s.ports[s.hosts[s.nodeHost[h]].port].rate
	}
	return total
}

// maxFlowStarts is the bound on a workload's flow arrivals, per second:
// what host links of capacity bits/s can start if every flow were one frame
// of a header and 1 byte. Faster arrivals pile up flows that the fabric can
// never carry.
func (s *Sim) maxFlowStarts(capacity float64) float64 {
	return capacity / (8 * float64(s.cfg.HeaderBytes+1))
}

// checkIncast checks an incast workload's fan-in and size, and that its
// bursts, when they repeat, arrive no faster than its hosts' links can
// carry them (payload bytes) and start them (flows).
func (s *Sim) checkIncast(g *generator) error {
	i, w := g.index, g.w
	if w.Fanin < 1 || w.Fanin >= len(g.hosts) {
		return fmt.Errorf("workloads[%d]: fanin %d outside 1..%d (hosts - 1)", i, w.Fanin, len(g.hosts)-1)
	}
	if w.SizeBytes <= 0 || w.SizeBytes > MaxFlowBytes {
		return &FieldError{fmt.Sprintf("Workloads[%d].Size", i), fmt.Sprintf("workloads[%d]: incast size %d B outside 1..%d", i, w.SizeBytes, int64(MaxFlowBytes))}
	}
	if w.Every <= 0 {
		return nil // one burst
	}
	capacity := s.linkCapacity(g.hosts)
	perSec := float64(Second) / float64(w.Every)
	if bps := float64(w.Fanin) * float64(w.SizeBytes) * 8 * perSec; bps > capacity {
		return &FieldError{fmt.Sprintf("Workloads[%d].Every", i),
			fmt.Sprintf("workloads[%d]: %d × %d B every %v is %.4g b/s, more than the %.4g b/s of its %d hosts' links",
				i, w.Fanin, w.SizeBytes, w.Every, bps, capacity, len(g.hosts))}
	}
	if flows, max := float64(w.Fanin)*perSec, s.maxFlowStarts(capacity); flows > max {
		return &FieldError{fmt.Sprintf("Workloads[%d].Every", i),
			fmt.Sprintf("workloads[%d]: %d flows every %v is %.4g flows/s, more than the %.4g/s its %d hosts' links can start (one %d B frame, header and 1 byte, per flow)",
				i, w.Fanin, w.Every, flows, max, len(g.hosts), s.cfg.HeaderBytes+1)}
	}
	return nil
}

// initCollective checks an allreduce or alltoall workload and adds its
// collState, its ranks drawn at random from the workload's hosts.
func (s *Sim) initCollective(g *generator) error {
	i, w := g.index, g.w
	if w.Ranks < 2 || w.Ranks > len(g.hosts) {
		return fmt.Errorf("workloads[%d]: ranks %d outside 2..%d", i, w.Ranks, len(g.hosts))
	}
	if w.SizeBytes <= 0 || w.SizeBytes/int64(w.Ranks) > MaxFlowBytes {
		return &FieldError{fmt.Sprintf("Workloads[%d].Size", i), fmt.Sprintf("workloads[%d]: collective size %d B is %d B per rank, outside 1..%d (the size is the whole collective's, split over its %d ranks)",
			i, w.SizeBytes, w.SizeBytes/int64(w.Ranks), int64(MaxFlowBytes), w.Ranks)}
	}
	c := collState{gen: i}
	// ranks spread over the host list (round-robin across racks)
	perm := s.rngWork.Perm(len(g.hosts))
	for r := 0; r < w.Ranks; r++ {
		c.ranks = append(c.ranks, g.hosts[perm[r]])
	}
	n := int64(w.Ranks)
	c.chunk = (w.SizeBytes + n - 1) / n
	if w.Kind == WorkloadAllReduce {
		c.steps = 2 * (w.Ranks - 1)
	} else {
		c.steps = 1
	}
	g.coll = len(s.colls)
	s.colls = append(s.colls, c)
	return nil
}

// checkTrace checks a trace workload's flows: between two distinct hosts,
// of a size a flow may carry, sorted by start time.
func (s *Sim) checkTrace(g *generator) error {
	i, w := g.index, g.w
	for j, f := range w.Flows {
		for _, nd := range []int{f.Src, f.Dst} {
			if nd < 0 || nd >= len(s.nodeHost) || s.nodeHost[nd] < 0 {
				return fmt.Errorf("workloads[%d]: flow %d names node %d, which is not a host", i, j, nd)
			}
		}
		if f.SizeBytes < 0 || f.SizeBytes > MaxFlowBytes {
			return &FieldError{fmt.Sprintf("Workloads[%d].File", i), fmt.Sprintf("workloads[%d]: flow %d of %d size %d B outside 0..%d", i, j+1, len(w.Flows), f.SizeBytes, int64(MaxFlowBytes))}
		}
		if f.Src == f.Dst {
			return fmt.Errorf("workloads[%d]: flow %d goes from node %d to itself", i, j, f.Src)
		}
		if !s.connected(s.nodeHost[f.Src], s.nodeHost[f.Dst]) {
			return fmt.Errorf("workloads[%d]: flow %d from %s to %s: %w", i, j, s.hostName(int32(f.Src)), s.hostName(int32(f.Dst)), errNotConnected)
		}
		if j > 0 && f.Start < w.Flows[j-1].Start {
			return fmt.Errorf("workloads[%d]: flows must be sorted by start time (flow %d)", i, j)
		}
	}
	return nil
}

// startGenerator schedules the first event of generator i, or marks it
// exhausted when it has nothing to send.
func (s *Sim) startGenerator(i int) {
	g := &s.gens[i]
	w := g.w
	switch w.Kind {
	case WorkloadCDF:
		s.scheduleGen(i, addGap(g.epoch+w.Start, s.expGap(g.rate)))
	case WorkloadIncast:
		s.scheduleGen(i, g.epoch+w.Start)
	case WorkloadAllReduce, WorkloadAllToAll:
		if w.End > 0 && w.Start >= w.End {
			g.exhausted = true
			return
		}
		s.evq.push(g.epoch+w.Start, evCollective, int32(i), 0)
	case WorkloadTrace:
		if len(w.Flows) == 0 {
			g.exhausted = true
			return
		}
		s.scheduleGen(i, g.epoch+w.Start+w.Flows[0].Start)
	}
}

// MinLoad is the smallest load of a cdf workload: a millionth of its
// hosts' link capacity, one 1.6 MB flow a minute between two 100 Gb/s
// hosts. Below it no flow would start within any run a scenario may
// name (units.MaxSimDuration), and the arrival gaps only grow.
const MinLoad = 1e-6

// MaxGap is the longest gap between two arrivals of a workload: a
// quarter of the time an int64 holds (about 73 years), far beyond any run,
// so that a time plus a gap cannot overflow.
const MaxGap = Time(math.MaxInt64 / 4)

// expGap draws an exponential gap of mean 1/rate seconds, saturated at
// MaxGap (the float quotient of a tiny rate is beyond int64, which
// converts to a negative time).
func (s *Sim) expGap(rate float64) Time {
	g := s.rngWork.ExpFloat64() / rate * float64(Second)
	if !(g < float64(MaxGap)) { // also +Inf and NaN (rate 0)
		return MaxGap
	}
	return Time(g)
}

// addGap is t+gap, saturated at the largest Time.
func addGap(t, gap Time) Time {
	if gap > 0 && t > math.MaxInt64-gap {
		return math.MaxInt64
	}
	return t + gap
}

// ended says whether t is at or past the end of g's current repetition.
func (s *Sim) ended(g *generator, t Time) bool {
	return g.w.End > 0 && t >= g.epoch+g.w.End
}

// period is the time between two repetitions of g (Config.Loop): the
// run's Duration, or longer for a trace whose flows start later.
func (s *Sim) period(g *generator) Time {
	p := s.cfg.Duration
	if w := g.w; w.Kind == WorkloadTrace && len(w.Flows) > 0 {
		p = max(p, w.Start+w.Flows[len(w.Flows)-1].Start+1)
	}
	return max(p, 1)
}

// exhaust ends generator i's current repetition: it has nothing more to
// send, or with Config.Loop it starts again at its next repetition.
func (s *Sim) exhaust(i int) {
	g := &s.gens[i]
	if !s.cfg.Loop {
		g.exhausted = true
		return
	}
	p := s.period(g)
	g.epoch += p
	for g.epoch+g.w.Start < s.now { // a repetition that would start in the past
		g.epoch += p
	}
	g.cursor = 0
	s.startGenerator(i)
}

func (s *Sim) scheduleGen(i int, t Time) {
	g := &s.gens[i]
	if s.ended(g, t) {
		s.exhaust(i)
		return
	}
	s.evq.push(t, evGenerator, int32(i), 0)
}

func (s *Sim) generate(i int) {
	g := &s.gens[i]
	w := g.w
	switch w.Kind {
	case WorkloadCDF:
		n := len(g.hosts)
		var src, dst int32
		if g.srcCum == nil {
			src = g.hosts[s.rngWork.IntN(n)]
			dst = g.hosts[s.rngWork.IntN(n-1)]
			if dst == src {
				dst = g.hosts[n-1]
			}
		} else {
			// the source in proportion to its link, the destination in
			// proportion to its link among the others (uniform, the 10G
			// receivers beside 100G senders were offered 3.5 of their link)
			cum := g.srcCum
			si := min(sort.SearchFloat64s(cum, s.rngWork.Float64()*cum[n-1]), n-1)
			lo := 0.0
			if si > 0 {
				lo = cum[si-1]
			}
			u := s.rngWork.Float64() * (cum[n-1] - (cum[si] - lo))
			if u >= lo {
				u += cum[si] - lo // past the source's own share
			}
			di := min(sort.SearchFloat64s(cum, u), n-1)
			if di == si {
				di = (si + 1) % n // at a boundary, by rounding
			}
			src, dst = g.hosts[si], g.hosts[di]
		}
		s.newFlow(src, dst, w.Priority, s.sampleCDF(w.CDF), s.now, i, 100)
		s.scheduleGen(i, addGap(s.now, s.expGap(g.rate)))
	case WorkloadIncast:
		n := len(g.hosts)
		perm := s.rngWork.Perm(n)
		dst := g.hosts[perm[0]]
		for k := 1; k <= w.Fanin; k++ {
			s.newFlow(g.hosts[perm[k]], dst, w.Priority, w.SizeBytes, s.now, i, 200)
		}
		if w.Every <= 0 {
			s.exhaust(i)
			return
		}
		s.scheduleGen(i, s.now+w.Every)
	case WorkloadTrace:
		for g.cursor < len(w.Flows) && g.epoch+w.Start+w.Flows[g.cursor].Start <= s.now {
			f := w.Flows[g.cursor]
			p := f.Priority
			if p < 0 || p >= ControlQueue {
				p = w.Priority
			}
			s.newFlow(int32(f.Src), int32(f.Dst), p, f.SizeBytes, s.now, i, f.DPort)
			g.cursor++
		}
		if g.cursor >= len(w.Flows) {
			s.exhaust(i)
			return
		}
		s.evq.push(g.epoch+w.Start+w.Flows[g.cursor].Start, evGenerator, int32(i), 0)
	}
}

// ---- collectives ----

func (s *Sim) collectiveStart(gi int, _ int) {
	g := &s.gens[gi]
	w := g.w
	if s.ended(g, s.now) {
		s.exhaust(gi)
		return
	}
	c := &s.colls[g.coll]
	c.iterStart = s.now
	c.finished = 0
	n := len(c.ranks)
	if w.Kind == WorkloadAllReduce {
		c.stepDone = make([]int32, n)
		c.recvDone = make([]int32, n)
		for r := 0; r < n; r++ {
			s.collSend(g.coll, r, 0)
		}
		return
	}
	c.pending = 0
	for r := 0; r < n; r++ {
		for k := 1; k < n; k++ {
			s.collFlow(g.coll, r, (r+k)%n, 0)
			c.pending++
		}
	}
}

func (s *Sim) collFlow(ci, from, to int, step int32) {
	c := &s.colls[ci]
	w := s.gens[c.gen].w
	id := s.addFlow(c.ranks[from], c.ranks[to], w.Priority, c.chunk, s.now, c.gen, 300)
	f := &s.flows[id]
	f.collective = int32(ci)
	f.collStep = step
	s.startFlow(id)
}

func (s *Sim) collSend(ci int, rank int, step int32) {
	c := &s.colls[ci]
	n := len(c.ranks)
	s.collFlow(ci, rank, (rank+1)%n, step)
}

func (s *Sim) collectiveFlowDone(f *flow) {
	ci := int(f.collective)
	c := &s.colls[ci]
	w := s.gens[c.gen].w
	n := len(c.ranks)
	if w.Kind == WorkloadAllToAll {
		c.pending--
		if c.pending == 0 {
			s.collIterDone(ci)
		}
		return
	}
	// ring allreduce: the sender finished step k; its successor received it
	var from int
	for r, nd := range c.ranks {
		if int(nd) == f.Src {
			from = r
			break
		}
	}
	to := (from + 1) % n
	c.stepDone[from]++
	c.recvDone[to]++
	for _, r := range []int{from, to} {
		// rank r sends step k+1 once it sent step k and received step k
		k := c.stepDone[r]
		if int(k) < c.steps && c.recvDone[r] >= k && s.collInflight(ci, r) == 0 {
			s.collSend(ci, r, k)
		}
	}
	if c.stepDone[from] == int32(c.steps) {
		c.finished++
	}
	done := 0
	for r := 0; r < n; r++ {
		if c.stepDone[r] == int32(c.steps) && c.recvDone[r] == int32(c.steps) {
			done++
		}
	}
	if done == n {
		s.collIterDone(ci)
	}
}

// collInflight counts unfinished flows of the current iteration sent by rank r.
func (s *Sim) collInflight(ci, r int) int {
	c := &s.colls[ci]
	h := &s.hosts[s.nodeHost[c.ranks[r]]]
	n := 0
	for _, fid := range h.flows {
		if s.flows[fid].collective == int32(ci) {
			n++
		}
	}
	return n
}

func (s *Sim) collIterDone(ci int) {
	c := &s.colls[ci]
	c.done = append(c.done, CollectiveRecord{Workload: c.gen, Iteration: c.iter, Start: c.iterStart, Finish: s.now})
	c.iter++
	w := s.gens[c.gen].w
	next := s.now + w.Gap
	if s.ended(&s.gens[c.gen], next) {
		s.exhaust(c.gen)
		return
	}
	s.evq.push(next, evCollective, int32(c.gen), uint32(c.iter))
}
