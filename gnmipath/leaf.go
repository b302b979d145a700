package gnmipath

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/openconfig/gnmi/proto/gnmi"
)

// Dialect is a family of gNMI paths a switch speaks.
type Dialect string

const (
	// OpenConfig is openconfig-qos plus the PFC augment described in doc.go.
	OpenConfig Dialect = "openconfig"
	// Sonic is SONiC's CONFIG_DB / COUNTERS_DB as sonic-gnmi serves them.
	Sonic Dialect = "sonic"
)

// ParseDialect accepts "openconfig" or "sonic".
func ParseDialect(s string) (Dialect, error) {
	switch Dialect(strings.ToLower(strings.TrimSpace(s))) {
	case OpenConfig:
		return OpenConfig, nil
	case Sonic:
		return Sonic, nil
	}
	return "", fmt.Errorf("dialect %q is unknown (allowed: openconfig, sonic)", s)
}

// SONiC database names (prefix.target in sonic-gnmi requests).
const (
	ConfigDB   = "CONFIG_DB"
	CountersDB = "COUNTERS_DB"
)

// Field names one leaf kind, independent of dialect.
type Field uint8

// Leaf fields. Queue counters are per (port, queue); PFC fields per (port,
// priority); WRED fields per ECN profile; buffer-profile fields per SONiC
// BUFFER_PROFILE.
const (
	FieldNone Field = iota
	TxPkts
	TxBytes
	DropPkts
	DropBytes
	MarkedPkts
	MarkedBytes
	CurQueue
	MaxQueue
	AvgQueue
	PFCRxFrames
	PFCTxFrames
	PFCPaused // cumulative paused time (openconfig: ns; sonic: us)
	PFCXoff
	PFCMinHeadroom
	PFCHeadroomState
	PFCHeadroom // openconfig config leaf (settable)
	QueueProfile
	WREDMin
	WREDMax
	WREDProb
	WREDEnableECN // openconfig enable-ecn
	WREDGreenEnable
	WREDECNMode // sonic "ecn"
	WREDName    // openconfig queue-management-profile[name=N]/config/name (= N)
	PortSpeed
	BufferSize
	PGProfile // sonic BUFFER_PG|<port>|<pgs> profile
	BPSize
	BPXon
	BPXoff
	BPDynamicTh
	BPPool
	// openconfig-lldp neighbour state (read-only; see lldp.go): Port is the
	// interface, Name the neighbour id, Index (LLDPCapEnabled only) the
	// capability's position in LLDPCapabilities.
	LLDPSystemName
	LLDPPortID
	LLDPChassisID
	LLDPCapEnabled
	// PortAlias is a SONiC port's vendor alias (CONFIG_DB PORT|<name>
	// alias): sonic-gnmi's COUNTERS/Ethernet*/Queues and COUNTERS/Ethernet*
	// key ports by it. Read-only here.
	PortAlias
	// PortCable is a SONiC port's cable length in metres (CONFIG_DB
	// CABLE_LENGTH|<name>, one field per port: "40m"), what the switch's
	// buffer manager sized its lossless headroom for; PortMTU is its
	// PORT|<name> mtu. Read-only here: with them the decoder computes the
	// lossless floor a SONiC switch does not export (see Decoder.Snapshot).
	PortCable
	PortMTU
	numFields
)

// Leaf identifies one leaf of one switch in a dialect-independent way.
type Leaf struct {
	Field Field
	Port  string // interface name
	Index int    // queue / priority (PG for PFC fields; LLDP capability for LLDPCapEnabled)
	PGs   string // sonic BUFFER_PG key part after the port: "3" or "3-4"
	Name  string // profile name (WRED or buffer profile; LLDP neighbour id)
}

// IsConfig reports whether the leaf is configuration (ON_CHANGE, settable)
// rather than state.
func (f Field) IsConfig() bool {
	switch f {
	case PFCHeadroom, QueueProfile, WREDMin, WREDMax, WREDProb, WREDEnableECN, WREDGreenEnable, WREDECNMode, WREDName,
		PGProfile, BPSize, BPXon, BPXoff, BPDynamicTh, BPPool:
		return true
	}
	return false
}

// ErrUnknownPath marks a path that is not one of the leaves this package
// knows. Decoders skip such leaves; the server rejects Sets on them.
var ErrUnknownPath = errors.New("unknown path")

func unknown(elems []*gnmi.PathElem, why string) error {
	return fmt.Errorf("%w %s: %s", ErrUnknownPath, PathString(elems), why)
}

// ErrUnknownKey marks a leaf ecntune reads whose key it does not understand:
// a queue named by a class ("AF3") rather than an index, a priority outside
// 0..7, an interface without a name. Decoders skip such an element, count it
// by the shape of its path (KeyError.Shape) and use the rest of the update.
var ErrUnknownKey = errors.New("unknown key")

// KeyError is an ErrUnknownKey about one path: At is the element whose key
// (or name, for SONiC's keys-as-names) was not understood.
type KeyError struct {
	Path []*gnmi.PathElem
	At   int
	Why  string
}

func unknownKey(el []*gnmi.PathElem, at int, why string) error {
	return &KeyError{Path: el, At: at, Why: why}
}

func (e *KeyError) Error() string { return fmt.Sprintf("path %s: %s", PathString(e.Path), e.Why) }

// Is makes errors.Is(e, ErrUnknownKey) hold.
func (e *KeyError) Is(t error) bool { return t == ErrUnknownKey }

// Shape is the path up to the element not understood, with every key value
// written "*" and every run of digits in an element's name written "N", and
// "/..." for the elements after it: the queues 8 and 9 of every port (SONiC
// "COUNTERS/Ethernet*/Queues/etp1:8/SAI_QUEUE_STAT_BYTES") are one shape,
// "/COUNTERS/Ethernet*/Queues/etpN:N/...".
func (e *KeyError) Shape() string {
	var b strings.Builder
	for i, el := range e.Path {
		if i > e.At {
			b.WriteString("/...")
			break
		}
		b.WriteByte('/')
		for j, r := range el.GetName() {
			if r >= '0' && r <= '9' {
				if j == 0 || !isDigitByte(el.GetName()[j-1]) {
					b.WriteByte('N')
				}
				continue
			}
			b.WriteRune(r)
		}
		for _, k := range slices.Sorted(maps.Keys(el.GetKey())) {
			b.WriteString("[" + k + "=*]")
		}
	}
	return b.String()
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

// ---- openconfig ----

var ocQueueState = map[Field]string{
	TxPkts: "transmit-pkts", TxBytes: "transmit-octets", DropPkts: "dropped-pkts", DropBytes: "dropped-octets",
	MarkedPkts: "ecn-marked-pkts", MarkedBytes: "ecn-marked-octets", CurQueue: "current-queue-len",
	MaxQueue: "max-queue-len", AvgQueue: "avg-queue-len",
}
var ocPFCState = map[Field]string{
	PFCRxFrames: "in-frames", PFCTxFrames: "out-frames", PFCPaused: "paused-duration",
	PFCXoff: "xoff-threshold", PFCMinHeadroom: "min-headroom", PFCHeadroomState: "headroom",
}
var ocWRED = map[Field]string{
	WREDMin: "min-threshold", WREDMax: "max-threshold", WREDProb: "max-drop-probability-percent", WREDEnableECN: "enable-ecn",
}

// ---- sonic ----

var sonicQueueCounters = map[Field]string{
	TxPkts: "SAI_QUEUE_STAT_PACKETS", TxBytes: "SAI_QUEUE_STAT_BYTES",
	DropPkts: "SAI_QUEUE_STAT_DROPPED_PACKETS", DropBytes: "SAI_QUEUE_STAT_DROPPED_BYTES",
	MarkedPkts: "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS", MarkedBytes: "SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES",
	CurQueue: "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES", MaxQueue: "SAI_QUEUE_STAT_WATERMARK_BYTES",
	AvgQueue: "ECNTUNE_QUEUE_AVG_OCCUPANCY_BYTES",
}
var sonicWRED = map[Field]string{
	WREDMin: "green_min_threshold", WREDMax: "green_max_threshold", WREDProb: "green_drop_probability",
	WREDGreenEnable: "wred_green_enable", WREDECNMode: "ecn",
}
var sonicBP = map[Field]string{
	BPSize: "size", BPXon: "xon", BPXoff: "xoff", BPDynamicTh: "dynamic_th", BPPool: "pool",
}

func withAlias(m map[string]Field, name string, f Field) map[string]Field {
	m[name] = f
	return m
}

func invert(m map[Field]string) map[string]Field {
	out := make(map[string]Field, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// srlPFCStats are SR Linux's native PFC statistics leaves under
// /qos/interfaces/interface[interface-id]/pfc/statistics/pfc-priority[index].
var srlPFCStats = map[Field]string{PFCRxFrames: "pfc-pause-frames-received", PFCTxFrames: "pfc-pause-frames-generated"}

var (
	ocQueueStateByName       = invert(ocQueueState)
	ocPFCStateByName         = withAlias(invert(ocPFCState), "pfc-on-total-rx-time", PFCPaused)
	srlPFCStatsByName        = invert(srlPFCStats)
	ocWREDByName             = invert(ocWRED)
	sonicQueueCountersByName = invert(sonicQueueCounters)
	sonicWREDByName          = invert(sonicWRED)
	sonicBPByName            = invert(sonicBP)
)

// LosslessPool is the SONiC buffer pool whose size simswitch reports.
const LosslessPool = "ingress_lossless_pool"

// LeafPath returns the database (sonic only; "" for openconfig) and the
// path elements of a leaf, without any sonic namespace element.
func LeafPath(d Dialect, l Leaf) (db string, elems []*gnmi.PathElem) {
	if isLLDP(l.Field) {
		if d == Sonic {
			db = OCYang
		}
		return db, lldpLeafPath(l)
	}
	if d == Sonic {
		return sonicLeafPath(l)
	}
	return "", ocLeafPath(l)
}

func ocQueueBase(port string, q int) []*gnmi.PathElem {
	return []*gnmi.PathElem{elem("qos"), elem("interfaces"), elem("interface", "interface-id", port),
		elem("output"), elem("queues"), elem("queue", "name", strconv.Itoa(q))}
}

// ocProfileTable is the openconfig-qos WRED profile table,
// /qos/queue-management-profiles; ocProfileBase(N) is its entry N.
func ocProfileTable() []*gnmi.PathElem { return names("qos", "queue-management-profiles") }

func ocProfileBase(name string) []*gnmi.PathElem {
	return append(ocProfileTable(), elem("queue-management-profile", "name", name))
}

// isOCProfile reports whether path names n start with an entry of the
// profile table, followed by rest (either of config or state standing for
// "config").
func isOCProfile(n []string, rest ...string) bool {
	if len(n) != 3+len(rest) || n[0] != "qos" || n[1] != "queue-management-profiles" || n[2] != "queue-management-profile" {
		return false
	}
	for i, r := range rest {
		if m := n[3+i]; m != r && !(r == "config" && m == "state") {
			return false
		}
	}
	return true
}

func ocPFCBase(port string, prio int) []*gnmi.PathElem {
	return []*gnmi.PathElem{elem("interfaces"), elem("interface", "name", port), elem("ethernet"), elem("pfc"),
		elem("priorities"), elem("priority", "index", strconv.Itoa(prio))}
}

func ocLeafPath(l Leaf) []*gnmi.PathElem {
	switch l.Field {
	case QueueProfile:
		return join(ocQueueBase(l.Port, l.Index), names("config", "queue-management-profile"))
	case PFCHeadroom:
		return join(ocPFCBase(l.Port, l.Index), names("config", "headroom"))
	case PortSpeed:
		return []*gnmi.PathElem{elem("interfaces"), elem("interface", "name", l.Port), elem("ethernet"), elem("state"), elem("port-speed")}
	case BufferSize:
		return names("qos", "state", "shared-buffer-size")
	}
	if n, ok := ocQueueState[l.Field]; ok {
		return join(ocQueueBase(l.Port, l.Index), names("state", n))
	}
	if n, ok := ocPFCState[l.Field]; ok {
		return join(ocPFCBase(l.Port, l.Index), names("state", n))
	}
	if l.Field == WREDName {
		return join(ocProfileBase(l.Name), names("config", "name"))
	}
	if n, ok := ocWRED[l.Field]; ok {
		return join(ocProfileBase(l.Name), names("wred", "uniform", "config", n))
	}
	return nil
}

func sonicLeafPath(l Leaf) (string, []*gnmi.PathElem) {
	qi := strconv.Itoa(l.Index)
	switch l.Field {
	case QueueProfile:
		return ConfigDB, names("QUEUE", l.Port+"|"+qi, "wred_profile")
	case PortSpeed:
		return ConfigDB, names("PORT", l.Port, "speed")
	case PortMTU:
		return ConfigDB, names("PORT", l.Port, "mtu")
	case PortCable:
		return ConfigDB, names("CABLE_LENGTH", l.Name, l.Port)
	case BufferSize:
		return ConfigDB, names("BUFFER_POOL", LosslessPool, "size")
	case PGProfile:
		return ConfigDB, names("BUFFER_PG", l.Port+"|"+l.PGs, "profile")
	case PFCRxFrames:
		return CountersDB, names("COUNTERS", l.Port, "SAI_PORT_STAT_PFC_"+qi+"_RX_PKTS")
	case PFCTxFrames:
		return CountersDB, names("COUNTERS", l.Port, "SAI_PORT_STAT_PFC_"+qi+"_TX_PKTS")
	case PFCPaused:
		return CountersDB, names("COUNTERS", l.Port, "SAI_PORT_STAT_PFC_"+qi+"_RX_PAUSE_DURATION_US")
	}
	if n, ok := sonicQueueCounters[l.Field]; ok {
		return CountersDB, names("COUNTERS", l.Port+":"+qi, n)
	}
	if n, ok := sonicWRED[l.Field]; ok {
		return ConfigDB, names("WRED_PROFILE", l.Name, n)
	}
	if n, ok := sonicBP[l.Field]; ok {
		return ConfigDB, names("BUFFER_PROFILE", l.Name, n)
	}
	return "", nil
}

// MaxQueueIndex is the largest queue index the decoder takes from a
// switch. Platforms number their queues 0..7, 0..9 (SONiC: 0-7 unicast,
// 8-9 multicast) or up to 0..19 and beyond; only the configured queues are
// controlled, the others are read and left alone.
const MaxQueueIndex = 1023

// atoiIndex reads a priority (PFC priority, priority group) 0..7.
func atoiIndex(s, what string) (int, error) {
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i > 7 {
		return 0, fmt.Errorf("%s %q is not a priority index 0..7", what, s)
	}
	return i, nil
}

// queueIndex reads a queue index 0..MaxQueueIndex.
func queueIndex(s, what string) (int, error) {
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i > MaxQueueIndex {
		return 0, fmt.Errorf("%s %q is not a queue index 0..%d", what, s, MaxQueueIndex)
	}
	return i, nil
}

// ParseLeaf identifies a leaf from its full path elements (sonic: the
// database and the elements after any namespace). Unknown paths give an
// error wrapping ErrUnknownPath; known paths with bad keys give other errors.
func ParseLeaf(d Dialect, db string, el []*gnmi.PathElem) (Leaf, error) {
	n := make([]string, len(el))
	for i, e := range el {
		if d == Sonic {
			n[i] = e.GetName()
		} else {
			n[i] = stripModule(e.GetName())
		}
	}
	if d == Sonic {
		return parseSonic(db, el, n)
	}
	key := func(i int, k string) string { return el[i].GetKey()[k] }
	switch {
	case len(n) == 8 && n[0] == "qos" && n[1] == "interfaces" && n[2] == "interface" && n[3] == "output" &&
		n[4] == "queues" && n[5] == "queue":
		return parseOCQueue(el, n)
	case len(n) == 8 && n[0] == "interfaces" && n[1] == "interface" && n[2] == "ethernet" && n[3] == "pfc" &&
		n[4] == "priorities" && n[5] == "priority":
		return parseOCPriority(el, n)
	case len(n) == 7 && n[0] == "qos" && n[1] == "interfaces" && n[2] == "interface" && n[3] == "pfc" &&
		n[4] == "statistics" && n[5] == "pfc-priority":
		return parseSRLPFCStats(el, n)
	case len(n) == 5 && n[0] == "interfaces" && n[1] == "interface" && n[2] == "ethernet" && n[3] == "state" && n[4] == "port-speed":
		if key(1, "name") == "" {
			return Leaf{}, unknownKey(el, 1, "need an interface name")
		}
		return Leaf{Field: PortSpeed, Port: key(1, "name")}, nil
	case len(n) == 7 && isOCProfile(n, "wred", "uniform", "config", n[6]):
		name := key(2, "name")
		if name == "" || name == "*" {
			return Leaf{}, unknownKey(el, 2, "need a queue-management-profile name")
		}
		if f, ok := ocWREDByName[n[6]]; ok {
			return Leaf{Field: f, Name: name}, nil
		}
	case isOCProfile(n, "config", "name"):
		name := key(2, "name")
		if name == "" || name == "*" {
			return Leaf{}, unknownKey(el, 2, "need a queue-management-profile name")
		}
		return Leaf{Field: WREDName, Name: name}, nil
	case len(n) == 3 && n[0] == "qos" && n[1] == "state" && n[2] == "shared-buffer-size":
		return Leaf{Field: BufferSize}, nil
	}
	return Leaf{}, notOCLeaf(el)
}

// notOCLeaf is ParseLeaf's error for a path no openconfig leaf has.
func notOCLeaf(el []*gnmi.PathElem) error { return unknown(el, "not an ecntune openconfig leaf") }

// parseOCQueue reads a leaf of an output queue (qos/interfaces/interface/
// output/queues/queue/{config,state}/...): its profile binding or a
// counter.
func parseOCQueue(el []*gnmi.PathElem, n []string) (Leaf, error) {
	port, qs := el[2].GetKey()["interface-id"], el[5].GetKey()["name"]
	if port == "" {
		return Leaf{}, unknownKey(el, 2, "need an interface-id")
	}
	q, err := queueIndex(qs, "queue name")
	if err != nil {
		return Leaf{}, unknownKey(el, 5, err.Error()+" (a queue the switch names otherwise is read with the target's queue-names)")
	}
	if (n[6] == "config" || n[6] == "state") && n[7] == "queue-management-profile" {
		return Leaf{Field: QueueProfile, Port: port, Index: q}, nil
	}
	if f, ok := ocQueueStateByName[n[7]]; ok && n[6] == "state" {
		return Leaf{Field: f, Port: port, Index: q}, nil
	}
	return Leaf{}, notOCLeaf(el)
}

// parseOCPriority reads a leaf of a port's PFC priority
// (interfaces/interface/ethernet/pfc/priorities/priority/...): its
// headroom or a PFC counter.
func parseOCPriority(el []*gnmi.PathElem, n []string) (Leaf, error) {
	port := el[1].GetKey()["name"]
	if port == "" {
		return Leaf{}, unknownKey(el, 1, "need an interface name")
	}
	p, err := atoiIndex(el[5].GetKey()["index"], "priority index")
	if err != nil {
		return Leaf{}, unknownKey(el, 5, err.Error())
	}
	if n[6] == "config" && n[7] == "headroom" {
		return Leaf{Field: PFCHeadroom, Port: port, Index: p}, nil
	}
	if f, ok := ocPFCStateByName[n[7]]; ok && n[6] == "state" {
		return Leaf{Field: f, Port: port, Index: p}, nil
	}
	return Leaf{}, notOCLeaf(el)
}

// parseSRLPFCStats reads a Nokia SR Linux PFC counter
// (qos/interfaces/interface/pfc/statistics/pfc-priority/...).
func parseSRLPFCStats(el []*gnmi.PathElem, n []string) (Leaf, error) {
	port := el[2].GetKey()["interface-id"]
	if port == "" {
		return Leaf{}, unknownKey(el, 2, "need an interface-id")
	}
	p, err := atoiIndex(el[5].GetKey()["index"], "pfc-priority index")
	if err != nil {
		return Leaf{}, unknownKey(el, 5, err.Error())
	}
	if f, ok := srlPFCStatsByName[n[6]]; ok {
		return Leaf{Field: f, Port: port, Index: p}, nil
	}
	return Leaf{}, notOCLeaf(el)
}

// parseSonic is ParseLeaf for the sonic dialect: TABLE/KEY/FIELD of
// CONFIG_DB or COUNTERS_DB, or a COUNTERS_DB virtual path.
func parseSonic(db string, el []*gnmi.PathElem, n []string) (Leaf, error) {
	if db == CountersDB && len(n) >= 4 && n[0] == "COUNTERS" {
		return parseSonicVirtual(el, n)
	}
	if len(n) != 3 {
		return Leaf{}, unknown(el, "want TABLE/KEY/FIELD")
	}
	table, k, field := n[0], n[1], n[2]
	switch db {
	case CountersDB:
		if table == "COUNTERS" {
			return parseSonicCounter(el, k, field)
		}
	case ConfigDB:
		return parseSonicConfig(el, table, k, field)
	default:
		return Leaf{}, unknown(el, fmt.Sprintf("database %q is not %s or %s", db, ConfigDB, CountersDB))
	}
	return Leaf{}, unknown(el, "not an ecntune "+db+" leaf")
}

// parseSonicCounter reads COUNTERS_DB COUNTERS/KEY/FIELD: a queue counter
// (KEY <port>:<queue>) or a port's PFC counter (KEY <port>).
func parseSonicCounter(el []*gnmi.PathElem, k, field string) (Leaf, error) {
	if i := strings.LastIndex(k, ":"); i > 0 {
		q, err := queueIndex(k[i+1:], "queue")
		if err != nil {
			return Leaf{}, unknownKey(el, 1, err.Error())
		}
		if f, ok := sonicQueueCountersByName[field]; ok {
			return Leaf{Field: f, Port: k[:i], Index: q}, nil
		}
	} else if rest, ok := strings.CutPrefix(field, "SAI_PORT_STAT_PFC_"); ok {
		if us := strings.Index(rest, "_"); us > 0 {
			p, err := atoiIndex(rest[:us], "PFC priority")
			if err != nil {
				return Leaf{}, unknownKey(el, 2, err.Error())
			}
			switch rest[us+1:] {
			case "RX_PKTS":
				return Leaf{Field: PFCRxFrames, Port: k, Index: p}, nil
			case "TX_PKTS":
				return Leaf{Field: PFCTxFrames, Port: k, Index: p}, nil
			case "RX_PAUSE_DURATION_US":
				return Leaf{Field: PFCPaused, Port: k, Index: p}, nil
			}
		}
	}
	return Leaf{}, unknown(el, "not an ecntune "+CountersDB+" leaf")
}

// parseSonicConfig reads CONFIG_DB TABLE/KEY/FIELD.
func parseSonicConfig(el []*gnmi.PathElem, table, k, field string) (Leaf, error) {
	switch table {
	case "WRED_PROFILE":
		if f, ok := sonicWREDByName[field]; ok {
			return Leaf{Field: f, Name: k}, nil
		}
	case "BUFFER_PROFILE":
		if f, ok := sonicBPByName[field]; ok {
			return Leaf{Field: f, Name: k}, nil
		}
	case "QUEUE":
		port, qs, ok := strings.Cut(k, "|")
		if !ok || field != "wred_profile" {
			break
		}
		q, err := queueIndex(qs, "queue")
		if err != nil {
			return Leaf{}, unknownKey(el, 1, err.Error()+" (ranges such as 3-4 are not supported for QUEUE keys)")
		}
		return Leaf{Field: QueueProfile, Port: port, Index: q}, nil
	case "BUFFER_PG":
		port, pgs, ok := strings.Cut(k, "|")
		if !ok || field != "profile" {
			break
		}
		if _, _, err := pgRange(pgs); err != nil {
			return Leaf{}, unknownKey(el, 1, err.Error())
		}
		return Leaf{Field: PGProfile, Port: port, PGs: pgs}, nil
	case "PORT":
		switch field {
		case "speed":
			return Leaf{Field: PortSpeed, Port: k}, nil
		case "alias":
			return Leaf{Field: PortAlias, Port: k}, nil
		case "mtu":
			return Leaf{Field: PortMTU, Port: k}, nil
		}
	case "CABLE_LENGTH":
		// One entry (SONiC names it AZURE) whose fields are the ports.
		return Leaf{Field: PortCable, Port: field, Name: k}, nil
	case "BUFFER_POOL":
		if k == LosslessPool && field == "size" {
			return Leaf{Field: BufferSize}, nil
		}
	}
	return Leaf{}, unknown(el, "not an ecntune "+ConfigDB+" leaf")
}

// parseSonicVirtual reads the leaves of sonic-gnmi's virtual COUNTERS
// paths, as their JSON values flatten:
//
//	COUNTERS/<port|Ethernet*>/Queues/<p>:<q>/SAI_QUEUE_STAT_*           queue counters
//	COUNTERS/<port|Ethernet*>/Queues/<p>:<q>:periodic/SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES
//	COUNTERS/Ethernet*/<p>/SAI_PORT_STAT_*                               port counters (PFC)
//
// where <p> is the port's name, or its alias when the request named every
// port (the decoder maps aliases back to names with CONFIG_DB PORT|*
// alias). The watermark is the shared-buffer watermark of the periodic
// watermark table (the largest occupancy in its period).
func parseSonicVirtual(el []*gnmi.PathElem, n []string) (Leaf, error) {
	if len(n) == 5 && n[2] == "Queues" {
		k, field := n[3], n[4]
		periodic := false
		if rest, ok := strings.CutSuffix(k, ":periodic"); ok {
			k, periodic = rest, true
		}
		i := strings.LastIndex(k, ":")
		if i <= 0 {
			return Leaf{}, unknownKey(el, 3, fmt.Sprintf("queue key %q is not <port>:<queue>", n[3]))
		}
		q, err := queueIndex(k[i+1:], "queue")
		if err != nil {
			return Leaf{}, unknownKey(el, 3, err.Error())
		}
		port := k[:i]
		switch {
		case periodic && field == "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES":
			return Leaf{Field: MaxQueue, Port: port, Index: q}, nil
		case periodic:
		case field == "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES":
			return Leaf{Field: MaxQueue, Port: port, Index: q}, nil
		default:
			if f, ok := sonicQueueCountersByName[field]; ok && f != AvgQueue {
				return Leaf{Field: f, Port: port, Index: q}, nil
			}
		}
		return Leaf{}, unknown(el, "not a queue counter ecntune reads")
	}
	if len(n) == 4 {
		return parseSonicPortStat(el, n[2], n[3])
	}
	return Leaf{}, unknown(el, "not a COUNTERS virtual path ecntune reads")
}

// parseSonicPortStat reads a port counter: PFC frames and pause duration.
func parseSonicPortStat(el []*gnmi.PathElem, port, field string) (Leaf, error) {
	rest, ok := strings.CutPrefix(field, "SAI_PORT_STAT_PFC_")
	us := strings.Index(rest, "_")
	if !ok || us <= 0 {
		return Leaf{}, unknown(el, "not a PFC counter")
	}
	p, err := atoiIndex(rest[:us], "PFC priority")
	if err != nil {
		return Leaf{}, unknownKey(el, len(el)-1, err.Error())
	}
	switch rest[us+1:] {
	case "RX_PKTS":
		return Leaf{Field: PFCRxFrames, Port: port, Index: p}, nil
	case "TX_PKTS":
		return Leaf{Field: PFCTxFrames, Port: port, Index: p}, nil
	case "RX_PAUSE_DURATION_US":
		return Leaf{Field: PFCPaused, Port: port, Index: p}, nil
	}
	return Leaf{}, unknown(el, "not a PFC counter ecntune reads")
}

// pgRange parses a SONiC PG list "3" or "3-4".
func pgRange(s string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err = atoiIndex(a, "PG")
	if err != nil {
		return 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = atoiIndex(b, "PG"); err != nil {
			return 0, 0, err
		}
		if hi < lo {
			return 0, 0, fmt.Errorf("PG range %q is reversed", s)
		}
	}
	return lo, hi, nil
}
