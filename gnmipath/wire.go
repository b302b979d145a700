package gnmipath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Field numbers of the gNMI messages ApplyWire walks (gnmi.proto).
const (
	srUpdate, srSync, srError = 1, 3, 4 // SubscribeResponse
	ntTimestamp, ntPrefix     = 1, 2    // Notification
	ntUpdate, ntDelete        = 4, 5
	upPath, upValue, upVal    = 1, 2, 3 // Update (2: deprecated Value)
	pElement, pOrigin         = 1, 2    // Path (1: deprecated element)
	pElem, pTarget            = 3, 4
	peName, peKey             = 1, 2 // PathElem
)

// WireResult says what one SubscribeResponse carried.
type WireResult struct {
	Sync      bool  // a sync_response
	Update    bool  // a notification (applied)
	Timestamp int64 // its timestamp
	// Counters: the notification carries queue-level state (openconfig:
	// a "state" element; sonic: COUNTERS_DB), as the session paces
	// snapshots by (see PeekWire).
	Counters bool
}

// errWireFallback marks a response the fast walk does not take.
var errWireFallback = errors.New("fallback")

// wireUpd is one update of a notification on the fast walk.
type wireUpd struct {
	ent pathEnt
	v   Val
}

// PeekWire reads a SubscribeResponse's kind, timestamp and whether it
// carries counters, without decoding its values.
func PeekWire(dl Dialect, b []byte) (WireResult, error) {
	var r WireResult
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return r, protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num == srSync && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return r, protowire.ParseError(m)
			}
			r.Sync = v != 0
			b = b[m:]
			continue
		case num == srUpdate && typ == protowire.BytesType:
			nb, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return r, protowire.ParseError(m)
			}
			r.Update = true
			r.Timestamp, r.Counters = peekNotification(dl, nb)
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return r, protowire.ParseError(m)
		}
		b = b[m:]
	}
	return r, nil
}

// peekNotification finds a notification's timestamp and whether any of its
// paths has a "state" element (sonic: the prefix target is COUNTERS_DB).
func peekNotification(dl Dialect, b []byte) (ts int64, counters bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if typ == protowire.VarintType && num == ntTimestamp {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return
			}
			ts = int64(v)
			b = b[m:]
			continue
		}
		if typ == protowire.BytesType && (num == ntPrefix || num == ntUpdate) {
			nb, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return
			}
			b = b[m:]
			if counters {
				continue
			}
			if num == ntUpdate {
				nb = subMessage(nb, upPath)
			}
			counters = pathHasState(dl, nb, num == ntPrefix)
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return
		}
		b = b[m:]
	}
	return
}

// subMessage returns the bytes of field num (a message, or a string) of
// message b, or nil.
func subMessage(b []byte, num protowire.Number) []byte {
	for len(b) > 0 {
		f, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if f == num && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil
			}
			return v
		}
		m := protowire.ConsumeFieldValue(f, typ, b)
		if m < 0 {
			return nil
		}
		b = b[m:]
	}
	return nil
}

func pathHasState(dl Dialect, b []byte, prefix bool) bool {
	for len(b) > 0 {
		f, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return false
			}
			b = b[m:]
			switch {
			case dl == Sonic && prefix && f == pTarget:
				if t := string(v); t == CountersDB || strings.HasPrefix(t, CountersDB+"/") {
					return true
				}
			case dl != Sonic && f == pElem:
				if string(subMessage(v, peName)) == "state" {
					return true
				}
			}
			continue
		}
		m := protowire.ConsumeFieldValue(f, typ, b)
		if m < 0 {
			return false
		}
		b = b[m:]
	}
	return false
}

// ApplyWire folds one SubscribeResponse, as the bytes gRPC received, into
// the decoder: the same result as unmarshalling it and calling Apply, but a
// notification whose every update names a path seen before and carries a
// scalar is walked in place, with no message allocated. Anything else
// (first sight of a path, deletes, lists, deprecated fields) is
// unmarshalled and goes through Apply.
func (d *Decoder) ApplyWire(b []byte) (WireResult, error) {
	r, err := PeekWire(d.t.Dialect, b)
	if err != nil {
		return r, fmt.Errorf("%s: malformed SubscribeResponse: %v", d.t.Name, err)
	}
	return r, d.ApplyPeeked(b, r)
}

// ApplyPeeked is ApplyWire for a response already read by PeekWire (r).
func (d *Decoder) ApplyPeeked(b []byte, r WireResult) error {
	if !r.Update {
		return nil
	}
	nb := subMessage(b, srUpdate)
	if !d.general {
		if counters, err := d.applyWireNotification(nb); err != errWireFallback {
			d.wireWalks++
			if counters && r.Timestamp > d.tsLeaf {
				d.tsLeaf = r.Timestamp
			}
			if r.Timestamp > d.ts {
				d.ts = r.Timestamp
			}
			return err
		}
	}
	var n gnmi.Notification
	if err := proto.Unmarshal(nb, &n); err != nil {
		return fmt.Errorf("%s: malformed notification: %v", d.t.Name, err)
	}
	return d.Apply(&n)
}

// applyWireNotification is ApplyWire's walk of one notification: a first
// pass resolves every update from the path cache and reads its scalar
// (errWireFallback as soon as one cannot be), a second applies them.
func (d *Decoder) applyWireNotification(b []byte) (counters bool, err error) {
	var prefix []byte
	ups := d.wire[:0]
	defer func() { d.wire = ups[:0] }()
	// Pass 0: the prefix (it may come after the updates on the wire).
	for rest := b; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return false, errWireFallback
		}
		rest = rest[n:]
		if typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(rest)
			if m < 0 {
				return false, errWireFallback
			}
			rest = rest[m:]
			switch num {
			case ntPrefix:
				prefix = v
			case ntDelete:
				return false, errWireFallback
			}
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, rest)
		if m < 0 {
			return false, errWireFallback
		}
		rest = rest[m:]
	}
	pk, ok := appendPathKey(d.pbuf[:0], prefix)
	d.pbuf = pk
	if !ok {
		return false, errWireFallback
	}
	// Pass 1: resolve every update.
	for rest := b; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		rest = rest[n:]
		if typ != protowire.BytesType || num != ntUpdate {
			rest = rest[protowire.ConsumeFieldValue(num, typ, rest):]
			continue
		}
		u, m := protowire.ConsumeBytes(rest)
		rest = rest[m:]
		var path, val []byte
		for len(u) > 0 {
			f, t, k := protowire.ConsumeTag(u)
			if k < 0 {
				return false, errWireFallback
			}
			u = u[k:]
			if t != protowire.BytesType {
				k = protowire.ConsumeFieldValue(f, t, u)
				if k < 0 {
					return false, errWireFallback
				}
				u = u[k:]
				continue
			}
			v, k := protowire.ConsumeBytes(u)
			if k < 0 {
				return false, errWireFallback
			}
			u = u[k:]
			switch f {
			case upPath:
				path = v
			case upVal:
				val = v
			case upValue:
				return false, errWireFallback
			}
		}
		key, ok := appendPathKey(append(d.kbuf[:0], pk...), path)
		d.kbuf = key
		if !ok {
			return false, errWireFallback
		}
		ent, hit := d.lookupPath(key)
		if !hit {
			return false, errWireFallback
		}
		w := wireUpd{ent: ent}
		if ent.known {
			// A bad value goes the general way, which reports it by
			// the path as sent.
			if !wireScalar(val, &d.sc) {
				return false, errWireFallback
			}
			v, err := decodeScal(d.t.Dialect, ent.leaf, &d.sc)
			d.sc = scal{}
			if err != nil {
				return false, errWireFallback
			}
			w.v = v
		}
		ups = append(ups, w)
	}
	// Pass 2: apply.
	for i := range ups {
		w := &ups[i]
		if !w.ent.known {
			if w.ent.skip != nil {
				w.ent.skip.Count++
			}
			continue
		}
		d.set(w.ent.leaf, w.v, w.ent.q, w.ent.p)
		if isQueueField(w.ent.leaf.Field) {
			counters = true
		}
	}
	return counters, nil
}

// appendPathKey appends the pathKey encoding of a Path message's target,
// origin and elements (see Decoder.pathKey); ok is false for what the
// cache does not take (the deprecated element field, elements with more
// than one key, malformed bytes).
func appendPathKey(dst, b []byte) ([]byte, bool) {
	var target, origin []byte
	nelem := 0
	for rest := b; len(rest) > 0; {
		f, t, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return dst, false
		}
		rest = rest[n:]
		if t != protowire.BytesType {
			n = protowire.ConsumeFieldValue(f, t, rest)
			if n < 0 {
				return dst, false
			}
			rest = rest[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(rest)
		if n < 0 {
			return dst, false
		}
		rest = rest[n:]
		switch f {
		case pElement:
			return dst, false
		case pOrigin:
			origin = v
		case pTarget:
			target = v
		case pElem:
			nelem++
		}
	}
	dst = appendLPb(dst, target)
	dst = appendLPb(dst, origin)
	if nelem == 0 {
		return dst, true
	}
	for rest := b; len(rest) > 0; {
		f, t, n := protowire.ConsumeTag(rest)
		rest = rest[n:]
		if t != protowire.BytesType {
			rest = rest[protowire.ConsumeFieldValue(f, t, rest):]
			continue
		}
		v, n := protowire.ConsumeBytes(rest)
		rest = rest[n:]
		if f != pElem {
			continue
		}
		var name, kn, kv []byte
		keys := 0
		for len(v) > 0 {
			g, tt, k := protowire.ConsumeTag(v)
			if k < 0 || tt != protowire.BytesType {
				return dst, false
			}
			v = v[k:]
			x, k := protowire.ConsumeBytes(v)
			if k < 0 {
				return dst, false
			}
			v = v[k:]
			switch g {
			case peName:
				name = x
			case peKey:
				keys++
				kn, kv = mapEntry(x)
			}
		}
		if keys > 1 {
			return dst, false
		}
		dst = appendLPb(dst, name)
		dst = binary.AppendUvarint(dst, uint64(keys))
		if keys == 1 {
			dst = appendLPb(dst, kn)
			dst = appendLPb(dst, kv)
		}
	}
	return dst, true
}

// mapEntry reads a map<string,string> entry (key 1, value 2).
func mapEntry(b []byte) (k, v []byte) {
	for len(b) > 0 {
		f, t, n := protowire.ConsumeTag(b)
		if n < 0 || t != protowire.BytesType {
			return
		}
		b = b[n:]
		x, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if f == 1 {
			k = x
		} else if f == 2 {
			v = x
		}
	}
	return
}

func appendLPb(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// wireScalar reads a TypedValue message's scalar into x as scalarOf does
// (false: not a scalar the fast walk takes).
func wireScalar(b []byte, x *scal) bool {
	*x = scal{}
	f, t, n := protowire.ConsumeTag(b)
	if n < 0 {
		return false
	}
	b = b[n:]
	switch {
	case t == protowire.VarintType && (f == 2 || f == 3 || f == 4):
		v, m := protowire.ConsumeVarint(b)
		if m < 0 || m != len(b) {
			return false
		}
		switch f {
		case 2:
			x.k, x.i = sInt, int64(v)
		case 3:
			x.k, x.u = sUint, v
		case 4:
			x.k, x.b = sBool, v != 0
		}
		return true
	case t == protowire.Fixed64Type && f == 14:
		v, m := protowire.ConsumeFixed64(b)
		if m < 0 || m != len(b) {
			return false
		}
		x.k, x.f = sFloat, math.Float64frombits(v)
		return true
	case t == protowire.Fixed32Type && f == 6:
		v, m := protowire.ConsumeFixed32(b)
		if m < 0 || m != len(b) {
			return false
		}
		x.k, x.f = sFloat, float64(math.Float32frombits(v))
		return true
	case t == protowire.BytesType && (f == 10 || f == 11):
		v, m := protowire.ConsumeBytes(b)
		if m < 0 || m != len(b) {
			return false
		}
		return fastJSON(v, x)
	case t == protowire.BytesType && (f == 1 || f == 12):
		v, m := protowire.ConsumeBytes(b)
		if m < 0 || m != len(b) {
			return false
		}
		x.k, x.s = sString, string(v)
		return true
	}
	return false
}
