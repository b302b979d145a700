package simswitch

import (
	"fmt"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// checkDeviceWrite refuses writes the imitated device does not take: a
// leaf outside its schema (NotFound, as for any unknown path) or one it
// serves read-only (InvalidArgument).
func (r *runner) checkDeviceWrite(ops []gnmipath.SetOp) error {
	for _, op := range ops {
		if op.Op == "delete" {
			continue
		}
		ls, err := gnmipath.LeavesOf(r.d, op)
		if err != nil {
			continue // ApplySet says what is wrong with it
		}
		for _, l := range ls {
			if unknown, err := r.dev.CheckWrite(l); err != nil {
				code := codes.InvalidArgument
				if unknown {
					code = codes.NotFound
				}
				return status.Errorf(code, "%s: %v", gnmipath.PathString(op.Elems), err)
			}
		}
	}
	return nil
}

// checkSchema validates a configuration after a Set the way a
// schema-validating (ygot) server does for strict devices: every WRED
// profile has min <= max (bound to a queue or not), a profile exists only
// with its key leaf config/name, and every queue's profile reference
// names an existing profile. Every device checks min <= max.
func checkSchema(dev *gnmipath.Device, t gnmipath.Tree) error {
	type prof struct {
		min, max       uint64
		hasMin, hasMax bool
		named, any     bool
	}
	profs := map[string]*prof{}
	get := func(n string) *prof {
		p := profs[n]
		if p == nil {
			p = &prof{}
			profs[n] = p
		}
		return p
	}
	var refs []gnmipath.Leaf
	for l, v := range t {
		switch l.Field {
		case gnmipath.WREDMin:
			p := get(l.Name)
			p.min, p.hasMin, p.any = v.U, true, true
		case gnmipath.WREDMax:
			p := get(l.Name)
			p.max, p.hasMax, p.any = v.U, true, true
		case gnmipath.WREDProb, gnmipath.WREDEnableECN, gnmipath.WREDGreenEnable, gnmipath.WREDECNMode:
			get(l.Name).any = true
		case gnmipath.WREDName:
			get(l.Name).named = true
		case gnmipath.QueueProfile:
			refs = append(refs, l)
		}
	}
	names := make([]string, 0, len(profs))
	for n := range profs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := profs[n]
		if p.hasMin && p.hasMax && p.min > p.max {
			return fmt.Errorf("profile %s: kmin (min-threshold) %d B is above kmax (max-threshold) %d B", n, p.min, p.max)
		}
		if dev.Strict() && p.any && !p.named {
			return fmt.Errorf("queue-management-profile[name=%s] has no config/name: a list entry is created with its key leaf", n)
		}
	}
	if dev.Strict() {
		sort.Slice(refs, func(i, j int) bool {
			return env.CompareQueueKeys(env.QueueKey{Port: refs[i].Port, Queue: refs[i].Index}, env.QueueKey{Port: refs[j].Port, Queue: refs[j].Index}) < 0
		})
		for _, l := range refs {
			n := t[l].S
			if p := profs[n]; p == nil || !p.named {
				return fmt.Errorf("queue %s/%d: queue-management-profile %q does not exist (leafref)", l.Port, l.Index, n)
			}
		}
	}
	return nil
}
