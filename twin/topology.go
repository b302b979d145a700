package twin

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/simenv"
)

// Fabric is the twin's topology and switch configuration, as built from
// the agent's fabric records (BuildFabric).
type Fabric struct {
	Kind string // "star" or "leafspine"
	// Hosts is the star's hosts; Leaves, Spines and HostsPerLeaf the
	// leaf-spine's.
	Hosts                        int
	Leaves, Spines, HostsPerLeaf int
	HostRateBps, FabricRateBps   float64
	BufferBytes                  int64
	LinkDelay                    simenv.Time
	CableMeters                  float64
	// MTU is the simulator's payload bytes per packet (simenv.Config.MTU).
	MTU int
	// ECN is the switches' marking at the host ports, restated at
	// units.RefRateBps as a scenario states it; Alpha their PGs'
	// dynamic threshold.
	ECN   env.Setting
	Alpha float64
	// HeadroomBytes is the lossless PGs' headroom the switches report,
	// restated at units.RefRateBps as a scenario's pfc.headroom states it
	// (the simulator scales it with each port's rate); 0: the lossless
	// floor of each port, as the switches run (or report nothing).
	HeadroomBytes int64
	// Queue is the lossless queue (priority) the agent watched.
	Queue int
	// LeafNames and SpineNames are the observed switches in the order of
	// the twin's (leaf0, leaf1, ...; a star's one switch is the only leaf).
	LeafNames, SpineNames []string
	// Notes say what was not observed and took a default, and what was
	// left out.
	Notes []string

	// kept is the role of every observed port the twin simulates, by
	// switch and port name: a port BuildFabric left out is not in it.
	kept map[portName]env.Peer
}

// portName names a port of a switch.
type portName struct{ target, port string }

// keep records the ports of target that the twin simulates, as facing
// peer (a host or a switch).
func (f *Fabric) keep(target string, ports []env.FabricPort, peer env.Peer) {
	if f.kept == nil {
		f.kept = map[portName]env.Peer{}
	}
	for _, p := range ports {
		f.kept[portName{target, p.Name}] = peer
	}
}

// HostCount is the number of hosts of the fabric.
func (f *Fabric) HostCount() int {
	if f.Kind == "star" {
		return f.Hosts
	}
	return f.Leaves * f.HostsPerLeaf
}

func (f *Fabric) note(format string, args ...any) {
	f.Notes = append(f.Notes, fmt.Sprintf(format, args...))
}

// Twin defaults for what neither the switches nor the agent's
// configuration report.
const (
	DefaultCableMeters = 5
	DefaultAlpha       = 0.125
	DefaultLinkDelay   = simenv.Microsecond
)

// portKind is what a port of a record faces.
type portKind int

const (
	faceUnknown portKind = iota
	faceHost
	faceSwitch
)

// targetIndex finds the record an LLDP system name names: by name without
// regard to case, a dotted name also by its first label.
type targetIndex map[string]int

func newTargetIndex(recs []env.FabricRecord) targetIndex {
	ix := targetIndex{}
	for i, r := range recs {
		ix[strings.ToLower(r.Target)] = i
	}
	return ix
}

func (ix targetIndex) find(system string) (int, bool) {
	name := strings.ToLower(strings.TrimSpace(system))
	if name == "" {
		return 0, false
	}
	if i, ok := ix[name]; ok {
		return i, true
	}
	short, _, _ := strings.Cut(name, ".")
	i, ok := ix[short]
	return i, ok
}

// classify says what port p faces and, for a switch whose record the
// agent has, its index (-1 when the neighbour is not named).
func (ix targetIndex) classify(p env.FabricPort) (portKind, int) {
	if i, ok := ix.find(p.Neighbor.System); ok {
		return faceSwitch, i
	}
	switch {
	case p.Peer == env.PeerSwitch:
		return faceSwitch, -1
	case p.Peer == env.PeerHost || p.Neighbor != (env.Neighbor{}):
		return faceHost, -1
	}
	return faceUnknown, -1
}

// switchPorts is what one record's ports face.
type switchPorts struct {
	host, unknown []env.FabricPort
	up            []env.FabricPort
	upTo          []int // index of the record each up port reaches (-1 unknown)
}

// BuildFabric builds the twin's fabric from every switch's record: one
// switch (or switches none of which links to another) is a star; leaves
// (switches with host ports) linked to spines (switches without) a
// leaf-spine. It fails for what it cannot build, saying why.
func BuildFabric(recs []env.FabricRecord) (Fabric, error) {
	if len(recs) == 0 {
		return Fabric{}, errors.New("no fabric record: the agent stored none (an agent older than fabric records, or one that never received telemetry)")
	}
	for _, r := range recs {
		if err := r.Check(); err != nil {
			return Fabric{}, err
		}
	}
	ix := newTargetIndex(recs)
	ports := make([]switchPorts, len(recs))
	for i, r := range recs {
		for _, p := range r.Ports {
			k, to := ix.classify(p)
			switch k {
			case faceHost:
				ports[i].host = append(ports[i].host, p)
			case faceSwitch:
				ports[i].up = append(ports[i].up, p)
				ports[i].upTo = append(ports[i].upTo, to)
			default:
				ports[i].unknown = append(ports[i].unknown, p)
			}
		}
	}
	var f Fabric
	var err error
	if len(recs) == 1 {
		err = f.star(recs[0], ports[0])
	} else {
		err = f.leafSpine(recs, ports)
	}
	if err != nil {
		return Fabric{}, err
	}
	f.switchConfig(recs, ports)
	return f, nil
}

// star builds a one-switch fabric.
func (f *Fabric) star(r env.FabricRecord, sp switchPorts) error {
	f.Kind, f.LeafNames = "star", []string{r.Target}
	hosts := sp.host
	if len(hosts) == 0 && len(sp.unknown) > 0 {
		hosts = sp.unknown
		f.note("no port of %s says what it faces (no LLDP, no fabric-ports): its %d ports are taken to face hosts", r.Target, len(hosts))
	} else if len(sp.unknown) > 0 {
		f.note("%d ports of %s face nothing known and are left out", len(sp.unknown), r.Target)
	}
	if len(sp.up) > 0 {
		f.note("%d ports of %s face switches the agent does not watch and are left out", len(sp.up), r.Target)
	}
	if len(hosts) < 2 {
		return fmt.Errorf("%s has %d host-facing ports: a fabric needs at least 2 hosts", r.Target, len(hosts))
	}
	f.Hosts = len(hosts)
	f.keep(r.Target, hosts, env.PeerHost)
	f.HostRateBps = f.hostRate(hosts)
	if f.HostRateBps <= 0 {
		return fmt.Errorf("no host-facing port of %s reports its speed: the twin needs the links' rates", r.Target)
	}
	return nil
}

// leafSpine builds a two-tier fabric from several switches.
func (f *Fabric) leafSpine(recs []env.FabricRecord, ports []switchPorts) error {
	var leaves, spines []int
	named := map[int]bool{} // switches another's ports face
	for i := range ports {
		for _, to := range ports[i].upTo {
			named[to] = true
		}
	}
	for i := range recs {
		switch {
		case len(ports[i].host) > 0:
			leaves = append(leaves, i)
		case len(ports[i].up) > 0:
			spines = append(spines, i)
		case named[i]:
			spines = append(spines, i)
			f.note("no port of %s says what it faces (no LLDP, no fabric-ports), but other switches' ports face it: a spine", recs[i].Target)
		default:
			f.note("%s has no port known to face a host or a switch and is left out", recs[i].Target)
		}
	}
	switch {
	case len(leaves) == 0:
		return errors.New("no switch has a port known to face a host: give the agent fabric-ports (lldp, or the list) so that the twin can tell leaves from spines")
	case len(spines) == 0 && len(leaves) == 1:
		return f.star(recs[leaves[0]], ports[leaves[0]])
	case len(spines) == 0:
		return fmt.Errorf("%d switches with hosts and none without: only a star or a two-tier leaf-spine (leaves with hosts, spines without) can be built", len(leaves))
	}
	f.Kind = "leafspine"
	f.Leaves, f.Spines = len(leaves), len(spines)
	var hostPorts []env.FabricPort
	var counts []float64
	for _, l := range leaves {
		f.LeafNames = append(f.LeafNames, recs[l].Target)
		hostPorts = append(hostPorts, ports[l].host...)
		counts = append(counts, float64(len(ports[l].host)))
		f.keep(recs[l].Target, ports[l].host, env.PeerHost)
		f.keep(recs[l].Target, ports[l].up, env.PeerSwitch)
		if len(ports[l].unknown) > 0 {
			f.note("%d ports of %s face nothing known and are left out", len(ports[l].unknown), recs[l].Target)
		}
	}
	for _, s := range spines {
		f.SpineNames = append(f.SpineNames, recs[s].Target)
		// every port of a spine faces a leaf in the twin: the ones known
		// to face a switch, or all of a spine none of whose ports says
		// what it faces (found by the leaves' links to it)
		up := ports[s].up
		if len(up) == 0 {
			up = ports[s].unknown
		} else if len(ports[s].unknown) > 0 {
			f.note("%d ports of %s face nothing known and are left out", len(ports[s].unknown), recs[s].Target)
		}
		f.keep(recs[s].Target, up, env.PeerSwitch)
		if other := slices.DeleteFunc(unwatched(ports[s].up, ports[s].upTo), func(n string) bool { return n == notNamed }); len(other) > 0 {
			var watched []string
			for _, to := range ports[s].upTo {
				if to >= 0 && !slices.Contains(watched, recs[to].Target) {
					watched = append(watched, recs[to].Target)
				}
			}
			sort.Strings(watched)
			f.note("%s faces %d switches, of which the agent watches %d (%s) and not %s: the twin has %d leaves, and the traffic of the others, which crosses its spines, is not simulated",
				recs[s].Target, len(watched)+len(other), len(watched), strings.Join(watched, ", "), strings.Join(other, ", "), len(leaves))
		}
	}
	f.HostsPerLeaf = int(mode(counts))
	if lo, hi := minMax(counts); lo != hi {
		f.note("leaves have %g to %g host ports: every leaf of the twin has %d", lo, hi, f.HostsPerLeaf)
	}
	f.HostRateBps = f.hostRate(hostPorts)
	if f.HostRateBps <= 0 {
		return errors.New("no host-facing port reports its speed: the twin needs the links' rates")
	}
	rate, err := f.uplinkRate(recs, ports, leaves, spines)
	f.FabricRateBps = rate
	return err
}

// uplinkRate is the rate between a leaf and a spine: the sum of the
// speeds of their links (the most common sum over the pairs).
func (f *Fabric) uplinkRate(recs []env.FabricRecord, ports []switchPorts, leaves, spines []int) (float64, error) {
	isSpine := map[int]int{}
	for k, s := range spines {
		isSpine[s] = k
	}
	var pairs []float64
	for _, l := range leaves {
		per := make([]float64, len(spines))
		named, unnamed := false, 0.0
		for j, p := range ports[l].up {
			to := ports[l].upTo[j]
			if k, ok := isSpine[to]; ok {
				per[k] += p.RateBps
				named = true
				continue
			}
			if to >= 0 {
				return 0, fmt.Errorf("%s links to %s, another switch with hosts: only a two-tier leaf-spine can be built", recs[l].Target, recs[to].Target)
			}
			unnamed += p.RateBps
		}
		if !named {
			// Neighbours not named (fabric-ports listed): the uplinks are
			// taken to spread evenly over the spines.
			for k := range per {
				per[k] = unnamed / float64(len(spines))
			}
			if unnamed > 0 {
				f.note("the neighbours of %s's uplinks are not known (no LLDP): taken to spread evenly over the %d spines", recs[l].Target, len(spines))
			}
		}
		if named && unnamed > 0 {
			total := unnamed
			for _, r := range per {
				total += r
			}
			f.note("%s's uplinks to switches the agent does not watch (%s: %s of its %s to the spines) are left out: the twin's leaves have only the watched spines' links",
				recs[l].Target, strings.Join(unwatched(ports[l].up, ports[l].upTo), ", "), units.FormatRate(unnamed), units.FormatRate(total))
		}
		for k, r := range per {
			if r == 0 {
				return 0, fmt.Errorf("%s has no link to %s: the twin builds full leaf-spine meshes only", recs[l].Target, recs[spines[k]].Target)
			}
			pairs = append(pairs, r)
		}
	}
	rate := mode(pairs)
	if lo, hi := minMax(pairs); lo != hi {
		f.note("leaf-spine links carry %s to %s: every one of the twin's carries %s", units.FormatRate(lo), units.FormatRate(hi), units.FormatRate(rate))
	}
	return rate, nil
}

// switchConfig sets the buffer, ECN, PFC, cable, MTU and link delay from
// what the records report, defaults (with a note) where they do not.
func (f *Fabric) switchConfig(recs []env.FabricRecord, ports []switchPorts) {
	var bufs, cables, frames, queues []float64
	var host []env.FabricPort
	for i, r := range recs {
		if r.BufferBytes > 0 {
			bufs = append(bufs, float64(r.BufferBytes))
		}
		if r.CableMeters > 0 {
			cables = append(cables, r.CableMeters)
		}
		if r.FrameBytes > 0 {
			frames = append(frames, float64(r.FrameBytes))
		}
		for _, p := range r.Ports {
			queues = append(queues, float64(p.Queue))
		}
		host = append(host, ports[i].host...)
	}
	if len(host) == 0 {
		host = ports[0].unknown
	}
	f.Queue = int(mode(queues))
	f.BufferBytes = int64(mode(bufs))
	if lo, hi := minMax(bufs); lo != hi {
		f.note("the switches' buffers differ (%s): every switch of the twin has %s, the most common",
			spread(bufs, func(v float64) string { return units.FormatBytes(int64(v)) }), units.FormatBytes(f.BufferBytes))
	}
	if f.BufferBytes == 0 {
		f.BufferBytes = simenv.DefaultBufferBytes
		f.note("the switches report no buffer size: the twin's is the simulator's default, %s", units.FormatBytes(f.BufferBytes))
	}
	f.CableMeters = mode(cables)
	if f.CableMeters == 0 {
		f.CableMeters = DefaultCableMeters
		f.note("the agent's configuration states no cable length: %g m", f.CableMeters)
	}
	f.MTU = simenv.DefaultMTU
	if fr := int(mode(frames)); fr > 0 {
		f.MTU = min(max(fr-simenv.DefaultHeaderBytes, 256), 9000)
	} else {
		f.note("the agent's configuration states no MTU: the twin sends %d-byte packets (the simulator's default)", f.MTU)
	}
	f.hostSettings(host)
	f.headroom(recs, host)
}

// floorSlack is how far a reported headroom may be from its port's
// lossless floor and still be the floor (a vendor rounds to its cells).
const floorSlack = 0.02

// headroom sets the twin's PG headroom from what the host ports report:
// unset (the simulator's lossless floor at each port) where they run at
// their floor or report nothing, else their most common headroom
// restated at 100 Gb/s, the scenario's pfc.headroom. Notes say when the
// ports differ and what the twin took.
func (f *Fabric) headroom(recs []env.FabricRecord, host []env.FabricPort) {
	var restated []float64
	atFloor := true
	for _, p := range host {
		if !env.KnownRate(p.RateBps) || p.Setting.HeadroomBytes <= 0 && !p.HeadroomReported {
			continue
		}
		h := p.Setting.HeadroomBytes
		restated = append(restated, float64(toRef(h, p.RateBps)))
		if fl := p.MinHeadroomBytes; fl <= 0 || math.Abs(float64(h-fl)) > floorSlack*float64(fl) {
			atFloor = false
		}
	}
	if len(restated) == 0 {
		f.note("the switches report no PG headroom: the twin's is the lossless floor of each port")
		return
	}
	if atFloor {
		return // the simulator's floor per port is what they run
	}
	h := int64(mode(restated))
	lo, hi := minMax(restated)
	if lo != hi {
		f.note("the host ports' PG headroom differs (%s to %s at 100 Gb/s) over %s: the twin's is %s at 100 Gb/s, the most common",
			units.FormatBytes(int64(lo)), units.FormatBytes(int64(hi)), switchList(recs), units.FormatBytes(h))
	}
	if h < 1 {
		f.note("the switches report a PG headroom of 0 B: the twin's is 1 B, the least a scenario states (its lossless class drops what arrives after PAUSE)")
		h = 1
	}
	f.HeadroomBytes = h
}

// switchList names the switches of recs, "leaf0, leaf1 and spine0".
func switchList(recs []env.FabricRecord) string {
	names := make([]string, len(recs))
	for i, r := range recs {
		names[i] = r.Target
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// hostSettings takes the ECN setting, alpha and link delay from the host
// ports' state.
func (f *Fabric) hostSettings(host []env.FabricPort) {
	type ecnKey struct {
		kmin, kmax int64
		pmax       float64
	}
	count := map[ecnKey]int{}
	var alphas, delays, pmaxes []float64
	for _, p := range host {
		s := p.Setting
		if !(s.Pmax > 0 && s.Pmax <= 1) {
			s.Pmax = 0 // not reported
		} else {
			pmaxes = append(pmaxes, s.Pmax)
		}
		if s.KmaxBytes > 0 && env.KnownRate(p.RateBps) {
			count[ecnKey{toRef(s.KminBytes, p.RateBps), toRef(s.KmaxBytes, p.RateBps), s.Pmax}]++
		}
		if s.Alpha > 0 {
			alphas = append(alphas, s.Alpha)
		}
		if p.MinHeadroomBytes > 0 && !p.FloorEstimated {
			delays = append(delays, float64(delayFromFloor(p.MinHeadroomBytes, p.RateBps, f.MTU+simenv.DefaultHeaderBytes)))
		}
	}
	best, n := ecnKey{400_000, 1_600_000, 0.2}, 0
	for k, c := range count {
		// ties: the lowest kmax, then kmin, then the pmax reported (one
		// choice whatever order the map gives)
		tie := c == n && (k.kmax < best.kmax || k.kmax == best.kmax && (k.kmin < best.kmin || k.kmin == best.kmin && k.pmax > best.pmax))
		if c > n || tie {
			best, n = k, c
		}
	}
	if n == 0 {
		f.note("the switches report no ECN setting: the twin marks at kmin 400KB, kmax 1.6MB, pmax 20%% (at 100 Gb/s)")
	}
	if best.pmax == 0 {
		if best.pmax = mode(pmaxes); best.pmax == 0 {
			best.pmax = simenv.DefaultConfig().ECN.Pmax
		}
		f.note("the switches report no marking probability with their thresholds: pmax %g", best.pmax)
	}
	f.ECN = env.Setting{KminBytes: best.kmin, KmaxBytes: best.kmax, Pmax: best.pmax}
	if f.Alpha = mode(alphas); f.Alpha == 0 {
		f.Alpha = DefaultAlpha
		f.note("the switches report no PFC alpha: %s", env.FormatAlpha(f.Alpha))
	} else if f.Alpha > simenv.MaxAlpha {
		f.note("the switches' PFC alpha %s is simulated as %s, the simulator's largest (XOFF is nearly all the free buffer either way)",
			env.FormatAlpha(f.Alpha), env.FormatAlpha(simenv.MaxAlpha))
		f.Alpha = simenv.MaxAlpha
	}
	if d := mode(delays); d > 0 {
		f.LinkDelay = simenv.Time(d)
		if cable := simenv.Time(math.Round(f.CableMeters*5)) * simenv.Nanosecond; f.CableMeters > 0 && f.LinkDelay <= cable+10*simenv.Nanosecond {
			f.note("the switches' lossless floor is that of the %gm cable (%v each way), which it counts where the link's delay is shorter: "+
				"the floor does not tell a shorter link delay, and the twin's is %v", f.CableMeters, cable.Duration(), f.LinkDelay.Duration())
		}
	} else {
		f.LinkDelay = DefaultLinkDelay
		f.note("the switches report no lossless floor of their own: the link delay is %v", DefaultLinkDelay.Duration())
	}
}

// ranSettings sets the twin's ECN to the setting the host ports' queues
// ran most in the intervals read (each sample's Setting, restated at
// 100 Gb/s), where the samples say: a closed loop changes the setting
// the fabric record holds (written at the agent's first snapshot), and a
// twin marking at that one fitted its workload to counters of another
// marking. A scenario holds one setting: it returns the share of the
// host ports' queue-intervals that ran another (0 where all ran the
// twin's or none says).
func (f *Fabric) ranSettings(samples []Sample) (other float64) {
	type ecnKey struct {
		kmin, kmax int64
		pmax       float64
	}
	count := map[ecnKey]int{}
	n := 0
	for _, s := range samples {
		st := s.Setting
		if s.Peer != env.PeerHost || st.KmaxBytes <= 0 || !(st.Pmax > 0 && st.Pmax <= 1) || !env.KnownRate(s.RateBps) {
			continue
		}
		count[ecnKey{toRef(st.KminBytes, s.RateBps), toRef(st.KmaxBytes, s.RateBps), st.Pmax}]++
		n++
	}
	if n == 0 {
		return 0
	}
	best, bn := ecnKey{}, 0
	for k, c := range count { // ties as hostSettings takes them
		tie := c == bn && (k.kmax < best.kmax || k.kmax == best.kmax && (k.kmin < best.kmin || k.kmin == best.kmin && k.pmax > best.pmax))
		if c > bn || tie {
			best, bn = k, c
		}
	}
	ran := env.Setting{KminBytes: best.kmin, KmaxBytes: best.kmax, Pmax: best.pmax}
	if !ran.SameECN(f.ECN) {
		f.note("the host ports' queues ran %s in %.0f%% of the intervals read, not the %s of the switches' fabric record (a closed loop's changes, "+
			"or the switches' since the record): the twin marks at %s (at 100 Gb/s)", ran.Describe(), 100*float64(bn)/float64(n), f.ECN.Describe(), ran.Describe())
		f.ECN = ran
	}
	return float64(n-bn) / float64(n) // Report.SettingWarning says it
}

// toRef restates a threshold at a port of rateBps at units.RefRateBps.
func toRef(b int64, rateBps float64) int64 {
	return int64(math.Round(float64(b) * units.RefRateBps / rateBps))
}

// delayFromFloor is the one-way link delay whose round trip gives a
// lossless floor of floor bytes at rateBps with frames of frameBytes
// (the inverse of the IEEE 802.1Qbb floor, env.LosslessFloor, at 5 ns/m),
// rounded to 10 ns and at least 10 ns.
func delayFromFloor(floor int64, rateBps float64, frameBytes int) simenv.Time {
	quanta := 394.0
	if rateBps > 100e9 {
		quanta = 905
	}
	wire := float64(floor) - 2*float64(frameBytes) - 64 - quanta*512/8
	sec := wire * 8 / rateBps / 2
	ns := math.Max(math.Round(sec*1e9/10)*10, 10)
	return simenv.Time(ns) * simenv.Nanosecond
}

// mode is the most common value of v (the smallest among ties; 0 for
// none).
func mode(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	best, bestN := s[0], 0
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] == s[i] {
			j++
		}
		if j-i > bestN {
			best, bestN = s[i], j-i
		}
		i = j
	}
	return best
}

func minMax(v []float64) (lo, hi float64) {
	if len(v) == 0 {
		return 0, 0
	}
	lo, hi = v[0], v[0]
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// hostRate is the most common speed of the host ports, with a note
// when they run at several.
func (f *Fabric) hostRate(ports []env.FabricPort) float64 {
	r := modeRate(ports)
	var v []float64
	for _, p := range ports {
		if env.KnownRate(p.RateBps) {
			v = append(v, p.RateBps)
		}
	}
	if lo, hi := minMax(v); lo != hi {
		f.note("the host ports run at several speeds (%s): every host of the twin runs at %s, the most common", spread(v, units.FormatRate), units.FormatRate(r))
	}
	return r
}

// spread is v's distinct values with their counts, the most common
// first: "100Gbps x5, 400Gbps x3".
func spread(v []float64, format func(float64) string) string {
	n := map[float64]int{}
	for _, x := range v {
		n[x]++
	}
	keys := make([]float64, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return n[keys[i]] > n[keys[j]] || n[keys[i]] == n[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s x%d", format(k), n[k])
	}
	return strings.Join(parts, ", ")
}

// notNamed stands for a switch a port faces whose name is not known.
const notNamed = "not named"

// unwatched names the switches ports face whose records the agent does
// not have (upTo -1), by their LLDP names ("not named" for a port whose
// neighbour is not known).
func unwatched(ports []env.FabricPort, upTo []int) []string {
	var out []string
	for j, p := range ports {
		if upTo[j] >= 0 {
			continue
		}
		name := p.Neighbor.System
		if name == "" {
			name = notNamed
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// modeRate is the most common speed of ports.
func modeRate(ports []env.FabricPort) float64 {
	v := make([]float64, 0, len(ports))
	for _, p := range ports {
		if env.KnownRate(p.RateBps) {
			v = append(v, p.RateBps)
		}
	}
	return mode(v)
}
