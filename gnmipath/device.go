package gnmipath

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// HeadroomMode says whether and how a kind of switch lets a client set the
// PFC headroom of a lossless PG.
type HeadroomMode uint8

// Headroom modes.
const (
	// HeadroomNone: no settable per-PG headroom (read-only state, a
	// per-forwarding-complex reservation, or nothing at all). The agent
	// tunes ECN only and says so.
	HeadroomNone HeadroomMode = iota
	// HeadroomLeaf: ecntune's extension leaf
	// /interfaces/interface[name]/ethernet/pfc/priorities/priority[index]/config/headroom.
	HeadroomLeaf
	// HeadroomBufferProfile: SONiC's BUFFER_PROFILE xoff/size fields of
	// the PG's profile (static buffer model).
	HeadroomBufferProfile
)

func (m HeadroomMode) String() string {
	switch m {
	case HeadroomLeaf:
		return "pfc priority config/headroom"
	case HeadroomBufferProfile:
		return "BUFFER_PROFILE xoff/size"
	}
	return "not settable"
}

// PFCModel says where a kind of switch serves its per-priority PFC
// statistics.
type PFCModel uint8

// PFC models.
const (
	// PFCNone: no PFC statistics.
	PFCNone PFCModel = iota
	// PFCEthernetAugment: /interfaces/interface[name]/ethernet/pfc/
	// priorities/priority[index]/state/{in-frames,out-frames} (Arista's
	// read-only augment of openconfig-if-ethernet, which ecntune's
	// extension leaves join).
	PFCEthernetAugment
	// PFCSRLinux: SR Linux's native
	// /qos/interfaces/interface[interface-id]/pfc/statistics/pfc-priority[index]/
	// {pfc-pause-frames-received,pfc-pause-frames-generated}.
	PFCSRLinux
	// PFCSonic: SONiC COUNTERS_DB per-port SAI_PORT_STAT_PFC_n_* fields.
	PFCSonic
)

// Device is what one kind of switch serves and accepts over gNMI: which
// telemetry exists and where, which knobs are settable and how, the
// origin to address it with, and its limits. The agent subscribes, decodes
// and writes by its target's Device; simswitch --device imitates one.
// The table and its sources are in PROFILES.md beside this file.
type Device struct {
	// DeviceProfile is the kind of switch: its name and the optional
	// telemetry it does not export (Missing), defined once in env.
	env.DeviceProfile
	// NoLLDPCapabilities: the neighbours' system capabilities
	// (.../capabilities/capability[name]/state/enabled) are not served
	// (Arista EOS marks them not supported): a neighbour is known for a
	// switch only by its name, as one of the agent's targets.
	NoLLDPCapabilities bool
	Dialect            Dialect // family of paths (openconfig-style trees or SONiC's databases)
	// Origin is set explicitly on every path of the openconfig family
	// (gNMI §2.7.1: an empty origin means openconfig, but some servers
	// want it written). NativeOrigin addresses vendor-native paths
	// (SR Linux's PFC statistics).
	Origin       string
	NativeOrigin string
	PFC          PFCModel
	Paused       string // leaf name of cumulative paused time under the PFC priority state ("" none)
	Headroom     HeadroomMode
	// Extensions: ecntune's own leaves (current-queue-len, XOFF, minimum
	// headroom, shared buffer size) are served.
	Extensions bool
	// MinSample is the shortest sample interval the server accepts (0:
	// any).
	MinSample time.Duration
	// Get: the server answers Get (read-back uses it; without it the
	// agent reads back from its ON_CHANGE subscription).
	Get bool
	// RealSonic: COUNTERS_DB is read through sonic-gnmi's virtual paths
	// (COUNTERS/Ethernet*/Queues, COUNTERS/Ethernet*) and the namespace
	// goes in prefix.target ("COUNTERS_DB/asic0"), as sonic-gnmi serves
	// them; otherwise ecntune's idealised layout.
	RealSonic bool
	// OneSubscribePerConn: the server serves one Subscribe RPC per
	// connection, closing the older one when a second opens (sonic-gnmi
	// keys its subscribe clients by the peer's address unless it runs with
	// --enable_stream_multiplexing, off by default and absent from older
	// releases: gnmi_server/server.go, Client.Key in client_subscribe.go).
	// The agent gives each Subscribe a gRPC connection of its own.
	OneSubscribePerConn bool
	// CommitConfirmed: the server implements gNMI's commit confirmed
	// extension (commit.go); a target opts in with commit-confirmed.
	CommitConfirmed bool
	// Summary is one line for logs and PROFILES.md.
	Summary string
}

// Has reports whether the device serves every bit of t.
func (d *Device) Has(t env.Telemetry) bool { return d.Missing&t == 0 }

// Devices are the kinds of switch ecntune knows, by name.
var Devices = map[string]*Device{
	"ecntune": {
		DeviceProfile: env.DeviceEcntune, Dialect: OpenConfig, Origin: "openconfig",
		PFC: PFCEthernetAugment, Paused: "paused-duration", Headroom: HeadroomLeaf, Extensions: true, Get: true, CommitConfirmed: true,
		Summary: "ecntune's idealised switch: openconfig-qos plus the PFC augment and ecntune's extension leaves",
	},
	"openconfig": {
		DeviceProfile: env.DeviceOpenConfig, Dialect: OpenConfig, Origin: "openconfig",
		PFC: PFCNone, Headroom: HeadroomNone, Get: true,
		Summary: "the official openconfig-qos, -interfaces and -if-ethernet models only (no PFC, no buffer state)",
	},
	"arista-eos": {
		DeviceProfile: env.DeviceAristaEOS, Dialect: OpenConfig, Origin: "openconfig",
		PFC: PFCEthernetAugment, Paused: "pfc-on-total-rx-time", Headroom: HeadroomNone, Get: true, NoLLDPCapabilities: true,
		Summary: "Arista EOS's supported OpenConfig paths: PFC frames and paused time from its augments; no marked octets, no queue lengths, no LLDP capabilities; headroom read-only",
	},
	"nokia-srl": {
		DeviceProfile: env.DeviceNokiaSRL, Dialect: OpenConfig, Origin: "openconfig", NativeOrigin: "srl_nokia",
		PFC: PFCSRLinux, Headroom: HeadroomNone, Get: true,
		Summary: "Nokia SR Linux: queues and WRED through openconfig-qos, PFC frames from native srl_nokia-qos; headroom per forwarding complex, not per PG",
	},
	"sonic": {
		DeviceProfile: env.DeviceSonic, Dialect: Sonic, Origin: "sonic-db", RealSonic: true, OneSubscribePerConn: true,
		PFC: PFCSonic, Paused: "RX_PAUSE_DURATION_US", Headroom: HeadroomBufferProfile, MinSample: time.Second, Get: true,
		Summary: "SONiC as sonic-gnmi serves it: COUNTERS_DB through its virtual paths (queues keyed by port alias, periodic watermarks), CONFIG_DB written field by field",
	},
	"ecntune-sonic": {
		DeviceProfile: env.DeviceEcntuneSonic, Dialect: Sonic, Origin: "sonic-db",
		PFC: PFCSonic, Paused: "RX_PAUSE_DURATION_US", Headroom: HeadroomBufferProfile, Extensions: true, Get: true, CommitConfirmed: true,
		Summary: "ecntune's idealised switch in SONiC's database layout (COUNTERS keyed <port>:<queue>, an average-occupancy extension)",
	},
}

// DeviceNames lists the known device names, sorted.
func DeviceNames() []string {
	out := make([]string, 0, len(Devices))
	for n := range Devices {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// LookupDevice returns the device called name (case-insensitive).
func LookupDevice(name string) (*Device, error) {
	if d, ok := Devices[strings.ToLower(strings.TrimSpace(name))]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("device %q is unknown (allowed: %s)", name, strings.Join(DeviceNames(), ", "))
}

// DefaultDevice is the device of a dialect when a target names none and
// none can be inferred: the idealised switch (what simswitch serves by
// default), in the dialect's layout.
func DefaultDevice(dl Dialect) *Device {
	if dl == Sonic {
		return Devices["ecntune-sonic"]
	}
	return Devices["ecntune"]
}

// InferDevice picks the device from the model names a server lists in its
// Capabilities answer, and says why. Vendor model prefixes decide
// (arista-, srl_nokia-, sonic-); ecntune's extension model marks the
// idealised switch; anything else with openconfig-qos is plain openconfig.
func InferDevice(models []string) (*Device, string) {
	has := func(prefix string) string {
		for _, m := range models {
			if strings.HasPrefix(m, prefix) {
				return m
			}
		}
		return ""
	}
	switch {
	case has(ExtensionModel) != "" && has("sonic-") != "":
		return Devices["ecntune-sonic"], "server lists models " + ExtensionModel + " and " + has("sonic-")
	case has(ExtensionModel) != "":
		return Devices["ecntune"], "server lists model " + ExtensionModel
	case has("sonic-") != "":
		return Devices["sonic"], "server lists model " + has("sonic-")
	case has("arista-") != "":
		return Devices["arista-eos"], "server lists model " + has("arista-")
	case has("srl_nokia-") != "":
		return Devices["nokia-srl"], "server lists model " + has("srl_nokia-")
	case has("openconfig-qos") != "":
		return Devices["openconfig"], "server lists openconfig-qos and no vendor model ecntune knows"
	}
	return Devices["openconfig"], fmt.Sprintf("no model ecntune knows among %d listed; assuming plain openconfig", len(models))
}

// ExtensionModel is the model name simswitch's idealised switch lists for
// ecntune's extension leaves.
const ExtensionModel = "ecntune-qos-ext"

// telemetryOf is the optional telemetry a state field carries (0: a basic
// counter or not telemetry).
func telemetryOf(f Field) env.Telemetry {
	switch f {
	case MarkedPkts:
		return env.TelMarkedPkts
	case MarkedBytes:
		return env.TelMarkedBytes
	case MaxQueue:
		return env.TelMaxQueue
	case AvgQueue:
		return env.TelAvgQueue
	case CurQueue:
		return env.TelCurQueue
	case PFCRxFrames, PFCTxFrames:
		return env.TelPFCFrames
	case PFCPaused:
		return env.TelPausedTime
	case PFCXoff:
		return env.TelXoff
	case PFCMinHeadroom, PFCHeadroomState:
		return env.TelHeadroom
	case BufferSize:
		return env.TelBuffer
	case PortSpeed:
		return env.TelPortSpeed
	}
	return 0
}

// Serves reports whether the device serves state field f.
func (d *Device) Serves(f Field) bool {
	if t := telemetryOf(f); t != 0 && !d.Has(t) {
		return false
	}
	switch f {
	case PFCRxFrames, PFCTxFrames:
		return d.PFC != PFCNone
	case PFCPaused:
		return d.PFC != PFCNone && d.Paused != ""
	case PFCXoff, PFCMinHeadroom, PFCHeadroomState, CurQueue, BufferSize:
		return d.Extensions || d.Dialect == Sonic
	}
	return true
}

// StateFields lists the per-queue state fields the device serves, queue
// counters first, then PFC.
func (d *Device) StateFields() []Field {
	var out []Field
	for _, f := range []Field{TxPkts, TxBytes, DropPkts, DropBytes, MarkedPkts, MarkedBytes, CurQueue, MaxQueue, AvgQueue,
		PFCRxFrames, PFCTxFrames, PFCPaused, PFCXoff, PFCMinHeadroom, PFCHeadroomState} {
		if d.Dialect == Sonic && (f == PFCXoff || f == PFCMinHeadroom || f == PFCHeadroomState) {
			continue // sonic carries these as buffer profiles, not state leaves
		}
		if d.Serves(f) {
			out = append(out, f)
		}
	}
	return out
}

// LeafPath returns where the device serves leaf l: the database (sonic;
// for openconfig-family devices the origin of a vendor-native leaf, ""
// for openconfig ones), the elements and the origin. el is nil for a leaf it does not serve.
func (d *Device) LeafPath(l Leaf) (db string, el []*gnmi.PathElem, origin string) {
	if telemetryOf(l.Field) != 0 && l.Field != PortSpeed && !d.Serves(l.Field) {
		return "", nil, ""
	}
	if d.Dialect == Sonic {
		db, el = LeafPath(Sonic, l)
		return db, el, ""
	}
	if l.Field == PFCHeadroom && d.Headroom != HeadroomLeaf {
		return "", nil, ""
	}
	switch {
	case d.PFC == PFCSRLinux && (l.Field == PFCRxFrames || l.Field == PFCTxFrames):
		// Native leaves: their origin doubles as their "database", so
		// that a server matches them only under that origin.
		return d.NativeOrigin, join(srlPFCBase(l.Port, l.Index), names(srlPFCStats[l.Field])), d.NativeOrigin
	case l.Field == PFCPaused:
		return "", join(ocPFCBase(l.Port, l.Index), names("state", d.Paused)), d.Origin
	}
	_, el = LeafPath(OpenConfig, l)
	return "", el, d.Origin
}

func srlPFCBase(port string, prio int) []*gnmi.PathElem {
	return []*gnmi.PathElem{elem("qos"), elem("interfaces"), elem("interface", "interface-id", port), elem("pfc"),
		elem("statistics"), elem("pfc-priority", "index", strconv.Itoa(prio))}
}

// CheckWrite says whether the device accepts a write of leaf l. unknown
// is true when the path is outside its schema (gNMI NOT_FOUND); otherwise
// a non-nil error means the leaf exists but is read-only there.
func (d *Device) CheckWrite(l Leaf) (unknown bool, err error) {
	if l.Field == PFCHeadroom && d.Dialect != Sonic && d.Headroom != HeadroomLeaf {
		if d.Name == "arista-eos" {
			return false, fmt.Errorf("PFC headroom is read-only state on %s", d.Name)
		}
		return true, fmt.Errorf("%s has no settable per-PG headroom leaf", d.Name)
	}
	return false, nil
}

// Strict reports whether the device validates a Set against its schema
// the way a ygot-based server does: a list entry is created only with its
// key leaf, and a queue's profile reference must name an existing
// profile. ecntune's idealised switch is lenient.
func (d *Device) Strict() bool { return !d.Extensions && d.Dialect != Sonic }
