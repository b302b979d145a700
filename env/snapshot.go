package env

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ecntune/ecntune/internal/units"
)

// Setting is the tunable state of one lossless egress queue and its PG.
type Setting struct {
	KminBytes     int64   `json:"kmin_bytes"`
	KmaxBytes     int64   `json:"kmax_bytes"`
	Pmax          float64 `json:"pmax"`                     // probability in (0, 1]
	HeadroomBytes int64   `json:"headroom_bytes,omitempty"` // 0: not managed / unknown
	// Alpha is the PG's dynamic-threshold factor: its XOFF threshold is
	// Alpha times the free shared buffer (SONiC's dynamic_th = log2
	// Alpha). 0: not managed / unknown.
	Alpha float64 `json:"alpha,omitempty"`
}

// Describe renders s's ECN knobs for reasons and logs, e.g.
// "kmin 150KB kmax 1.5MB pmax 10%" (headroom is left out).
func (s Setting) Describe() string {
	return "kmin " + units.FormatBytes(s.KminBytes) + " kmax " + units.FormatBytes(s.KmaxBytes) + " pmax " + FormatPmax(s.Pmax)
}

// ECN is s's ECN setting alone (Kmin, Kmax, Pmax), headroom and alpha
// left out: what eval's churn figures compare, as a bare policy decides it.
func (s Setting) ECN() Setting {
	return Setting{KminBytes: s.KminBytes, KmaxBytes: s.KmaxBytes, Pmax: s.Pmax}
}

// SameECN reports whether s and t mark alike: the same Kmin and Kmax, and
// Pmax within 1e-9 (headroom and alpha are not compared).
func (s Setting) SameECN(t Setting) bool {
	return s.KminBytes == t.KminBytes && s.KmaxBytes == t.KmaxBytes && math.Abs(s.Pmax-t.Pmax) <= 1e-9
}

// ScaledTo restates s, stated at units.RefRateBps (100 Gb/s), for a port
// of rateBps: Kmin and Kmax scale linearly with the rate
// (units.ScaleBytes); Pmax and headroom are kept. A rate that is not
// known (KnownRate) gives s unchanged. It is the one place a setting is
// scaled to a link rate.
func (s Setting) ScaledTo(rateBps float64) Setting {
	if !KnownRate(rateBps) {
		return s
	}
	s.KminBytes = units.ScaleBytes(s.KminBytes, rateBps)
	s.KmaxBytes = units.ScaleBytes(s.KmaxBytes, rateBps)
	return s
}

// FormatAlpha renders a dynamic-threshold factor, e.g. 0.125 → "1/8",
// 2 → "2", 0.3 → "0.3", 0 → "unknown".
func FormatAlpha(a float64) string {
	switch {
	case !(a > 0) || math.IsInf(a, 0):
		return "unknown"
	case a < 1 && math.Abs(1/a-math.Round(1/a)) < 1e-9:
		return "1/" + strconv.FormatFloat(math.Round(1/a), 'f', -1, 64)
	}
	return strconv.FormatFloat(a, 'g', 4, 64)
}

// KnownRate reports whether rateBps is a usable link rate: positive and
// finite (not 0, negative, NaN or infinite).
func KnownRate(rateBps float64) bool { return rateBps > 0 && !math.IsInf(rateBps, 0) }

// QueueKey names one egress queue of one switch.
type QueueKey struct {
	Target string `json:"target"` // switch name (gNMI target)
	Port   string `json:"port"`   // interface name, e.g. Ethernet0
	Queue  int    `json:"queue"`  // queue index = priority
}

func (k QueueKey) String() string {
	return k.Target + "/" + k.Port + "/q" + strconv.Itoa(k.Queue)
}

// ParseQueueKey reads a key as String writes it: TARGET/PORT/qN (a port
// name may hold slashes: Ethernet1/1).
func ParseQueueKey(s string) (QueueKey, error) {
	t, rest, ok := strings.Cut(s, "/")
	i := strings.LastIndex(rest, "/q")
	if !ok || t == "" || i <= 0 {
		return QueueKey{}, fmt.Errorf("queue %q: want TARGET/PORT/qN, e.g. leaf0/Ethernet0/q3", s)
	}
	q, err := strconv.Atoi(rest[i+2:])
	if err != nil || q < 0 {
		return QueueKey{}, fmt.Errorf("queue %q: %q is not a queue number (want TARGET/PORT/qN)", s, rest[i+2:])
	}
	return QueueKey{Target: t, Port: rest[:i], Queue: q}, nil
}

// Peer says what is at the other end of a queue's port: a host (an edge
// port, where the queue is the flows' last hop) or another switch (a fabric
// link, where the queue carries transit traffic). A switch learns it from
// LLDP or from its configuration; the agent takes it from the target's
// fabric_ports setting. The zero value is unknown.
type Peer string

// Peer kinds.
const (
	PeerUnknown Peer = ""
	PeerHost    Peer = "host"
	PeerSwitch  Peer = "switch"
)

// QueueSample is what a switch exports about one lossless egress queue at one
// instant: cumulative counters, queue depth figures, the PFC counters of the
// queue's priority on the same port, and the current setting.
type QueueSample struct {
	Key     QueueKey `json:"key"`
	RateBps float64  `json:"rate_bps"`
	Peer    Peer     `json:"peer,omitempty"` // what the port faces (PeerUnknown when not known)

	TxPkts      uint64 `json:"tx_pkts"`
	TxBytes     uint64 `json:"tx_bytes"`
	MarkedPkts  uint64 `json:"marked_pkts"`
	MarkedBytes uint64 `json:"marked_bytes"`
	DropPkts    uint64 `json:"drop_pkts"`
	DropBytes   uint64 `json:"drop_bytes"`

	CurQueueBytes int64   `json:"cur_queue_bytes"`
	MaxQueueBytes int64   `json:"max_queue_bytes"` // since previous sample (watermark)
	AvgQueueBytes float64 `json:"avg_queue_bytes"` // since previous sample

	PauseTx  uint64 `json:"pause_tx"`  // PFC frames sent on this port for this priority
	PauseRx  uint64 `json:"pause_rx"`  // PFC frames received
	PausedNs uint64 `json:"paused_ns"` // cumulative time this queue was held paused by the peer

	Setting          Setting `json:"setting"`
	XoffBytes        int64   `json:"xoff_bytes,omitempty"`         // current dynamic XOFF of the PG (0: unknown)
	MinHeadroomBytes int64   `json:"min_headroom_bytes,omitempty"` // computed lossless minimum (0: unknown)
	// FloorEstimated is true when MinHeadroomBytes is not the switch's own
	// but estimated by ecntune (LosslessFloor, from a cable length and
	// MTU): the switch's vendor may size its headroom by a tighter rule
	// (cell accounting, a smaller lossless MTU), so a headroom below the
	// estimate is reported, not raised, by the guard's repair and by
	// decisions that set a multiple of the floor (Observation.HeadroomAt).
	FloorEstimated bool  `json:"floor_estimated,omitempty"`
	BufferBytes    int64 `json:"buffer_bytes,omitempty"` // switch shared buffer (0: unknown)
	// HeadroomReported: the switch reports the PG's headroom, so a
	// Setting.HeadroomBytes of 0 is a headroom of 0 B, not "not reported".
	HeadroomReported bool `json:"headroom_reported,omitempty"`

	// Missing is the optional telemetry this queue's switch does not export
	// (its fields above are then zero and mean "not measured", not 0).
	Missing Telemetry `json:"missing,omitempty"`
}

// Snapshot is what one switch exports at one instant, restricted to the
// queues under control. TimeNs is the switch's timestamp in nanoseconds (sim
// time for the simulator, Unix time for a real switch).
type Snapshot struct {
	Target string        `json:"target"`
	TimeNs int64         `json:"time_ns"`
	Queues []QueueSample `json:"queues"`
}

// MTUBytes is the packet size below which an ECN threshold is suspect: a
// queue of a single full-size RoCE packet would already cross it.
const MTUBytes = 1500

// Warnings lists what looks wrong in s without being invalid: Kmin or
// Kmax below one MTU, usually a size given in KB read as bytes.
func (s Setting) Warnings() []string { return s.WarningsAt(MTUBytes, 0) }

// WarningsAt is Warnings for packets of frame bytes on the wire, and a
// switch buffer of buffer bytes (0: unknown): a threshold at or above the
// buffer is one no queue reaches (ECN never marks, or never at Pmax).
func (s Setting) WarningsAt(frame, buffer int64) []string {
	if frame <= 0 {
		frame = MTUBytes
	}
	var out []string
	for _, k := range []struct {
		name string
		v    int64
	}{{"kmin", s.KminBytes}, {"kmax", s.KmaxBytes}} {
		if k.v > 0 && k.v < frame {
			out = append(out, k.name+" "+units.FormatBytes(k.v)+" is below one MTU ("+units.FormatBytes(frame)+
				"): a queue of a single packet crosses it (was a size in KB meant?)")
		}
	}
	switch {
	case buffer > 0 && s.KminBytes >= buffer:
		out = append(out, "kmin "+units.FormatBytes(s.KminBytes)+" is not below the switch's buffer "+units.FormatBytes(buffer)+
			": no queue reaches it, ECN never marks")
	case buffer > 0 && s.KmaxBytes > buffer:
		out = append(out, "kmax "+units.FormatBytes(s.KmaxBytes)+" is above the switch's buffer "+units.FormatBytes(buffer)+
			": marking never reaches pmax")
	}
	return out
}

// DescribeChange names every knob that differs between from and to, e.g.
// "kmin 400KB→696.6KB, kmax 1.6MB→774KB, pmax 20%→1%, headroom
// 52.38KB→60KB" ("no change" when none differs). A knob that moves by
// less than the four significant digits show is written exactly
// ("kmin 3482571B→3482900B", "pmax 1.00001%→1.00002%"), not left out.
func DescribeChange(from, to Setting) string {
	var parts []string
	bytes := func(name string, a, b int64) {
		if a == b {
			return
		}
		fa, fb := units.FormatBytes(a), units.FormatBytes(b)
		if fa == fb {
			fa, fb = strconv.FormatInt(a, 10)+"B", strconv.FormatInt(b, 10)+"B"
		}
		parts = append(parts, name+" "+fa+"→"+fb)
	}
	bytes("kmin", from.KminBytes, to.KminBytes)
	bytes("kmax", from.KmaxBytes, to.KmaxBytes)
	if from.Pmax != to.Pmax {
		fa, fb := FormatPmax(from.Pmax), FormatPmax(to.Pmax)
		if fa == fb {
			fa = strconv.FormatFloat(from.Pmax*100, 'g', 12, 64) + "%"
			fb = strconv.FormatFloat(to.Pmax*100, 'g', 12, 64) + "%"
		}
		parts = append(parts, "pmax "+fa+"→"+fb)
	}
	if to.HeadroomBytes > 0 { // 0: headroom not managed
		bytes("headroom", from.HeadroomBytes, to.HeadroomBytes)
	}
	if to.Alpha > 0 && from.Alpha != to.Alpha { // 0: alpha not managed
		parts = append(parts, "alpha "+FormatAlpha(from.Alpha)+"→"+FormatAlpha(to.Alpha))
	}
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, ", ")
}
