package gnmipath

import (
	"errors"
	"slices"
	"strconv"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// QueueState is what a switch's client knows of one queue when it composes
// a Set: the queue's bindings (Decoder.Binding) and the setting the switch
// reports (Known false when it cannot be decoded).
type QueueState struct {
	Binding Binding
	Setting env.Setting
	Known   bool
}

// Sets composes the Set requests that apply settings to target t, by t's
// device rules:
//   - each queue's request (SetRequest), without a headroom or alpha the
//     switch already has or the device cannot set (only sonic has alpha;
//     headroom where the device has it as a leaf or a buffer profile);
//   - a headroom or alpha the switch cannot tune on that PG (under SONiC's
//     dynamic buffer model, say) left out, the ECN change kept, and why in
//     notTunable;
//   - the ECN requests merged into as few as possible with no two
//     operations on one path in a request, in the natural order of the
//     queues (ecn);
//   - the headroom leaves the device takes in Sets of their own (hr).
//
// state gives each queue's bindings and current setting.
func Sets(t Target, settings map[env.QueueKey]env.Setting, state func(env.QueueKey) QueueState) (ecn, hr []*gnmi.SetRequest, notTunable []string, err error) {
	keys := make([]env.QueueKey, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, env.CompareQueueKeys)
	type batch struct {
		req   *gnmi.SetRequest
		paths map[string]bool
	}
	var batches []*batch
	dev := t.Dev()
	// BUFFER_PG range entries ("Ethernet0|3-4") a request of this call
	// splits: a later PG of the range has an entry of its own by then (on
	// the shared profile), and its request must not split the range again
	// (that would bind the earlier PG back to the shared profile).
	split := map[string]bool{}
	for _, k := range keys {
		st := settings[k]
		qs := state(k)
		rangeKey := k.Port + "|" + qs.Binding.PGKey
		if split[rangeKey] {
			qs.Binding.PGKey = strconv.Itoa(k.Queue)
		}
		if qs.Known {
			// unchanged: leave the buffer profile alone
			if qs.Setting.HeadroomBytes == st.HeadroomBytes {
				st.HeadroomBytes = 0
			}
			if qs.Setting.Alpha == st.Alpha {
				st.Alpha = 0
			}
		}
		if dev.Dialect != Sonic && dev.Headroom != HeadroomLeaf {
			st.HeadroomBytes = 0 // not settable on this device: ECN only
		}
		if dev.Dialect != Sonic {
			st.Alpha = 0 // only sonic has an alpha (BUFFER_PROFILE dynamic_th)
		}
		req, err := SetRequest(t, k, st, qs.Binding)
		var nt *HeadroomError
		if errors.As(err, &nt) {
			// ECN without the headroom and alpha; the caller hears why.
			notTunable = append(notTunable, nt.Error())
			st.HeadroomBytes, st.Alpha = 0, 0
			req, err = SetRequest(t, k, st, qs.Binding)
		}
		if err != nil {
			return nil, nil, nil, err
		}
		if h := HeadroomRequest(t, k, st.HeadroomBytes); h != nil {
			hr = append(hr, h)
		}
		// The paths the request touches, deleted or written alike: two
		// operations on one path never share a request.
		var ps []string
		rangePath := Describe(req.Prefix, &gnmi.Path{Elem: names("BUFFER_PG", rangeKey)})
		for _, d := range req.Delete {
			ps = append(ps, Describe(req.Prefix, d))
			if dev.Dialect == Sonic && ps[len(ps)-1] == rangePath {
				split[rangeKey] = true
			}
		}
		for _, u := range req.Update {
			ps = append(ps, Describe(req.Prefix, u.Path))
		}
		var into *batch
		for _, bt := range batches {
			if samePrefix(bt.req.Prefix, req.Prefix) && !slices.ContainsFunc(ps, func(p string) bool { return bt.paths[p] }) {
				into = bt
				break
			}
		}
		if into == nil {
			into = &batch{req: &gnmi.SetRequest{Prefix: req.Prefix}, paths: map[string]bool{}}
			batches = append(batches, into)
		}
		into.req.Delete = append(into.req.Delete, req.Delete...)
		into.req.Update = append(into.req.Update, req.Update...)
		for _, p := range ps {
			into.paths[p] = true
		}
	}
	ecn = make([]*gnmi.SetRequest, len(batches))
	for i, b := range batches {
		ecn[i] = b.req
	}
	return ecn, hr, notTunable, nil
}

// RequestPaths describes every path a Set request writes or deletes
// ("delete " before a deleted one's), with the request's prefix.
func RequestPaths(req *gnmi.SetRequest) []string {
	var ps []string
	for _, d := range req.Delete {
		ps = append(ps, "delete "+Describe(req.Prefix, d))
	}
	for _, u := range req.Update {
		ps = append(ps, Describe(req.Prefix, u.Path))
	}
	return ps
}

// WritePaths lists the paths a change of keys writes on target t, for the
// write-ahead audit record: those of the Sets of a placeholder setting,
// which names the same leaves as any change of those queues (headroom and
// alpha aside, which only a change of them writes).
func WritePaths(t Target, keys []env.QueueKey, state func(env.QueueKey) QueueState) []string {
	settings := map[env.QueueKey]env.Setting{}
	for _, k := range keys {
		settings[k] = env.Setting{KminBytes: 1, KmaxBytes: 2, Pmax: 0.01}
	}
	ecn, hr, _, err := Sets(t, settings, state)
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range append(ecn, hr...) {
		out = append(out, RequestPaths(r)...)
	}
	return out
}

// samePrefix reports whether two requests' prefixes address the same
// place (target, origin and elements).
func samePrefix(a, b *gnmi.Path) bool {
	return Describe(a, &gnmi.Path{}) == Describe(b, &gnmi.Path{}) && a.GetTarget() == b.GetTarget()
}
