package policy

import (
	"fmt"
	"strings"

	"github.com/ecntune/ecntune/env"
)

// Roles runs one policy on the queues of host-facing ports, another on
// those of fabric ports (facing another switch), and optionally a third
// on queues whose peer is unknown (which otherwise hold their setting):
// the way operators set ToR downlinks and uplinks apart.
//
// Spec: roles:host=SPEC;fabric=SPEC[;other=SPEC], each SPEC any other
// policy spec (a +headroom= or +alpha= suffix belongs to the part it ends:
// roles:host=builtin+headroom=floor;fabric=builtin+headroom=floor+alpha=2
// sets alpha on fabric ports only).
type Roles struct {
	name   string
	byPeer map[env.Peer]Policy
	specs  map[env.Peer]string
}

// roleNames maps a spec's role to the peer kind it covers; roleOf is
// the other way round; roleOrder is the order of a parsed spec's parts.
var (
	roleNames = map[string]env.Peer{"host": env.PeerHost, "fabric": env.PeerSwitch, "other": env.PeerUnknown}
	roleOf    = map[env.Peer]string{env.PeerHost: "host", env.PeerSwitch: "fabric", env.PeerUnknown: "other"}
	roleOrder = []string{"host", "fabric", "other"}
)

// ParseRoles splits the argument of roles: into its parts, checking that
// host and fabric are given, no role twice and no unknown role. It does
// not resolve the parts.
func ParseRoles(arg string) (map[string]string, error) {
	parts := map[string]string{}
	for _, p := range strings.Split(arg, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		role, spec, ok := strings.Cut(p, "=")
		role, spec = strings.TrimSpace(role), strings.TrimSpace(spec)
		if _, known := roleNames[role]; !ok || !known {
			return nil, fmt.Errorf("part %q: want ROLE=SPEC with ROLE host, fabric or other", p)
		}
		if _, dup := parts[role]; dup {
			return nil, fmt.Errorf("role %s given twice", role)
		}
		if spec == "" {
			return nil, fmt.Errorf("role %s: no policy spec", role)
		}
		if strings.HasPrefix(spec, RolesPrefix) {
			return nil, fmt.Errorf("role %s: roles: does not nest", role)
		}
		if strings.HasPrefix(spec, RatePrefix) {
			return nil, fmt.Errorf("role %s: roles: and rate: do not nest (split by role or by port speed, not both)", role)
		}
		parts[role] = spec
	}
	for _, need := range []string{"host", "fabric"} {
		if _, ok := parts[need]; !ok {
			return nil, fmt.Errorf("no %s= part: want roles:host=SPEC;fabric=SPEC[;other=SPEC]", need)
		}
	}
	return parts, nil
}

// Name is the spec.
func (ro *Roles) Name() string { return ro.name }

// Policy is the policy a peer kind's queues get (nil: they hold).
func (ro *Roles) Policy(peer env.Peer) Policy { return ro.byPeer[peer] }

// Decide gives each role's queues to its policy, in one batch per role
// (in the order they came), and each decision's reason says which role
// and policy made it.
func (ro *Roles) Decide(obs []env.Observation) []Decision {
	out := make([]Decision, len(obs))
	idx := map[env.Peer][]int{}
	for i := range obs {
		peer := obs[i].Peer
		if peer != env.PeerHost && peer != env.PeerSwitch {
			peer = env.PeerUnknown
		}
		if ro.byPeer[peer] == nil {
			out[i] = Decision{Key: obs[i].Key, Setting: obs[i].Current, Action: env.ActionHold, Held: HoldUndecided,
				Reason: "hold: peer unknown and the roles: spec has no other= policy"}
			continue
		}
		idx[peer] = append(idx[peer], i)
	}
	var parts []splitPart
	for _, peer := range []env.Peer{env.PeerHost, env.PeerSwitch, env.PeerUnknown} {
		if len(idx[peer]) > 0 {
			parts = append(parts, splitPart{policy: ro.byPeer[peer], label: roleOf[peer] + " port", spec: ro.specs[peer], idx: idx[peer]})
		}
	}
	decideSplit("roles", obs, out, parts)
	return out
}
