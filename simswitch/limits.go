package simswitch

import (
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Bounds on what a client can make the server hold or send (see doc.go,
// Limits, and Config.MaxMsgBytes, MaxPaths and MaxSetOps).

// fieldSize is the encoded size of a length-delimited protobuf field of n
// bytes (field number below 16).
func fieldSize(n int) int { return 1 + protowire.SizeVarint(uint64(n)) + n }

// maxUpdateBytes bounds the encoded size of one update or delete that
// simswitch sends: a leaf path of at most a dozen elements whose names are
// fixed, whose keys are interface names, queue numbers or profile names, and
// a scalar value.
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
