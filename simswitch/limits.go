package simswitch

import (
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
)

// Bounds on what a client can make the server hold or send (see doc.go,
// Limits, and Config.MaxMsgBytes, MaxPaths and MaxSetOps).

// ProfilesPerQueue bounds the profiles a switch holds: at most
// ProfilesPerQueue x (ports x 8 queues) ECN (WRED) profiles, and as many
// SONiC buffer profiles. A switch's WRED and buffer profiles live in
// fixed-size ASIC tables, so a real one refuses to create more than it has
// room for; four per queue leaves room for the initial profile of each
// queue, a private one per queue (gnmipath.OwnProfileName), and spares.
const ProfilesPerQueue = 4

// MaxNameBytes is the longest profile name (and string value, such as the
// profile a queue is bound to) a Set may write.
const MaxNameBytes = 128

func isECNProfileField(f gnmipath.Field) bool { return f >= gnmipath.WREDMin && f <= gnmipath.WREDName }

func isBufferProfileField(f gnmipath.Field) bool { return f >= gnmipath.BPSize && f <= gnmipath.BPPool }

// checkBounds refuses a configuration tree that names an interface the
// switch does not have, has a name or string value longer than
// MaxNameBytes, or more profiles of a kind than ProfilesPerQueue allows.
func (r *runner) checkBounds(sw int, t gnmipath.Tree) error {
	info := r.infos[sw]
	ports := r.ports[sw]
	limit := ProfilesPerQueue * len(info.Ports) * simenv.NumQueues
	ecn := map[string]bool{}
	buf := map[string]bool{}
	for l, v := range t {
		if l.Port != "" && !ports[l.Port] {
			return status.Errorf(codes.NotFound, "Set rejected on %s: interface %q does not exist (have %s); nothing changed",
				info.Name, l.Port, portRange(info))
		}
		if len(l.Name) > MaxNameBytes {
			return status.Errorf(codes.InvalidArgument, "Set rejected on %s: a profile name of %d bytes (%.40q...) is longer than the limit of %d; nothing changed",
				info.Name, len(l.Name), l.Name, MaxNameBytes)
		}
		if len(v.S) > MaxNameBytes {
			db, el := gnmipath.LeafPath(r.d, l)
			return status.Errorf(codes.InvalidArgument, "Set rejected on %s: %s%s is a string of %d bytes, longer than the limit of %d; nothing changed",
				info.Name, db, gnmipath.PathString(el), len(v.S), MaxNameBytes)
		}
		switch {
		case isECNProfileField(l.Field):
			ecn[l.Name] = true
		case isBufferProfileField(l.Field):
			buf[l.Name] = true
		}
	}
	for _, c := range []struct {
		what string
		n    int
	}{{"ECN (WRED) profiles", len(ecn)}, {"buffer profiles", len(buf)}} {
		if c.n > limit {
			return status.Errorf(codes.ResourceExhausted,
				"Set rejected on %s: it would leave %d %s, more than the limit of %d (%d per queue, %d ports x %d queues); delete unused ones first; nothing changed",
				info.Name, c.n, c.what, limit, ProfilesPerQueue, len(info.Ports), simenv.NumQueues)
		}
	}
	return nil
}

// portRange describes a switch's interfaces for messages.
func portRange(info simenv.SwitchInfo) string {
	switch len(info.Ports) {
	case 0:
		return "none"
	case 1:
		return info.Ports[0].Name
	}
	return info.Ports[0].Name + " .. " + info.Ports[len(info.Ports)-1].Name
}

// fieldSize is the encoded size of a length-delimited protobuf field of n
// bytes (field number below 16).
func fieldSize(n int) int { return 1 + protowire.SizeVarint(uint64(n)) + n }

// maxUpdateBytes bounds the encoded size of one update or delete that
// simswitch sends: a leaf path of at most a dozen elements whose names are
// fixed, whose keys are interface names, queue numbers or names of at most
// MaxNameBytes, and a scalar value (a string of at most MaxNameBytes).
const maxUpdateBytes = 2048

// sizeBound is a cheap upper bound of the encoded size of n as a message
// field, from its number of updates and deletes.
func sizeBound(n *gnmi.Notification) int {
	return (len(n.GetUpdate())+len(n.GetDelete()))*maxUpdateBytes + 1024
}

// splitNotification cuts n into notifications of the same timestamp and
// prefix, deletes first, each of whose SubscribeResponse encodes to at most
// limit bytes (an update larger than that alone goes alone, for the gRPC
// send limit to refuse). A notification that fits is returned as it is.
func splitNotification(n *gnmi.Notification, limit int) []*gnmi.Notification {
	const wrap = 8 // SubscribeResponse: the update field's tag and length
	if sizeBound(n) <= limit || n.GetAtomic() || fieldSize(proto.Size(n))+wrap <= limit {
		return []*gnmi.Notification{n}
	}
	empty := func() *gnmi.Notification {
		return &gnmi.Notification{Timestamp: n.GetTimestamp(), Prefix: n.GetPrefix()}
	}
	base := proto.Size(empty()) + 2*wrap
	var out []*gnmi.Notification
	cur, size := empty(), base
	room := func(s int) {
		if size+s > limit && len(cur.Update)+len(cur.Delete) > 0 {
			out = append(out, cur)
			cur, size = empty(), base
		}
		size += s
	}
	for _, d := range n.GetDelete() {
		room(fieldSize(proto.Size(d)))
		cur.Delete = append(cur.Delete, d)
	}
	for _, u := range n.GetUpdate() {
		room(fieldSize(proto.Size(u)))
		cur.Update = append(cur.Update, u)
	}
	if len(cur.Update)+len(cur.Delete) > 0 {
		out = append(out, cur)
	}
	return out
}
