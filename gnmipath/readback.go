package gnmipath

import (
	"errors"
	"fmt"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// A read-back is two Gets: the queues' bindings (ReadBindings), then the
// profiles those bindings name (ReadProfiles); ReadSettings decodes both
// answers into each queue's setting. The client only transports.

// ReadBindings is the Get of the bindings of keys' queues (SettingPaths,
// each path once).
func ReadBindings(t Target, keys []env.QueueKey) *gnmi.GetRequest {
	var prefix *gnmi.Path
	seen := map[string]bool{}
	var paths []*gnmi.Path
	for _, k := range keys {
		p, ps := SettingPaths(t, k)
		prefix = p
		for _, x := range ps {
			if d := Describe(nil, x); !seen[d] {
				seen[d] = true
				paths = append(paths, x)
			}
		}
	}
	return &gnmi.GetRequest{Prefix: prefix, Path: paths, Encoding: gnmi.Encoding_JSON_IETF}
}

// ReadProfiles is the Get of the profiles the bindings answer names for
// keys (nil when it names none); a client that meets NotFound may get its
// paths one by one.
func ReadProfiles(t Target, bindings []*gnmi.Notification, keys []env.QueueKey) *gnmi.GetRequest {
	bound := NewDecoder(t)
	for _, n := range bindings {
		_ = bound.Apply(n)
	}
	var ecn, buf []string
	named := map[string]bool{}
	for _, k := range keys {
		e, b := bound.ProfilesOf(k.Port, k.Queue)
		if e != "" && !named["ecn:"+e] {
			named["ecn:"+e], ecn = true, append(ecn, e)
		}
		if b != "" && !named["buffer:"+b] {
			named["buffer:"+b], buf = true, append(buf, b)
		}
	}
	ps := ProfileSubscription(t, ecn, buf)
	if len(ps.Paths) == 0 {
		return nil
	}
	return &gnmi.GetRequest{Prefix: ps.Prefix, Path: ps.Paths, Encoding: gnmi.Encoding_JSON_IETF}
}

// ReadSettings decodes both answers of a read-back with one decoder (not
// one per queue: that was quadratic in the queues of a Set) into the
// setting of each of keys it holds, and the ECN profile each is bound to
// ("" none); an error only when it holds no setting.
func ReadSettings(t Target, answer []*gnmi.Notification, keys []env.QueueKey) (map[env.QueueKey]env.Setting, map[env.QueueKey]string, error) {
	rd := NewDecoder(t)
	var aerrs []error
	for _, n := range answer {
		if err := rd.Apply(n); err != nil {
			aerrs = append(aerrs, err)
		}
	}
	out := make(map[env.QueueKey]env.Setting, len(keys))
	bound := make(map[env.QueueKey]string, len(keys))
	var errs []error
	for _, k := range keys {
		bound[k] = rd.Binding(k.Port, k.Queue).ECNProfile
		st, err := rd.Setting(k.Port, k.Queue)
		if err != nil {
			errs = append(errs, errors.Join(append([]error{err}, aerrs...)...))
			continue
		}
		out[k] = st
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, bound, fmt.Errorf("%w: %w", ErrNotReported, errors.Join(errs...))
	}
	return out, bound, nil
}

// ErrNotReported: the switch answered the read-back, and the answer holds
// none of the queues asked (a port renamed or removed, a queue unbound):
// not a switch that cannot be read.
var ErrNotReported = errors.New("the switch's answer holds none of the queues asked")
