package gnmipath

import (
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// Group is one subscription the agent opens on its own Subscribe RPC, so
// that a switch refusing it (a path outside its schema fails the whole RPC,
// gNMI §3.5.2.4) loses that group alone. Required groups are the ones no
// decision can be made without; the others only take telemetry away
// (Provides), which QueueSample.Missing then names.
type Group struct {
	Name     string
	Required bool
	Provides env.Telemetry
	Sub      Subscription
	Also     []Subscription // more paths of the same request (same prefix)
}

// sonicTarget is prefix.target for db on a real sonic-gnmi: the database,
// and "/namespace" after it on a multi-ASIC switch.
func sonicTarget(t Target, db string) string {
	if t.Namespace != "" {
		return db + "/" + t.Namespace
	}
	return db
}

// Request is the group's STREAM request, SAMPLE paths sampled every
// sample.
func (g Group) Request(sample time.Duration) *gnmi.SubscribeRequest {
	return streamRequest(sample, append([]Subscription{g.Sub}, g.Also...)...)
}

// prefixed builds a subscription whose prefix carries target, origin and
// the elements common to its paths, so that a server answering relative to
// the prefix (as the spec allows and simswitch does) sends short paths.
func prefixed(t Target, origin, common string, mode gnmi.SubscriptionMode, rel ...string) Subscription {
	p := &gnmi.Path{Target: t.Name, Origin: origin}
	if common != "" {
		p.Elem = mustPath(common).GetElem()
	}
	return Subscription{Prefix: p, Mode: mode, Paths: parsePaths(rel...)}
}

// Groups returns the subscriptions of target t, by its device: queue
// counters (SAMPLE), port speeds, PFC statistics and the shared buffer
// where the device serves them, the queue bindings (ON_CHANGE) and, where
// headroom is a settable leaf, the PFC config. Profiles named by the
// bindings are subscribed to separately (ProfileSubscription).
func Groups(t Target) []Group {
	d := t.Dev()
	if d.RealSonic {
		// sonic-gnmi's virtual paths: queue counters with the periodic
		// watermarks, and port counters (PFC), of every port; the
		// namespace goes in prefix.target.
		c := Subscription{Prefix: &gnmi.Path{Target: sonicTarget(t, CountersDB)}, Mode: gnmi.SubscriptionMode_SAMPLE,
			Paths: parsePaths("/COUNTERS/Ethernet*/Queues", "/COUNTERS/Ethernet*")}
		g := Subscription{Prefix: &gnmi.Path{Target: sonicTarget(t, ConfigDB)}, Mode: gnmi.SubscriptionMode_ON_CHANGE,
			Paths: parsePaths("/PORT", "/QUEUE", "/BUFFER_PG", "/BUFFER_POOL")}
		// The cable lengths only estimate the floor: on a Subscribe of
		// their own, since an older sonic-gnmi refuses a table that has no
		// keys yet and would take the required config group with it.
		cl := Subscription{Prefix: &gnmi.Path{Target: sonicTarget(t, ConfigDB)}, Mode: gnmi.SubscriptionMode_ON_CHANGE,
			Paths: parsePaths("/CABLE_LENGTH")}
		return []Group{
			{Name: "counters", Required: true, Sub: c},
			{Name: "config", Required: true, Sub: g},
			{Name: "cable-length", Provides: env.TelHeadroom, Sub: cl},
		}
	}
	if d.Dialect == Sonic {
		c, g := Subscriptions(t)
		return []Group{
			{Name: "counters", Required: true, Sub: c},
			{Name: "config", Required: true, Sub: g},
		}
	}
	sample, change := gnmi.SubscriptionMode_SAMPLE, gnmi.SubscriptionMode_ON_CHANGE
	// The required paths share one Subscribe: counters and the bindings
	// they are judged against then arrive in the order the switch
	// changed them (a binding changed by a Set is never seen after
	// counters taken under the next one), and a switch refusing any of
	// them leaves nothing to decide on anyway.
	base := prefixed(t, d.Origin, "", sample,
		"/qos/interfaces/interface[interface-id=*]/output/queues/queue[name=*]/state",
		"/interfaces/interface[name=*]/ethernet/state/port-speed")
	bind := prefixed(t, d.Origin, "", change, "/qos/interfaces/interface[interface-id=*]/output/queues/queue[name=*]/config")
	gs := []Group{{Name: "queues", Required: true, Sub: base, Also: []Subscription{bind}}}
	switch d.PFC {
	case PFCEthernetAugment:
		prov := env.TelPFCFrames
		if d.Paused != "" {
			prov |= env.TelPausedTime
		}
		if d.Extensions {
			prov |= env.TelXoff | env.TelHeadroom
		}
		gs = append(gs, Group{Name: "pfc", Provides: prov, Sub: prefixed(t, d.Origin, "/interfaces", sample,
			"/interface[name=*]/ethernet/pfc/priorities/priority[index=*]/state")})
	case PFCSRLinux:
		gs = append(gs, Group{Name: "pfc", Provides: env.TelPFCFrames, Sub: prefixed(t, d.NativeOrigin, "/qos/interfaces", sample,
			"/interface[interface-id=*]/pfc/statistics")})
	}
	if d.Extensions {
		gs = append(gs, Group{Name: "shared-buffer", Provides: env.TelBuffer, Sub: prefixed(t, d.Origin, "/qos/state", sample,
			"/shared-buffer-size")})
	}
	if d.Headroom == HeadroomLeaf {
		gs = append(gs, Group{Name: "pfc-config", Sub: prefixed(t, d.Origin, "/interfaces", change,
			"/interface[name=*]/ethernet/pfc/priorities/priority[index=*]/config")})
	}
	return gs
}
