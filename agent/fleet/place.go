package fleet

import (
	"hash/fnv"
	"math"
	"slices"
	"sort"
	"time"
)

// Member is one agent of the fleet as placement sees it.
type Member struct {
	ID   string `json:"id"`
	Zone string `json:"zone,omitempty"`
	// Capacity weighs the member's share (0: 1).
	Capacity float64 `json:"capacity,omitempty"`
	// Draining: it keeps no switch (an operator drains it).
	Draining bool `json:"draining,omitempty"`
	// Switches are the switches its configuration lists, the only ones
	// placed on it (nil: any, a member of an older version).
	Switches []string `json:"switches,omitempty"`
}

// runs says whether m may be given s: its configuration lists s.
func (m Member) runs(s string) bool {
	return m.Switches == nil || slices.Contains(m.Switches, s)
}

// Switch is one switch to place.
type Switch struct {
	Name string `json:"name"`
	Zone string `json:"zone,omitempty"`
	// WriteTimeout is the longest one write to it takes (its target's
	// set timeout; 0: Config.WriteTimeout): given up, it keeps its owner
	// key that long after the member stopped writing it.
	WriteTimeout time.Duration `json:"-"`
}

// PlaceOptions tune Place.
type PlaceOptions struct {
	// Slack is how far above its fair share a member may be loaded
	// before a switch goes elsewhere (bounded-load hashing's epsilon;
	// 0: 0.25).
	Slack float64
	// Rebalance moves switches from members above their fair share to
	// members below it (a member that joined), at most MaxMoves a round
	// (0: no bound). Without it only the switches of a member gone or
	// draining, or beyond a member's bound, move.
	Rebalance bool
	MaxMoves  int
}

// Placement is who owns each switch, and what changed.
type Placement struct {
	Owner map[string]string // switch → member ID ("" none: no member)
	// Moved are the switches whose owner changed, Rebalanced those of
	// them taken from a member still alive and not draining.
	Moved, Rebalanced []string
}

// score is the rendezvous weight of member m for switch s: highest wins.
func score(s, m string, capacity float64) float64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	h.Write([]byte{0})
	h.Write([]byte(m))
	u := (float64(h.Sum64()>>11) + 0.5) / (1 << 53) // in (0, 1)
	if capacity <= 0 {
		capacity = 1
	}
	return -capacity / math.Log(u) // weighted rendezvous: share ∝ capacity
}

// Place assigns every switch to a member by bounded-load rendezvous
// hashing: each switch goes to a member whose configuration lists it, of
// its zone (any such member when none of its zone is up; none when no
// member up lists it), with the highest weight for it among those below
// their bound, ceil(fair share × (1+Slack)). A switch stays with its
// current owner while that owner is up, not draining and within its bound,
// so that a member leaving moves only its switches; a rebalance
// (PlaceOptions.Rebalance) gives a member that joined its share over
// rounds of at most MaxMoves. The result depends only on the
// inputs (no clock, no randomness).
func Place(switches []Switch, members []Member, current map[string]string, o PlaceOptions) Placement {
	if o.Slack <= 0 {
		o.Slack = 0.25
	}
	p := Placement{Owner: make(map[string]string, len(switches))}
	up := map[string]Member{}
	total := 0.0
	for _, m := range members {
		if !m.Draining {
			up[m.ID] = m
			total += capOf(m)
		}
	}
	if len(up) == 0 {
		for _, s := range switches {
			p.Owner[s.Name] = ""
			if current[s.Name] != "" {
				p.Moved = append(p.Moved, s.Name)
			}
		}
		return p
	}
	bound := map[string]int{}
	for id, m := range up {
		bound[id] = int(math.Ceil(float64(len(switches)) * capOf(m) / total * (1 + o.Slack)))
	}
	load := map[string]int{}
	sw := slices.Clone(switches)
	sort.Slice(sw, func(i, j int) bool { return sw[i].Name < sw[j].Name })
	// Keep what may stay, first.
	var free []Switch
	for _, s := range sw {
		if id := current[s.Name]; id != "" {
			if _, ok := up[id]; ok && load[id] < bound[id] && allowed(s, up[id], up) {
				p.Owner[s.Name] = id
				load[id]++
				continue
			}
		}
		free = append(free, s)
	}
	// A switch that must move goes within its new owner's fair share when
	// a rebalance follows: spread evenly now, it leaves the rebalance no
	// kept switch to move (a member leaving moves only its switches).
	spread := bound
	if o.Rebalance {
		spread = map[string]int{}
		for id, m := range up {
			spread[id] = int(math.Ceil(float64(len(switches)) * capOf(m) / total))
		}
	}
	for _, s := range free {
		id := best(s, up, load, spread)
		p.Owner[s.Name] = id // "": no member up lists it
		if id != "" {
			load[id]++
		}
	}
	if o.Rebalance {
		p.rebalance(sw, up, load, bound, current, o.MaxMoves)
	}
	for _, s := range sw {
		if p.Owner[s.Name] != current[s.Name] {
			p.Moved = append(p.Moved, s.Name)
		}
	}
	return p
}

func capOf(m Member) float64 {
	if m.Capacity <= 0 {
		return 1
	}
	return m.Capacity
}

// allowed: member m may own s: its configuration lists s, and it is of
// s's zone or no member of s's zone that lists s is up.
func allowed(s Switch, m Member, up map[string]Member) bool {
	if !m.runs(s.Name) {
		return false
	}
	if s.Zone == "" || m.Zone == s.Zone {
		return true
	}
	for _, x := range up {
		if x.Zone == s.Zone && x.runs(s.Name) {
			return false
		}
	}
	return true
}

// best is the member of highest weight for s among those allowed and below
// their bound (the highest allowed when all are full; "" when no member
// up may own s).
func best(s Switch, up map[string]Member, load, bound map[string]int) string {
	ids := make([]string, 0, len(up))
	for id := range up {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	pick, pickFull := "", ""
	var ws, wf float64
	for _, id := range ids {
		m := up[id]
		if !allowed(s, m, up) {
			continue
		}
		w := score(s.Name, id, capOf(m))
		if load[id] < bound[id] && (pick == "" || w > ws) {
			pick, ws = id, w
		}
		if pickFull == "" || w > wf {
			pickFull, wf = id, w
		}
	}
	if pick == "" {
		return pickFull
	}
	return pick
}

// rebalance moves, up to maxMoves (0: any), switches kept by a live member
// to the member rendezvous hashing prefers for them when that member is
// below its fair share by more than one: a member that joined takes its
// share over rounds, not all at once.
func (p *Placement) rebalance(sw []Switch, up map[string]Member, load, bound map[string]int, current map[string]string, maxMoves int) {
	total := 0.0
	for _, m := range up {
		total += capOf(m)
	}
	fair := func(id string) int { return int(math.Floor(float64(len(sw)) * capOf(up[id]) / total)) }
	moves := 0
	for _, s := range sw {
		if maxMoves > 0 && moves >= maxMoves {
			return
		}
		cur := p.Owner[s.Name]
		if cur == "" || cur != current[s.Name] {
			continue // already moving
		}
		want := best(s, up, load, bound)
		if want == "" || want == cur || load[want] >= fair(want) || load[cur] <= fair(cur) {
			continue
		}
		p.Owner[s.Name] = want
		load[cur]--
		load[want]++
		p.Rebalanced = append(p.Rebalanced, s.Name)
		moves++
	}
}
