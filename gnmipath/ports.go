package gnmipath

import (
	"fmt"
	"strings"
)

// DefaultMaxPorts bounds the ports a decoder keeps for one target when
// Target.MaxPorts is 0: twice the largest switches' port count with
// breakouts. A switch reporting more names than that (a broken or hostile
// target) cannot make the agent grow without bound.
const DefaultMaxPorts = 1024

// ForgetAfter is how many snapshots a port whose queue counters stop
// coming is kept: then its leaves are forgotten (it left the switch, or
// its name was never real).
const ForgetAfter = 16

// Shapes under which Skipped counts ports beyond the bound and ports
// forgotten.
const (
	ShapePortLimit = "(ports beyond max-ports)"
	ShapeForgotten = "(ports no longer reported, forgotten)"
)

// errPortLimit: a leaf of a port the decoder cannot take (the bound is
// reached). It is a skipped element (ErrUnknownKey), counted under
// ShapePortLimit.
type errPortLimit struct{ port string }

func (e errPortLimit) Error() string {
	return fmt.Sprintf("port %q: already at the bound of ports for this target; leaves of further ports are skipped", e.port)
}
func (e errPortLimit) Is(t error) bool { return t == ErrUnknownKey }

// errUnwantedPort: a leaf of a port the configuration does not list,
// ignored like a path ecntune does not read.
var errUnwantedPort = fmt.Errorf("port not in the target's ports: %w", ErrUnknownPath)

// admitPort decides whether the decoder keeps leaves of port: one the
// target lists (Target.Ports, when given), within Target.MaxPorts.
func (d *Decoder) admitPort(port string) error {
	if _, ok := d.known[port]; ok {
		return nil
	}
	if d.wanted != nil && !d.wanted[port] {
		return errUnwantedPort
	}
	if len(d.known) >= d.maxPorts() {
		return errPortLimit{port}
	}
	if d.known == nil {
		d.known = map[string]struct{}{}
	}
	d.known[strings.Clone(port)] = struct{}{}
	return nil
}

// maxPorts is Target.MaxPorts, or DefaultMaxPorts.
func (d *Decoder) maxPorts() int {
	if d.t.MaxPorts > 0 {
		return d.t.MaxPorts
	}
	return DefaultMaxPorts
}

// skipShape is skipIndex for the decoder's own shapes.
func (d *Decoder) skipShape(shape, example, why string) *Skipped {
	if d.skips == nil {
		d.skips = map[string]int32{}
	}
	if i, ok := d.skips[shape]; ok {
		return d.skipList[i-1]
	}
	d.skipList = append(d.skipList, &Skipped{Shape: shape, Example: example, Why: why})
	d.skips[shape] = int32(len(d.skipList))
	return d.skipList[len(d.skipList)-1]
}

// portLimitIndex is skipIndex's record of a leaf of a port beyond the
// bound.
func (d *Decoder) portLimitIndex(e errPortLimit) int32 {
	d.skipShape(ShapePortLimit, "port "+e.port, fmt.Sprintf("the target reports more than %d ports (max-ports); leaves of further ports are skipped", d.maxPorts()))
	return d.skips[ShapePortLimit]
}

// forgetStale forgets the ports whose queue counters have not come for
// ForgetAfter snapshots (checked every ForgetAfter snapshots): their
// queues, speed and every leaf naming them.
func (d *Decoder) forgetStale() {
	d.gen++
	if d.gen%ForgetAfter != 0 {
		return
	}
	var gone []string
	for name, p := range d.ports {
		if p.seen != 0 && d.gen-p.seen > ForgetAfter {
			gone = append(gone, name)
		}
	}
	if len(gone) == 0 {
		return
	}
	drop := map[string]bool{}
	for _, name := range gone {
		drop[name] = true
		delete(d.ports, name)
		delete(d.known, name)
	}
	for id := range d.qs {
		if drop[id.port] {
			delete(d.qs, id)
		}
	}
	for l := range d.tree {
		if l.Port != "" && drop[l.Port] {
			delete(d.tree, l)
		}
	}
	d.forgetPaths()
	d.qdirty, d.pgdirty, d.cdirty = true, true, true
	d.bindGen++
	d.skipShape(ShapeForgotten, gone[0], fmt.Sprintf("no queue counters for %d samples", ForgetAfter)).Count += uint64(len(gone))
}
