package gnmipath

// LLDP neighbour state (openconfig-lldp), read-only: what is at the other
// end of each interface. simswitch serves it from the simulated topology;
// the agent reads it to learn which ports face another switch.
//
//	/lldp/interfaces/interface[name=X]/neighbors/neighbor[id=N]/state/
//	    system-name, port-id, chassis-id                              string
//	/lldp/interfaces/interface[name=X]/neighbors/neighbor[id=N]/capabilities/
//	    capability[name=C]/state/enabled                              bool
//
// C is an openconfig-lldp-types LLDP_SYSTEM_CAPABILITY identity (MAC_BRIDGE,
// ROUTER, STATION_ONLY, ...). In the sonic dialect these are openconfig
// paths all the same: sonic-gnmi answers them through its translib (the
// sonic-mgmt-common LLDP app) under prefix.target OC-YANG, with
// module-prefixed names (/openconfig-lldp:lldp/interfaces); simswitch's
// sonic dialect serves them there too.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openconfig/gnmi/proto/gnmi"
)

// OCYang is the prefix.target under which sonic-gnmi serves openconfig
// (translib) paths.
const OCYang = "OC-YANG"

// LLDPCapabilities are the openconfig-lldp-types LLDP_SYSTEM_CAPABILITY
// identities, in IEEE 802.1AB bit order.
var LLDPCapabilities = []string{"OTHER", "REPEATER", "MAC_BRIDGE", "WLAN_ACCESS_POINT", "ROUTER", "TELEPHONE",
	"DOCSIS_CABLE_DEVICE", "STATION_ONLY", "C_VLAN", "S_VLAN", "TWO_PORT_MAC_RELAY"}

// Positions in LLDPCapabilities of the capabilities simswitch advertises.
const (
	CapMACBridge   = 2
	CapRouter      = 4
	CapStationOnly = 7
)

func isLLDP(f Field) bool { return f >= LLDPSystemName && f <= LLDPCapEnabled }

func lldpLeafPath(l Leaf) []*gnmi.PathElem {
	base := []*gnmi.PathElem{elem("lldp"), elem("interfaces"), elem("interface", "name", l.Port),
		elem("neighbors"), elem("neighbor", "id", l.Name)}
	switch l.Field {
	case LLDPSystemName:
		return join(base, names("state", "system-name"))
	case LLDPPortID:
		return join(base, names("state", "port-id"))
	case LLDPChassisID:
		return join(base, names("state", "chassis-id"))
	case LLDPCapEnabled:
		if l.Index < 0 || l.Index >= len(LLDPCapabilities) {
			return nil
		}
		return join(base, []*gnmi.PathElem{elem("capabilities"), elem("capability", "name", LLDPCapabilities[l.Index]),
			elem("state"), elem("enabled")})
	}
	return nil
}

// LLDPRequest is the Get a client sends for the LLDP neighbour state of
// every interface of t: openconfig, /lldp/interfaces/interface[name=*]/
// neighbors with prefix.target the switch name; sonic,
// /openconfig-lldp:lldp/interfaces with prefix.target OC-YANG.
func LLDPRequest(t Target) *gnmi.GetRequest {
	if t.Dialect == Sonic {
		return &gnmi.GetRequest{Prefix: &gnmi.Path{Target: OCYang},
			Path:     []*gnmi.Path{{Elem: names("openconfig-lldp:lldp", "interfaces")}},
			Encoding: gnmi.Encoding_JSON_IETF}
	}
	return &gnmi.GetRequest{Prefix: &gnmi.Path{Target: t.Name},
		Path:     []*gnmi.Path{{Elem: []*gnmi.PathElem{elem("lldp"), elem("interfaces"), elem("interface", "name", "*"), elem("neighbors")}}},
		Encoding: gnmi.Encoding_JSON_IETF}
}

// LLDPNeighbor is one neighbour of one interface, as openconfig-lldp
// reports it.
type LLDPNeighbor struct {
	Interface string
	ID        string
	// SystemName, PortID and ChassisID are empty when not reported.
	SystemName, PortID, ChassisID string
	// Capabilities holds every capability reported with its enabled leaf,
	// by identity name without module prefix (MAC_BRIDGE, ROUTER, ...).
	Capabilities map[string]bool
	// Malformed: a leaf of this neighbour could not be read (a value of the
	// wrong type, a list entry without its key), so what it says is
	// incomplete.
	Malformed bool
}

// Reported says whether the neighbour reported anything about itself: a
// name, a port or chassis id, or a capability.
func (n *LLDPNeighbor) Reported() bool {
	return n.SystemName != "" || n.PortID != "" || n.ChassisID != "" || len(n.Capabilities) > 0
}

// lldpListKeys are the key leaves of the openconfig-lldp lists a container
// value may carry (RFC 7951 arrays of entries that hold their keys).
var lldpListKeys = map[string]string{"interface": "name", "neighbor": "id", "capability": "name"}

// lldpLeaf is one scalar of a notification with its full path (element
// names without module prefixes), or a problem found at that path.
type lldpLeaf struct {
	el  []*gnmi.PathElem
	val *gnmi.TypedValue
	err error
}

// LLDPNeighbors reads openconfig-lldp neighbour state out of notifications
// (a Get answer, or Subscribe updates) however the server splits the tree:
// one update per leaf, or container values in JSON or JSON_IETF with lists
// as arrays of entries, typed scalars or JSON, names with or without module
// prefixes. Leaves other than those described in this file are ignored, and
// so are deletes and prefix targets (the caller asked one switch). It
// returns each interface's neighbours in id order, and an error joining
// every leaf it could not read: a neighbour with such a leaf is marked
// Malformed; a leaf that names no interface is dropped.
func LLDPNeighbors(ns []*gnmi.Notification) (map[string][]LLDPNeighbor, error) {
	type nkey struct{ ifc, id string }
	found := map[nkey]*LLDPNeighbor{}
	var errs []error
	get := func(ifc, id string) *LLDPNeighbor {
		k := nkey{ifc, id}
		n := found[k]
		if n == nil {
			n = &LLDPNeighbor{Interface: ifc, ID: id}
			found[k] = n
		}
		return n
	}
	for _, n := range ns {
		for _, u := range n.GetUpdate() {
			base := StripModules(FullElems(n.GetPrefix(), u.GetPath()))
			if !lldpRelevant(base) {
				continue
			}
			for _, l := range lldpScalars(base, u.GetVal()) {
				if err := applyLLDP(l, get); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	out := map[string][]LLDPNeighbor{}
	for k, n := range found {
		out[k.ifc] = append(out[k.ifc], *n)
	}
	for _, v := range out { // ids are unique per interface: one order
		slices.SortFunc(v, func(a, b LLDPNeighbor) int { return strings.Compare(a.ID, b.ID) })
	}
	return out, errors.Join(errs...)
}

// lldpShape is the path of a neighbour leaf: lldp/interfaces/interface/
// neighbors/neighbor.
var lldpShape = []string{"lldp", "interfaces", "interface", "neighbors", "neighbor"}

// lldpRelevant reports whether a path can lead to or hold neighbour leaves:
// it agrees with lldpShape as far as both go.
func lldpRelevant(el []*gnmi.PathElem) bool {
	for i, e := range el {
		if i >= len(lldpShape) {
			return true
		}
		if e.GetName() != lldpShape[i] {
			return false
		}
	}
	return true
}

// StripModules copies elements with YANG module prefixes removed from
// their names (openconfig-lldp:lldp becomes lldp).
func StripModules(el []*gnmi.PathElem) []*gnmi.PathElem {
	out := make([]*gnmi.PathElem, len(el))
	for i, e := range el {
		out[i] = &gnmi.PathElem{Name: stripModule(e.GetName()), Key: e.GetKey()}
	}
	return out
}

// lldpScalars expands an update's value into scalar leaves.
func lldpScalars(base []*gnmi.PathElem, tv *gnmi.TypedValue) []lldpLeaf {
	raw, ietf, ok := jsonBytes(tv)
	if !ok {
		return []lldpLeaf{{el: base, val: tv}}
	}
	var x any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return []lldpLeaf{{el: base, err: fmt.Errorf("value is not valid JSON: %v", err)}}
	}
	w := &lldpWalker{ietf: ietf}
	// Servers built on RESTCONF-style encoders (sonic-gnmi's translib)
	// wrap a container or list entry in its own name: {"openconfig-lldp:
	// interfaces": {...}} at .../interfaces. No element of this model has a
	// child of its own name, so such a value belongs to the parent.
	if m, ok := x.(map[string]any); ok && len(m) == 1 && len(base) > 0 {
		for k := range m {
			if stripModule(k) == base[len(base)-1].GetName() {
				w.walk(base[:len(base)-1], x)
				return w.out
			}
		}
	}
	w.walk(base, x)
	return w.out
}

// lldpWalker collects the scalar leaves of a decoded JSON value.
type lldpWalker struct {
	ietf bool // encode the scalars as JSON_IETF (else JSON)
	out  []lldpLeaf
}

// walk expands value x at el, skipping what no neighbour leaf is under.
func (w *lldpWalker) walk(el []*gnmi.PathElem, x any) {
	if !lldpRelevant(el) {
		return
	}
	switch v := x.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			name := stripModule(k)
			if arr, ok := v[k].([]any); ok {
				w.entries(el, name, arr)
				continue
			}
			w.walk(join(el, names(name)), v[k])
		}
	case []any:
		// A list addressed without its key (e.g. .../neighbors/neighbor).
		if len(el) > 0 && len(el[len(el)-1].GetKey()) == 0 {
			w.entries(el[:len(el)-1], el[len(el)-1].GetName(), v)
		}
	case nil:
	default:
		w.out = append(w.out, lldpLeaf{el: el, val: encodeJSON(v, w.ietf)})
	}
}

// entries expands the array value of list name under el.
func (w *lldpWalker) entries(el []*gnmi.PathElem, name string, arr []any) {
	key, ok := lldpListKeys[name]
	if !ok {
		return // a list no neighbour leaf is under
	}
	for _, e := range arr {
		m, ok := e.(map[string]any)
		if !ok {
			w.out = append(w.out, lldpLeaf{el: join(el, names(name)), err: fmt.Errorf("list %s: an entry is not an object", name)})
			continue
		}
		kv := lldpKeyValue(m, key)
		if kv == "" {
			w.out = append(w.out, lldpLeaf{el: join(el, names(name)), err: fmt.Errorf("list %s: an entry has no %s", name, key)})
			continue
		}
		w.walk(join(el, []*gnmi.PathElem{elem(name, key, kv)}), m)
	}
}

// lldpKeyValue is list entry m's value of key (a string or number, under
// any module prefix), "" if none.
func lldpKeyValue(m map[string]any, key string) string {
	kv := ""
	for mk, mv := range m {
		if stripModule(mk) == key {
			switch s := mv.(type) {
			case string:
				kv = s
			case json.Number:
				kv = s.String()
			}
		}
	}
	return kv
}

// applyLLDP folds one scalar leaf into the neighbour it belongs to.
func applyLLDP(l lldpLeaf, get func(ifc, id string) *LLDPNeighbor) error {
	el := l.el
	if len(el) < len(lldpShape) {
		if l.err != nil {
			return fmt.Errorf("lldp %s: %v", PathString(el), l.err) // names no neighbour
		}
		return nil // interface-level leaves (config, counters) are not ours
	}
	ifc := el[2].GetKey()["name"]
	if ifc == "" || ifc == "*" {
		return fmt.Errorf("lldp %s: no interface name", PathString(el))
	}
	id := el[4].GetKey()["id"]
	nb := get(ifc, id)
	if l.err != nil {
		nb.Malformed = true
		return fmt.Errorf("lldp %s: %v", PathString(el), l.err)
	}
	if id == "" || id == "*" {
		nb.Malformed = true
		return fmt.Errorf("lldp %s: no neighbor id", PathString(el))
	}
	rest := el[len(lldpShape):]
	bad := func(err error) error {
		nb.Malformed = true
		return fmt.Errorf("lldp %s: %v", PathString(el), err)
	}
	switch {
	case len(rest) == 2 && rest[0].GetName() == "state":
		var dst *string
		switch rest[1].GetName() {
		case "system-name":
			dst = &nb.SystemName
		case "port-id":
			dst = &nb.PortID
		case "chassis-id":
			dst = &nb.ChassisID
		default:
			return nil
		}
		s, err := String(l.val)
		if err != nil {
			return bad(err)
		}
		*dst = s
	case len(rest) == 4 && rest[0].GetName() == "capabilities" && rest[1].GetName() == "capability" &&
		rest[2].GetName() == "state" && rest[3].GetName() == "enabled":
		c := strings.ToUpper(stripIdentity(rest[1].GetKey()["name"]))
		if c == "" || c == "*" {
			return bad(errors.New("capability without a name"))
		}
		on, err := Bool(l.val)
		if err != nil {
			return bad(err)
		}
		if nb.Capabilities == nil {
			nb.Capabilities = map[string]bool{}
		}
		nb.Capabilities[c] = on
	}
	return nil
}
