package fleet

import (
	"fmt"
	"reflect"
	"testing"
)

func switches(n int) []Switch {
	out := make([]Switch, n)
	for i := range out {
		out[i] = Switch{Name: fmt.Sprintf("leaf%04d", i)}
	}
	return out
}

func members(ids ...string) []Member {
	out := make([]Member, len(ids))
	for i, id := range ids {
		out[i] = Member{ID: id}
	}
	return out
}

func loads(p Placement) map[string]int {
	l := map[string]int{}
	for _, id := range p.Owner {
		l[id]++
	}
	return l
}

// 1,000 switches over 4 members: every member within its bound, and the
// same inputs give the same placement.
func TestPlaceBalancedAndDeterministic(t *testing.T) {
	sw, ms := switches(1000), members("a", "b", "c", "d")
	p := Place(sw, ms, nil, PlaceOptions{})
	for id, n := range loads(p) {
		if n > 313 || n < 150 {
			t.Fatalf("member %s has %d of 1000 switches (bound 313)", id, n)
		}
	}
	if q := Place(sw, ms, nil, PlaceOptions{}); !reflect.DeepEqual(p.Owner, q.Owner) {
		t.Fatal("not deterministic")
	}
}

// A member leaving moves its switches and nothing else; one joining takes
// about its share, from the others, at most MaxMoves a round.
func TestPlaceMovesOnlyWhatItMust(t *testing.T) {
	sw := switches(1000)
	p := Place(sw, members("a", "b", "c", "d"), nil, PlaceOptions{})
	had := loads(p)["d"]
	q := Place(sw, members("a", "b", "c"), p.Owner, PlaceOptions{})
	if len(q.Moved) != had || len(q.Rebalanced) != 0 {
		t.Fatalf("d left with %d switches: %d moved, %d rebalanced", had, len(q.Moved), len(q.Rebalanced))
	}
	for _, s := range q.Moved {
		if p.Owner[s] != "d" {
			t.Fatalf("%s moved from %s, which stayed", s, p.Owner[s])
		}
	}
	// d comes back: at most 50 moves a round until it has its share
	cur, rounds := q.Owner, 0
	for ; rounds < 20; rounds++ {
		r := Place(sw, members("a", "b", "c", "d"), cur, PlaceOptions{Rebalance: true, MaxMoves: 50})
		if len(r.Rebalanced) > 50 {
			t.Fatalf("round %d moved %d", rounds, len(r.Rebalanced))
		}
		cur = r.Owner
		if len(r.Moved) == 0 {
			break
		}
	}
	if n := loads(Placement{Owner: cur})["d"]; n < 200 || rounds > 10 {
		t.Fatalf("after %d rounds d has %d switches", rounds, n)
	}
}

// Zones keep a switch in its zone while a member of it is up; a draining
// member keeps nothing.
func TestPlaceZonesAndDrain(t *testing.T) {
	sw := []Switch{{Name: "s1", Zone: "east"}, {Name: "s2", Zone: "east"}, {Name: "s3", Zone: "west"}, {Name: "s4"}}
	ms := []Member{{ID: "e", Zone: "east"}, {ID: "w", Zone: "west"}, {ID: "x", Draining: true}}
	p := Place(sw, ms, map[string]string{"s4": "x"}, PlaceOptions{Slack: 10})
	if p.Owner["s1"] != "e" || p.Owner["s2"] != "e" || p.Owner["s3"] != "w" || p.Owner["s4"] == "x" {
		t.Fatalf("placement %v", p.Owner)
	}
	// with no member of west up, its switch goes anywhere
	if q := Place(sw, ms[:1], nil, PlaceOptions{}); q.Owner["s3"] != "e" {
		t.Fatalf("placement %v", q.Owner)
	}
	// no member at all: no owner
	if q := Place(sw, nil, p.Owner, PlaceOptions{}); q.Owner["s1"] != "" || len(q.Moved) != 4 {
		t.Fatalf("placement %v", q)
	}
}

// As the leader places (with Rebalance on every round), a member leaving
// still moves its switches only: they are spread within the others' fair
// shares, so the rebalance has no kept switch to move. (The demo saw 3
// moves for 2 switches of a member gone: its switches landed on one
// member, and the rebalance moved a kept one.)
func TestPlaceLeaveWithRebalanceMovesOnlyTheLeaversSwitches(t *testing.T) {
	for _, n := range []int{6, 7, 30, 100, 1000} {
		sw := switches(n)
		p := Place(sw, members("a", "b", "c"), nil, PlaceOptions{Rebalance: true})
		had := loads(p)["c"]
		q := Place(sw, members("a", "b"), p.Owner, PlaceOptions{Rebalance: true, MaxMoves: 2})
		if len(q.Moved) != had || len(q.Rebalanced) != 0 {
			t.Errorf("%d switches: c left with %d, %d moved (%d rebalanced): %v", n, had, len(q.Moved), len(q.Rebalanced), q.Moved)
		}
		if l := loads(q); l["a"]-l["b"] > 1 || l["b"]-l["a"] > 1 {
			t.Errorf("%d switches: a %d, b %d after c left", n, l["a"], l["b"])
		}
	}
}

// A switch goes only to a member whose configuration lists it: kept from
// a member that no longer lists it, placed on nobody when no member up
// lists it; members of an older version (no list) take any.
func TestPlaceOnlyOnMembersThatRunTheSwitch(t *testing.T) {
	sw := switches(40)
	a := Member{ID: "a", Switches: []string{"leaf0000", "leaf0001"}} // two only
	b := Member{ID: "b"}                                             // any
	cur := map[string]string{}
	for _, s := range sw {
		cur[s.Name] = "a" // a owned them all
	}
	p := Place(sw, []Member{a, b}, cur, PlaceOptions{Rebalance: true})
	for _, s := range sw {
		want := "b"
		if s.Name == "leaf0000" || s.Name == "leaf0001" {
			want = "a"
		}
		if p.Owner[s.Name] != want {
			t.Fatalf("%s placed on %q, want %q", s.Name, p.Owner[s.Name], want)
		}
	}
	b.Switches = []string{"leaf0000"}
	p = Place(sw, []Member{a, b}, nil, PlaceOptions{})
	if o := p.Owner["leaf0005"]; o != "" {
		t.Fatalf("a switch no member lists placed on %q", o)
	}
	if o := p.Owner["leaf0001"]; o != "a" {
		t.Fatalf("leaf0001, listed by a only, placed on %q", o)
	}
	// zones: a switch of zone z goes to the member of z that lists it,
	// not to one of z that does not
	zs := []Switch{{Name: "s", Zone: "z"}}
	p = Place(zs, []Member{{ID: "x", Zone: "z", Switches: []string{"other"}}, {ID: "y", Switches: []string{"s"}}}, nil, PlaceOptions{})
	if o := p.Owner["s"]; o != "y" {
		t.Fatalf("zoned switch placed on %q, want y (the only member that lists it)", o)
	}
}
