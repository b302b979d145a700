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
	// Counters: the notification carries queue counters (openconfig: a
	// path with "queue" and "state" elements; sonic: COUNTERS_DB), as the
	// session paces snapshots by (see peekNotification).
	Counters bool
	// Key tells apart the notifications of one sample: a hash of its
	// prefix and its first update's path, the same for the notification
	// of the same leaves at every sample (a client takes a key seen again
	// as the start of the next sample, however the switch stamps them).
	Key uint64
}

// errWireFallback marks a response the fast walk does not take.
var errWireFallback = errors.New("fallback")

// wireUpd is one update of a notification on the fast walk.
type wireUpd struct {
	ent pathEnt
	v   Val
}

// wireField consumes the first field of message bytes b: its number and
// type, val (a length-delimited field's content, else its encoded value)
// and n, the bytes taken (protowire's negative code when malformed).
func wireField(b []byte) (num protowire.Number, typ protowire.Type, val []byte, n int) {
	// The common case, read directly: a length-delimited field with a
	// one-byte tag (field 1-15) and a one-byte length (up to 127 bytes).
	if len(b) >= 2 {
		tag, l := b[0], int(b[1])
		if tag < 0x80 && tag>>3 >= 1 && protowire.Type(tag&7) == protowire.BytesType && l < 0x80 && l <= len(b)-2 {
			return protowire.Number(tag >> 3), protowire.BytesType, b[2 : 2+l], 2 + l
		}
	}
	return consumeField(b)
}

// consumeField is wireField for any field, by protowire.
func consumeField(b []byte) (num protowire.Number, typ protowire.Type, val []byte, n int) {
	num, typ, n = protowire.ConsumeTag(b)
	if n < 0 {
		return 0, 0, nil, n
	}
	if typ == protowire.BytesType {
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return 0, 0, nil, m
		}
		return num, typ, v, n + m
	}
	m := protowire.ConsumeFieldValue(num, typ, b[n:])
	if m < 0 {
		return 0, 0, nil, m
	}
	return num, typ, b[n : n+m], n + m
}

// PeekWire reads a SubscribeResponse's kind, timestamp and whether it
// carries counters, without decoding its values.
func PeekWire(dl Dialect, b []byte) (WireResult, error) {
	var r WireResult
	for len(b) > 0 {
		num, typ, v, n := wireField(b)
		if n < 0 {
			return r, protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num == srSync && typ == protowire.VarintType:
			x, _ := protowire.ConsumeVarint(v)
			r.Sync = x != 0
		case num == srUpdate && typ == protowire.BytesType:
			r.Update = true
			r.Timestamp, r.Counters, r.Key = peekNotification(dl, v)
		}
	}
	return r, nil
}

// peekNotification finds a notification's timestamp and whether it
// carries queue counters: openconfig, a path (prefix and update together)
// with a "queue" and a "state" element; sonic, a prefix whose target is
// COUNTERS_DB. A port's speed (.../ethernet/state/port-speed), sampled
// beside the counters and stamped by a cache-based server with the time
// it last changed, is no counters: it neither paces samples nor moves the
// stream's clock.
func peekNotification(dl Dialect, b []byte) (ts int64, counters bool, key uint64) {
	var pre, both, queueOnly, stateOnly elemSeen
	var hp, hu uint64 = fnvOffset, fnvOffset
	first := true
	for len(b) > 0 {
		num, typ, v, n := wireField(b)
		if n < 0 {
			break
		}
		b = b[n:]
		switch {
		case typ == protowire.VarintType && num == ntTimestamp:
			x, _ := protowire.ConsumeVarint(v)
			ts = int64(x)
		case typ == protowire.BytesType && num == ntPrefix:
			pre, hp = pathElems(dl, v, true), fnv1a(fnvOffset, v)
		case typ == protowire.BytesType && num == ntUpdate:
			up := subMessage(v, upPath)
			if first {
				first, hu = false, fnv1a(fnvOffset, up)
			}
			switch u := pathElems(dl, up, false); {
			case u.queue && u.state:
				both.queue = true
			case u.queue:
				queueOnly.queue = true
			case u.state:
				stateOnly.state = true
			}
		}
	}
	key = hp*fnvPrime ^ hu
	if dl == Sonic {
		return ts, pre.counters, key
	}
	return ts, (pre.queue && pre.state) || both.queue || (pre.queue && stateOnly.state) || (pre.state && queueOnly.queue), key
}

// FNV-1a, 64 bits.
const fnvOffset, fnvPrime uint64 = 14695981039346656037, 1099511628211

func fnv1a(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h
}

// elemSeen is what pathElems found in a path.
type elemSeen struct{ queue, state, counters bool }

// subMessage returns the bytes of field num (a message, or a string) of
// message b, or nil.
func subMessage(b []byte, num protowire.Number) []byte {
	for len(b) > 0 {
		f, typ, v, n := wireField(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if f == num && typ == protowire.BytesType {
			return v
		}
	}
	return nil
}

// pathElems reports whether Path message b has a "queue" and a "state"
// element (sonic: as a notification's prefix, whether its target is
// COUNTERS_DB).
func pathElems(dl Dialect, b []byte, prefix bool) elemSeen {
	var e elemSeen
	for len(b) > 0 {
		f, typ, v, n := wireField(b)
		if n < 0 {
			return e
		}
		b = b[n:]
		if typ != protowire.BytesType {
			continue
		}
		switch {
		case dl == Sonic && prefix && f == pTarget:
			if t := string(v); t == CountersDB || strings.HasPrefix(t, CountersDB+"/") {
				e.counters = true
			}
		case dl != Sonic && f == pElem:
			switch string(subMessage(v, peName)) {
			case "queue":
				e.queue = true
			case "state":
				e.state = true
			}
		}
	}
	return e
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
	ups := d.wire[:0]
	defer func() { d.wire = ups[:0] }()
	// Pass 0: the prefix (it may come after the updates on the wire).
	prefix, ok := wirePrefix(b)
	if !ok {
		return false, errWireFallback
	}
	pk, ok := appendPathKey(d.pbuf[:0], prefix)
	d.pbuf = pk
	if !ok {
		return false, errWireFallback
	}
	// Pass 1: resolve every update (pass 0 found the bytes well formed).
	for rest := b; len(rest) > 0; {
		num, typ, v, n := wireField(rest)
		rest = rest[n:]
		if typ != protowire.BytesType || num != ntUpdate {
			continue
		}
		u, ok := d.resolveWire(pk, v)
		if !ok {
			return false, errWireFallback
		}
		ups = append(ups, u)
	}
	// Pass 2: apply.
	return d.applyWireUpds(ups), nil
}

// wirePrefix finds a notification's prefix; ok is false for a notification
// with deletes or malformed bytes.
func wirePrefix(b []byte) (prefix []byte, ok bool) {
	for len(b) > 0 {
		num, typ, v, n := wireField(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		if typ != protowire.BytesType {
			continue
		}
		switch num {
		case ntPrefix:
			prefix = v
		case ntDelete:
			return nil, false
		}
	}
	return prefix, true
}

// resolveWire resolves Update message u of a notification whose prefix's
// key is pk from the path cache and reads its scalar; ok is false when
// either cannot be done on the fast walk.
func (d *Decoder) resolveWire(pk, u []byte) (wireUpd, bool) {
	path, val, ok := wireUpdate(u)
	if !ok {
		return wireUpd{}, false
	}
	key, ok := appendPathKey(append(d.kbuf[:0], pk...), path)
	d.kbuf = key
	if !ok {
		return wireUpd{}, false
	}
	ent, hit := d.lookupPath(key)
	if !hit {
		return wireUpd{}, false
	}
	w := wireUpd{ent: ent}
	if ent.known {
		// A bad value goes the general way, which reports it by
		// the path as sent.
		if !wireScalar(val, &d.sc) {
			return wireUpd{}, false
		}
		v, err := decodeScal(d.t.Dialect, ent.leaf, &d.sc)
		d.sc = scal{}
		if err != nil {
			return wireUpd{}, false
		}
		w.v = v
	}
	return w, true
}

// wireUpdate reads an Update message's path and val; ok is false for the
// deprecated value field or malformed bytes.
func wireUpdate(u []byte) (path, val []byte, ok bool) {
	for len(u) > 0 {
		f, typ, v, n := wireField(u)
		if n < 0 {
			return nil, nil, false
		}
		u = u[n:]
		if typ != protowire.BytesType {
			continue
		}
		switch f {
		case upPath:
			path = v
		case upVal:
			val = v
		case upValue:
			return nil, nil, false
		}
	}
	return path, val, true
}

// applyWireUpds applies resolved updates in order (counting skipped
// leaves) and reports whether any was of a queue.
func (d *Decoder) applyWireUpds(ups []wireUpd) (counters bool) {
	for i := range ups {
		w := &ups[i]
		if !w.ent.known {
			if w.ent.skip != 0 {
				d.skipList[w.ent.skip-1].Count++
			}
			continue
		}
		d.set(w.ent.leaf, w.v, w.ent.q, w.ent.p)
		if isQueueField(w.ent.leaf.Field) {
			counters = true
		}
	}
	return counters
}

// appendPathKey appends the pathKey encoding of a Path message's target,
// origin and elements (see Decoder.pathKey); ok is false for what the
// cache does not take (the deprecated element field, elements with more
// than one key, malformed bytes).
func appendPathKey(dst, b []byte) ([]byte, bool) {
	var target, origin []byte
	nelem := 0
	for rest := b; len(rest) > 0; {
		f, typ, v, n := wireField(rest)
		if n < 0 {
			return dst, false
		}
		rest = rest[n:]
		if typ != protowire.BytesType {
			continue
		}
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
	// The elements, in order (the first walk found the bytes well formed).
	for rest := b; len(rest) > 0; {
		f, typ, v, n := wireField(rest)
		rest = rest[n:]
		if typ != protowire.BytesType || f != pElem {
			continue
		}
		var ok bool
		if dst, ok = appendElemKey(dst, v); !ok {
			return dst, false
		}
	}
	return dst, true
}

// appendElemKey appends the pathKey encoding of a PathElem message: its
// name and its key, if it has one (ok is false for more than one).
func appendElemKey(dst, b []byte) ([]byte, bool) {
	var name, kn, kv []byte
	keys := 0
	for len(b) > 0 {
		g, typ, v, n := wireField(b)
		if n < 0 || typ != protowire.BytesType {
			return dst, false
		}
		b = b[n:]
		switch g {
		case peName:
			name = v
		case peKey:
			keys++
			kn, kv = mapEntry(v)
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
	return dst, true
}

// mapEntry reads a map<string,string> entry (key 1, value 2).
func mapEntry(b []byte) (k, v []byte) {
	for len(b) > 0 {
		f, typ, x, n := wireField(b)
		if n < 0 || typ != protowire.BytesType {
			return k, v
		}
		b = b[n:]
		if f == 1 {
			k = x
		} else if f == 2 {
			v = x
		}
	}
	return k, v
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
