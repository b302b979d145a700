package env

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// MaxFabricPorts bounds the ports of one FabricRecord: as many as an agent
// keeps for a target (its max-ports can be no higher).
const MaxFabricPorts = 1024

// Neighbor is what a switch's LLDP state says is at the other end of one
// of its ports: the neighbour's system name and its port (both "" when not
// reported).
type Neighbor struct {
	System string `json:"system,omitempty"`
	Port   string `json:"port,omitempty"`
}

// FabricPort is one port of a FabricRecord: its speed, what it faces, and
// the state of its first lossless queue and that queue's PG as the switch
// reported them.
type FabricPort struct {
	Name     string   `json:"name"`
	RateBps  float64  `json:"rate_bps"`
	Peer     Peer     `json:"peer,omitempty"`
	Neighbor Neighbor `json:"neighbor,omitzero"`
	// Queue is the queue whose state follows (the lowest under control).
	Queue   int     `json:"queue"`
	Setting Setting `json:"setting"`
	// XoffBytes, MinHeadroomBytes and FloorEstimated are the queue's PG's
	// (QueueSample); 0 when not reported.
	XoffBytes        int64 `json:"xoff_bytes,omitempty"`
	MinHeadroomBytes int64 `json:"min_headroom_bytes,omitempty"`
	FloorEstimated   bool  `json:"floor_estimated,omitempty"`
	HeadroomReported bool  `json:"headroom_reported,omitempty"`
}

// FabricRecord is what an agent knows of one switch's place in the fabric
// when it (re)connects or learns its peers: its ports with their speeds and
// neighbours, its buffer, and the ECN and PFC state of its lossless queues.
// A record is bounded by its ports (at most MaxFabricPorts). It is what a
// fitted model of the fabric (ecntune twin) builds its topology from.
type FabricRecord struct {
	Target string `json:"target"`
	TimeNs int64  `json:"time_ns"`
	// BufferBytes is the switch's shared buffer (0: not reported).
	BufferBytes int64 `json:"buffer_bytes,omitempty"`
	// CableMeters and FrameBytes are the cable length and largest frame
	// the agent's configuration states for the target (0: not stated).
	CableMeters float64 `json:"cable_m,omitempty"`
	FrameBytes  int     `json:"frame_bytes,omitempty"`
	// Ports in natural order of their names.
	Ports []FabricPort `json:"ports"`
}

// NewFabricRecord builds the record of snapshot s's switch: one port per
// port name in s (the state of its lowest queue), with the neighbours LLDP
// reported (by port name; nil: none known), and the cable length and frame
// size the configuration states. Ports beyond MaxFabricPorts are left out.
func NewFabricRecord(s Snapshot, neighbors map[string]Neighbor, cableMeters float64, frameBytes int) FabricRecord {
	r := FabricRecord{Target: s.Target, TimeNs: s.TimeNs, CableMeters: cableMeters, FrameBytes: frameBytes}
	byName := map[string]int{}
	for i := range s.Queues {
		q := &s.Queues[i]
		if q.BufferBytes > 0 {
			r.BufferBytes = q.BufferBytes
		}
		j, seen := byName[q.Key.Port]
		if seen && r.Ports[j].Queue <= q.Key.Queue {
			continue
		}
		p := FabricPort{Name: q.Key.Port, RateBps: q.RateBps, Peer: q.Peer, Neighbor: neighbors[q.Key.Port], Queue: q.Key.Queue,
			Setting: q.Setting, XoffBytes: q.XoffBytes, MinHeadroomBytes: q.MinHeadroomBytes, FloorEstimated: q.FloorEstimated,
			HeadroomReported: q.HeadroomReported}
		if seen {
			r.Ports[j] = p
			continue
		}
		if len(r.Ports) == MaxFabricPorts {
			continue
		}
		byName[q.Key.Port] = len(r.Ports)
		r.Ports = append(r.Ports, p)
	}
	sort.Slice(r.Ports, func(i, j int) bool { return NaturalCompare(r.Ports[i].Name, r.Ports[j].Name) < 0 })
	return r
}

// Unchanged reports whether snapshot s, with LLDP's neighbours, shows the
// switch of r as r does (a record built from s for the same cable and
// frame would have the same ports and buffer), without building one: the same ports with
// the same speeds, peers and neighbours, and the same buffer. An agent asks it of every snapshot, so it allocates
// nothing. A false answer may only cost a record built and compared.
func (r FabricRecord) Unchanged(s Snapshot, neighbors map[string]Neighbor) bool {
	if s.Target != r.Target || len(r.Ports) > MaxFabricPorts {
		return false
	}
	var seen [MaxFabricPorts / 64]uint64
	distinct, buffer, hint := 0, int64(0), 0
	for i := range s.Queues {
		q := &s.Queues[i]
		if q.BufferBytes > 0 {
			buffer = q.BufferBytes // the last reported, as NewFabricRecord keeps
		}
		j, ok := r.portIndex(q.Key.Port, hint)
		if !ok {
			return false
		}
		hint = j
		p := &r.Ports[j]
		if p.RateBps != q.RateBps || p.Peer != q.Peer || p.Neighbor != neighbors[q.Key.Port] {
			return false
		}
		if w, b := j/64, uint64(1)<<(j%64); seen[w]&b == 0 {
			seen[w] |= b
			distinct++
		}
	}
	return distinct == len(r.Ports) && buffer == r.BufferBytes
}

// portIndex finds port among r's ports (in natural order), trying hint
// and the one after it first: a switch lists its queues in the same order
// every time, mostly port by port, so a search is rarely needed.
func (r FabricRecord) portIndex(port string, hint int) (int, bool) {
	for _, j := range [2]int{hint, hint + 1} {
		if j < len(r.Ports) && r.Ports[j].Name == port {
			return j, true
		}
	}
	j, ok := slices.BinarySearchFunc(r.Ports, port, func(p FabricPort, name string) int { return NaturalCompare(p.Name, name) })
	return j, ok && r.Ports[j].Name == port
}

// Check reports what makes r unusable: no target, too many ports, a port
// without a name or listed twice, a speed that is not a rate.
func (r FabricRecord) Check() error {
	var errs []error
	if r.Target == "" {
		errs = append(errs, errors.New("no target"))
	}
	if len(r.Ports) > MaxFabricPorts {
		errs = append(errs, fmt.Errorf("%d ports, more than the %d a record holds", len(r.Ports), MaxFabricPorts))
	}
	if r.BufferBytes < 0 || r.CableMeters < 0 || math.IsNaN(r.CableMeters) || r.FrameBytes < 0 {
		errs = append(errs, errors.New("a negative buffer, cable or frame size"))
	}
	seen := map[string]bool{}
	for i, p := range r.Ports {
		switch {
		case p.Name == "":
			errs = append(errs, fmt.Errorf("port %d has no name", i))
		case seen[p.Name]:
			errs = append(errs, fmt.Errorf("port %s is listed twice", p.Name))
		case p.RateBps != 0 && !KnownRate(p.RateBps):
			errs = append(errs, fmt.Errorf("port %s: speed %g is not a rate", p.Name, p.RateBps))
		}
		seen[p.Name] = true
	}
	if len(errs) > 0 {
		return fmt.Errorf("fabric record of %q: %w", r.Target, errors.Join(errs...))
	}
	return nil
}
