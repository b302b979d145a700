package env

import "strings"

// Telemetry names optional telemetry a switch may or may not export for a
// queue. The basic queue counters (transmitted and dropped packets and
// bytes) are always required; everything here is optional, and a
// QueueSample says what its switch lacks in Missing. A device profile (see
// gnmipath) states which of these a kind of switch serves.
type Telemetry uint16

// Optional telemetry, one bit each.
const (
	TelMarkedPkts  Telemetry = 1 << iota // ECN-marked packets
	TelMarkedBytes                       // ECN-marked bytes
	TelMaxQueue                          // max (or watermark) queue length since the previous sample
	TelAvgQueue                          // average queue length since the previous sample
	TelCurQueue                          // instantaneous queue length
	TelPFCFrames                         // PFC frames sent and received for the queue's priority
	TelPausedTime                        // time the queue was held paused by its peer
	TelXoff                              // the PG's current XOFF threshold
	TelHeadroom                          // the PG's headroom and its computed lossless minimum
	TelBuffer                            // the switch's shared buffer size
	TelPortSpeed                         // the port's speed

	numTelemetry = iota
)

// AllTelemetry has every optional bit set.
const AllTelemetry Telemetry = 1<<numTelemetry - 1

var telemetryNames = [numTelemetry]string{
	"ECN-marked packets", "ECN-marked bytes", "max queue length", "avg queue length",
	"current queue length", "PFC frames", "PFC paused time", "XOFF threshold",
	"headroom", "shared buffer size", "port speed",
}

// Has reports whether every bit of u is set in t.
func (t Telemetry) Has(u Telemetry) bool { return t&u == u }

// Names lists the names of the bits set in t, in bit order.
func (t Telemetry) Names() []string {
	var out []string
	for i := 0; i < numTelemetry; i++ {
		if t&(1<<i) != 0 {
			out = append(out, telemetryNames[i])
		}
	}
	return out
}

// String joins Names with ", " ("" when none is set).
func (t Telemetry) String() string { return strings.Join(t.Names(), ", ") }

// DeviceProfile names one kind of switch and the optional telemetry it does
// not export: the one definition of both, which gnmipath's device profiles
// (what the switch serves on the wire) embed, and from which training and
// eval take a kind's feature set.
type DeviceProfile struct {
	Name    string
	Missing Telemetry
}

// The kinds of switch the agent knows.
var (
	// DeviceEcntune is the idealised switch: everything.
	DeviceEcntune = DeviceProfile{"ecntune", 0}
	// DeviceOpenConfig is openconfig-qos and -if-ethernet only: no PFC, no
	// current length, no buffer or headroom state.
	DeviceOpenConfig = DeviceProfile{"openconfig", TelPFCFrames | TelPausedTime | TelCurQueue | TelXoff | TelHeadroom | TelBuffer}
	// DeviceAristaEOS is Arista's supported OpenConfig paths: no marked
	// octets, no queue lengths; PFC frames and paused time from its
	// augments.
	DeviceAristaEOS = DeviceProfile{"arista-eos", TelMarkedBytes | TelMaxQueue | TelAvgQueue | TelCurQueue | TelXoff | TelHeadroom | TelBuffer}
	// DeviceSonic is sonic-gnmi: the periodic shared watermark as the max
	// queue, the current occupancy, no average; PFC frames and pause
	// duration per port; headroom is BUFFER_PROFILE's xoff (a knob, not
	// state: no floor); pool size from BUFFER_POOL.
	DeviceSonic = DeviceProfile{"sonic", TelAvgQueue | TelXoff | TelHeadroom}
	// DeviceEcntuneSonic is the idealised switch in SONiC's layout: no XOFF
	// or computed floor (headroom is the buffer profile's xoff).
	DeviceEcntuneSonic = DeviceProfile{"ecntune-sonic", TelXoff | TelHeadroom}
	// DeviceNokiaSRL is SR Linux's native qos: PFC frames but no paused
	// time; no queue lengths or marks in bytes; headroom per forwarding
	// complex only.
	DeviceNokiaSRL = DeviceProfile{"nokia-srl", TelMarkedBytes | TelAvgQueue | TelMaxQueue | TelCurQueue | TelPausedTime | TelXoff | TelHeadroom | TelBuffer}
)

// DeviceProfiles lists the kinds of switch the agent knows.
var DeviceProfiles = []DeviceProfile{DeviceEcntune, DeviceOpenConfig, DeviceAristaEOS, DeviceSonic, DeviceEcntuneSonic, DeviceNokiaSRL}

// DeviceTelemetry is the optional telemetry each kind of switch lacks, by
// name (DeviceProfiles as a map). Training drops the same features
// (feature dropout) so that one model serves every profile.
var DeviceTelemetry = func() map[string]Telemetry {
	m := make(map[string]Telemetry, len(DeviceProfiles))
	for _, d := range DeviceProfiles {
		m[d.Name] = d.Missing
	}
	return m
}()

// Mask makes q look as a switch lacking t exports it: the fields t names
// are zeroed and t is added to q.Missing (for training and evaluating a
// policy under a device profile's feature set).
func (t Telemetry) Mask(q *QueueSample) {
	if t == 0 {
		return
	}
	q.Missing |= t
	if t.Has(TelMarkedPkts) {
		q.MarkedPkts = 0
	}
	if t.Has(TelMarkedBytes) {
		q.MarkedBytes = 0
	}
	if t.Has(TelMaxQueue) {
		q.MaxQueueBytes = 0
	}
	if t.Has(TelAvgQueue) {
		q.AvgQueueBytes = 0
	}
	if t.Has(TelCurQueue) {
		q.CurQueueBytes = 0
	}
	if t.Has(TelPFCFrames) {
		q.PauseRx, q.PauseTx = 0, 0
	}
	if t.Has(TelPausedTime) {
		q.PausedNs = 0
	}
	if t.Has(TelXoff) {
		q.XoffBytes = 0
	}
	if t.Has(TelHeadroom) {
		q.MinHeadroomBytes = 0
	}
	if t.Has(TelBuffer) {
		q.BufferBytes = 0
	}
}

// Decidable reports whether a queue lacking m still shows congestion at
// all: ECN marks, a queue length or PFC frames. Without any of them a
// policy cannot tell a busy queue from an idle one, and holds.
func Decidable(m Telemetry) bool {
	return !m.Has(TelMarkedPkts|TelMarkedBytes) || !m.Has(TelMaxQueue|TelAvgQueue|TelCurQueue) || !m.Has(TelPFCFrames)
}
