package config

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/internal/safeio"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/policy"
)

// Mode selects what the agent does with a decision.
type Mode string

const (
	ModeShadow     Mode = "shadow"      // record recommendations, never Set
	ModeClosedLoop Mode = "closed-loop" // guard, journal, Set, read back
)

// Dialects of gNMI paths a target speaks.
const (
	DialectOpenConfig = "openconfig"
	DialectSONiC      = "sonic"
)

// Per-queue series bounds (Config.MetricsQueues; see METRICS.md).
const (
	// DefaultMetricsQueues is how many queues get per-queue series when
	// the configuration does not say: the most congested each interval.
	DefaultMetricsQueues = 20
	// MaxMetricsQueues is the most a number in metrics-queues may ask for
	// (all is not bounded).
	MaxMetricsQueues = 1000
	// AllQueues gives every queue its per-queue series.
	AllQueues = -1
)

// HealthStaleIntervals is how many control intervals a target's telemetry
// may be old before the agent calls itself unhealthy (/healthz fails).
const HealthStaleIntervals = 3

// Config is the agent's configuration file, after parsing and defaults.
type Config struct {
	Mode Mode
	// Approve (closed loop only): a tune or fallback is applied only once
	// an operator approved it (ecntune agent approve, POST /approve);
	// safety changes (rollback, repair, revert) never wait.
	Approve        bool
	Policy         string // builtin[:prefer=P] | model:NAME[:prefer=P] | static:NAME | fixed:KMIN/KMAX/PMAX | schedule:... | adaptive | roles:host=SPEC;fabric=SPEC[;other=SPEC]
	Interval       time.Duration
	SampleInterval time.Duration
	DB             string
	Metrics        string // listen address of /metrics and /recommendations; "" disables
	// MetricsMaxConns caps the connections the HTTP endpoint serves at
	// once (key metrics-max-conns, default DefaultMetricsMaxConns); more
	// wait in the kernel's accept queue, holding no descriptor of the agent.
	MetricsMaxConns int
	// Fleet: this agent is one of a fleet on etcd (nil: alone).
	Fleet    *Fleet
	Registry string // model registry (bbolt) for model:NAME ("": the policy package's default)
	Owner    string // name this agent writes into the audit log
	// Retention is how long shadow recommendations are kept in the db
	// (every queue every interval: about 0.65-0.95 KB each, and the db file
	// grows by about 1.8 times that).
	Retention time.Duration
	// StoreRecommendations keeps every interval's recommendations (with
	// their metrics) in the db for agent recommendations and agent report:
	// config key store-recommendations; nil: in shadow mode, not in closed
	// loop (about 0.65-0.95 KB per queue and interval, 1.8 times that of file, and a third more agent CPU
	// at 6,400 queues). See StoresRecommendations.
	StoreRecommendations *bool
	Targets              []Target
	// Notes are what the agent should say once at start about the file,
	// such as the gnmic-only keys it ignores.
	Notes []string
	// Warnings are what looks wrong in the file without being invalid,
	// said once at start: an ECN threshold below one MTU (env.MTUBytes) in
	// a fixed:/schedule: policy or a guardrails.bounds range, usually a
	// size in KB written in bytes.
	Warnings []string
	// PolicyAt is where the policy was given, "FILE: line N" (Load),
	// "line N" (Parse), "" for the default: errors found when the policy
	// is resolved at start (a model not in the registry) name it.
	PolicyAt string
	// Guardrails are the guard's rules, and in Guardrails.Reward the
	// reward intervals are scored with (DefaultReward from a file).
	Guardrails core.GuardConfig
	// FallbackPreset and SafePreset are preset names (policy.Preset) the
	// guard falls back to; resolved by the caller into Guardrails.
	FallbackPreset string
	SafePreset     string

	// MetricsQueues is how many queues get per-queue Prometheus series
	// (the most congested ones each interval; see METRICS.md): 0 means
	// DefaultMetricsQueues, AllQueues every queue (key metrics-queues: all).
	MetricsQueues int
}

// Target describes one switch, in gnmic's style.
type Target struct {
	Name    string
	Address string
	// Namespace (sonic only) is the path element after the database that
	// selects the switch when one address serves several (sonic-gnmi's
	// multi-namespace paths; simswitch takes the switch name there).
	Namespace  string
	Username   string
	Password   string
	Insecure   bool
	SkipVerify bool
	TLSCA      string
	TLSCert    string
	TLSKey     string
	Timeout    time.Duration
	RetryTimer time.Duration
	Dialect    string
	// Device names the kind of switch (gnmipath.Devices: what it serves
	// and accepts); "" lets the agent infer it from the switch's
	// Capabilities when it connects.
	Device string
	// ASIC (sonic): mellanox (default) or broadcom, the buffer-profile
	// arithmetic of a headroom change (gnmipath.Target.ASIC).
	ASIC string
	// Encoding of the telemetry subscription: json_ietf (default), json or
	// proto (typed scalars, much cheaper to decode where the switch has it).
	Encoding string
	// MaxPorts bounds the ports whose telemetry the agent keeps for the
	// target (key max-ports, default gnmipath.DefaultMaxPorts): a switch
	// reporting more (broken or hostile) cannot grow the agent's memory.
	MaxPorts int
	AllPorts bool     // ports: "*"
	Ports    []string // when !AllPorts
	Queues   []int
	// QueueNames (openconfig) is the name the switch gives a queue index
	// that it does not name by the index: queue-names: {3: AF3, 4: AF4} on
	// a switch whose queues are named by class. Others are named by index.
	QueueNames map[int]string
	// FabricPorts lists the ports that face another switch (uplinks,
	// spine ports); with PeersKnown every other port faces a host. A
	// policy marks transit queues differently from last-hop ones (see
	// env.Peer). Without fabric-ports in the file the peer is unknown.
	FabricPorts []string
	PeersKnown  bool
	// DiscoverPeers (fabric-ports: lldp): the agent learns each port's
	// peer from the switch's LLDP neighbours whenever it (re)connects
	// (see PeersFromLLDP); FabricPorts and PeersKnown stay unset.
	DiscoverPeers bool
	// CableMeters and FrameBytes (cable, mtu) let the agent compute each
	// lossless PG's headroom floor (env.LosslessFloor) where the switch
	// exports its headroom but no floor, as every real switch does: the
	// guard then never lets a headroom below it stand, and headroom
	// decisions (+headroom=floor, a switch-level model) can act. 0: not
	// stated (the floor is then unknown and the headroom left alone).
	// A SONiC switch states its own cable lengths (CONFIG_DB
	// CABLE_LENGTH), which come first: the decoder computes the floor
	// from them, and the operator's cable fills in the ports it omits.
	CableMeters float64
	FrameBytes  int
	// CommitConfirmed (key commit-confirmed: a duration) sends each change
	// as a gNMI confirmed commit with this rollback duration, confirmed
	// once read back as set and cancelled otherwise: a change the agent
	// never confirmed (it died, lost the switch, or was deposed in a
	// fleet) is undone by the switch itself. Only for devices that
	// implement the extension (gnmipath.Device.CommitConfirmed). 0: off.
	CommitConfirmed time.Duration
	// SetTimeout (key set-timeout) bounds one Set and its read-back on
	// this switch: a Set without an answer by then has an unknown outcome,
	// its queue held until twice this after the intent. Default 0: the
	// agent's (5 s); SonicSetTimeout for sonic-gnmi (device sonic, or the
	// sonic dialect with no device named), which applies every Set through the config updater (checkpoint,
	// JSON patch, config save), which takes seconds to minutes.
	SetTimeout time.Duration
	// Zone (key zone) is the switch's zone in a fleet: a member of the
	// same zone (fleet.zone) owns it while one is up.
	Zone string
	// AlignSamples (not a configuration key: set by a lockstep run, which
	// serves simulated switches whose every SAMPLE subscription is sampled
	// at the same simulated times) holds each snapshot until every
	// sampled group (PFC, shared buffer) has sent its sample of the same
	// time, so that a run is the same for a seed. A real switch samples
	// each Subscribe on its own clock; there the groups are folded into
	// whatever snapshot comes next.
	AlignSamples bool
}

// file layout; yaml field names are the configuration keys.
type fileConfig struct {
	Mode            string  `yaml:"mode"`
	Policy          string  `yaml:"policy"`
	Interval        string  `yaml:"interval"`
	SampleInterval  string  `yaml:"sample-interval"`
	DB              string  `yaml:"db"`
	Metrics         *string `yaml:"metrics"`
	MetricsQueues   string  `yaml:"metrics-queues"`
	MetricsMaxConns *int    `yaml:"metrics-max-conns"`
	Registry        string  `yaml:"registry"`
	Owner           string  `yaml:"owner"`
	Retention       string  `yaml:"retention"`
	// StoreRecommendations keeps every interval's recommendations in the
	// db (default: in shadow mode, not in closed loop).
	StoreRecommendations *bool                 `yaml:"store-recommendations"`
	Approve              bool                  `yaml:"approve"`
	Targets              map[string]fileTarget `yaml:"targets"`
	Guardrails           fileGuard             `yaml:"guardrails"`
	Fleet                *fileFleet            `yaml:"fleet"`

	// gnmic's top-level target defaults: they apply to every target that
	// does not set its own (as in a gnmic configuration file).
	gnmicDefaults `yaml:",inline"`
	// gnmic-only top-level keys, accepted and ignored (with a note).
	GnmicIgnored gnmicTopIgnored `yaml:",inline" keys:"unlisted"`
}

// gnmicDefaults are the top-level keys gnmic applies to every target.
type gnmicDefaults struct {
	Port       string `yaml:"port"` // for target keys and addresses without one (default 57400)
	Username   string `yaml:"username"`
	Password   string `yaml:"password"`
	Insecure   *bool  `yaml:"insecure"`
	SkipVerify *bool  `yaml:"skip-verify"`
	TLSCA      string `yaml:"tls-ca"`
	TLSCert    string `yaml:"tls-cert"`
	TLSKey     string `yaml:"tls-key"`
	Timeout    string `yaml:"timeout"`
	RetryTimer string `yaml:"retry-timer"`
	Encoding   string `yaml:"encoding"`
}

// gnmicTopIgnored are gnmic configuration keys that mean nothing to the
// agent (its collector's subscriptions, outputs, processors, logging...).
type gnmicTopIgnored struct {
	Subscriptions yaml.Node `yaml:"subscriptions"`
	Outputs       yaml.Node `yaml:"outputs"`
	Inputs        yaml.Node `yaml:"inputs"`
	Processors    yaml.Node `yaml:"processors"`
	Actions       yaml.Node `yaml:"actions"`
	Loader        yaml.Node `yaml:"loader"`
	Clustering    yaml.Node `yaml:"clustering"`
	APIServer     yaml.Node `yaml:"api-server"`
	GNMIServer    yaml.Node `yaml:"gnmi-server"`
	Tunnel        yaml.Node `yaml:"tunnel-server"`
	Log           yaml.Node `yaml:"log"`
	LogFile       yaml.Node `yaml:"log-file"`
	Debug         yaml.Node `yaml:"debug"`
	Format        yaml.Node `yaml:"format"`
	Address       yaml.Node `yaml:"address"`
	MaxMsgSize    yaml.Node `yaml:"max-msg-size"`
	PrintRequest  yaml.Node `yaml:"print-request"`
	ProtoFile     yaml.Node `yaml:"proto-file"`
	ProtoDir      yaml.Node `yaml:"proto-dir"`
	Gzip          yaml.Node `yaml:"gzip"`
	Token         yaml.Node `yaml:"token"`
	Proxy         yaml.Node `yaml:"proxy-from-env"`
	Retry         yaml.Node `yaml:"retry"`
	TargetBufSize yaml.Node `yaml:"target-buffer-size"`
}

type fileTarget struct {
	Address     string         `yaml:"address"`
	Namespace   string         `yaml:"namespace"`
	Username    string         `yaml:"username"`
	Password    string         `yaml:"password"`
	Insecure    *bool          `yaml:"insecure"`
	SkipVerify  *bool          `yaml:"skip-verify"`
	TLSCA       string         `yaml:"tls-ca"`
	TLSCert     string         `yaml:"tls-cert"`
	TLSKey      string         `yaml:"tls-key"`
	Timeout     string         `yaml:"timeout"`
	RetryTimer  string         `yaml:"retry-timer"`
	Dialect     string         `yaml:"dialect"`
	Device      string         `yaml:"device"`
	ASIC        string         `yaml:"asic"`
	Encoding    string         `yaml:"encoding"`
	Ports       yaml.Node      `yaml:"ports"`
	Queues      []int          `yaml:"queues"`
	QueueNames  map[int]string `yaml:"queue-names"`
	FabricPorts yaml.Node      `yaml:"fabric-ports"`
	Cable       string         `yaml:"cable"`
	MTU         *int           `yaml:"mtu"`
	MaxPorts    *int           `yaml:"max-ports"`
	Commit      string         `yaml:"commit-confirmed"`
	SetTimeout  string         `yaml:"set-timeout"`
	Zone        string         `yaml:"zone"`

	// gnmic-only target keys, accepted and ignored (with a note).
	GnmicIgnored gnmicTargetIgnored `yaml:",inline" keys:"unlisted"`
}

// gnmicTargetIgnored are the keys of a gnmic target that mean nothing to
// the agent (gnmic's pkg/api/types.Target, v0.1.11).
type gnmicTargetIgnored struct {
	Name                       yaml.Node `yaml:"name"`
	AuthScheme                 yaml.Node `yaml:"auth-scheme"`
	TLSServerName              yaml.Node `yaml:"tls-server-name"`
	Subscriptions              yaml.Node `yaml:"subscriptions"`
	Outputs                    yaml.Node `yaml:"outputs"`
	BufferSize                 yaml.Node `yaml:"buffer-size"`
	GRPCReadBufferSize         yaml.Node `yaml:"grpc-read-buffer-size"`
	GRPCWriteBufferSize        yaml.Node `yaml:"grpc-write-buffer-size"`
	GRPCConnWindowSize         yaml.Node `yaml:"grpc-conn-window-size"`
	GRPCWindowSize             yaml.Node `yaml:"grpc-window-size"`
	GRPCStaticConnWindowSize   yaml.Node `yaml:"grpc-static-conn-window-size"`
	GRPCStaticStreamWindowSize yaml.Node `yaml:"grpc-static-stream-window-size"`
	TLSMinVersion              yaml.Node `yaml:"tls-min-version"`
	TLSMaxVersion              yaml.Node `yaml:"tls-max-version"`
	TLSVersion                 yaml.Node `yaml:"tls-version"`
	LogTLSSecret               yaml.Node `yaml:"log-tls-secret"`
	ProtoFiles                 yaml.Node `yaml:"proto-files"`
	ProtoDirs                  yaml.Node `yaml:"proto-dirs"`
	Tags                       yaml.Node `yaml:"tags"`
	EventTags                  yaml.Node `yaml:"event-tags"`
	Gzip                       yaml.Node `yaml:"gzip"`
	Token                      yaml.Node `yaml:"token"`
	Proxy                      yaml.Node `yaml:"proxy"`
	TunnelTargetType           yaml.Node `yaml:"tunnel-target-type"`
	Metadata                   yaml.Node `yaml:"metadata"`
	CipherSuites               yaml.Node `yaml:"cipher-suites"`
	TCPKeepalive               yaml.Node `yaml:"tcp-keepalive"`
	GRPCKeepalive              yaml.Node `yaml:"grpc-keepalive"`
}

type fileBounds struct {
	Rate string   `yaml:"rate"`
	Kmin []string `yaml:"kmin"`
	Kmax []string `yaml:"kmax"`
	Pmax []string `yaml:"pmax"` // fractions (0.01) or percentages (1%)
}

type fileRollback struct {
	Window        *int     `yaml:"window"`
	DropFrac      *float64 `yaml:"drop-frac"`
	PauseIncrease *float64 `yaml:"pause-increase"`
	RewardDrop    *float64 `yaml:"reward-drop"`
	RetryAfter    string   `yaml:"retry-after"`
}

// fileAlpha are the alpha limits; min and max are numbers or fractions
// (1/64), as alpha is printed.
type fileAlpha struct {
	Min     string   `yaml:"min"`
	Max     string   `yaml:"max"`
	MaxStep *float64 `yaml:"max-step"`
}

type fileGuard struct {
	Bounds          []fileBounds `yaml:"bounds"`
	MaxStepRatio    *float64     `yaml:"max-step-ratio"`
	MinHold         string       `yaml:"min-hold"`
	ChangeBudget    *int         `yaml:"change-budget"`
	MinConfidence   *float64     `yaml:"min-confidence"`
	LowConfidence   string       `yaml:"low-confidence"`
	Dwell           *int         `yaml:"dwell"`
	DwellLoosen     *int         `yaml:"dwell-loosen"`
	MinConfTighten  *float64     `yaml:"min-confidence-tighten"`
	TightenUnsure   *int         `yaml:"tighten-unsure-for"`
	MinHoldTighten  string       `yaml:"min-hold-tighten"`
	IdleUtil        *float64     `yaml:"idle-util"`
	FallbackPreset  string       `yaml:"fallback-preset"`
	SafePreset      string       `yaml:"safe-preset"`
	Rollback        fileRollback `yaml:"rollback"`
	StaleFreeze     string       `yaml:"stale-freeze"`
	StaleRevert     string       `yaml:"stale-revert"`
	ExternalHold    string       `yaml:"external-hold"`
	ReadBackPmaxTol *float64     `yaml:"readback-pmax-tolerance"`
	PmaxStep        *float64     `yaml:"pmax-step"`
	Alpha           fileAlpha    `yaml:"alpha"`
}

// StoresRecommendations reports whether the agent keeps every interval's
// recommendations in its db: StoreRecommendations, else in shadow mode.
func (c *Config) StoresRecommendations() bool {
	if c.StoreRecommendations != nil {
		return *c.StoreRecommendations
	}
	return c.Mode == ModeShadow
}

// DefaultMetricsMaxConns is how many connections the HTTP endpoint
// (metrics:) serves at once unless metrics-max-conns says otherwise, and
// MaxMetricsMaxConns the most it may say. The endpoint's clients are a
// Prometheus scraper or two and a few browser tabs (a browser opens at
// most 6 connections to a host), so 64 is ample; it is also a sixteenth
// of 1,024, the smallest RLIMIT_NOFILE a Unix process commonly starts
// with (Go raises the soft limit to the hard one, usually far higher), so
// that whatever the endpoint's clients do, the descriptors the switches'
// gNMI connections, the database and the logs need stay free. Beyond
// the cap, connections wait in the kernel's accept queue and cost the
// agent nothing.
const (
	DefaultMetricsMaxConns = 64
	MaxMetricsMaxConns     = 1024
)

// MaxMaxPorts is the most max-ports may say.
const MaxMaxPorts = 65536

// parseMaxConns reads metrics-max-conns (nil: DefaultMetricsMaxConns).
func parseMaxConns(v *int) (int, error) {
	if v == nil {
		return DefaultMetricsMaxConns, nil
	}
	if *v < 1 || *v > MaxMetricsMaxConns {
		return 0, fmt.Errorf("metrics-max-conns: %d is outside the allowed range 1..%d (connections the HTTP endpoint serves at once)", *v, MaxMetricsMaxConns)
	}
	return *v, nil
}

// MinInterval is the floor of interval and sample-interval: below it the
// control loop and the switches' telemetry would spin rather than sample
// (a decision per queue needs counters that moved).
const MinInterval = 100 * time.Millisecond

// MaxInterval is the ceiling of interval: a day between decisions is no
// control loop any more, and the guardrails' default timers are up to 60
// intervals (core.DefaultGuardConfig), which for an interval above about
// 42,700 h overflowed into negative durations refused under keys the file
// never set.
const MaxInterval = 24 * time.Hour

// Limits of a configuration document: its size in bytes, and its YAML
// nodes counted with every alias expanded (an alias counts as the whole
// node it names), so that a small file cannot make the decoder build a
// huge one. A 1000-switch fabric with 64 ports listed per target needs
// about 100000 nodes.
const (
	MaxConfigBytes = 4 << 20
	MaxConfigNodes = 500_000
)

// Load reads and validates a configuration file. Errors name the
// file, the line and the field (agent.yaml: line 12:
// guardrails.bounds[0].kmin: ...); every unknown key and every value of
// the wrong type is listed at once, each once however many aliases reach
// it. Relative file paths are from the file's folder (ParseIn).
func Load(path string) (*Config, error) {
	c, _, err := LoadFile(path)
	return c, err
}

// LoadFile is Load that also returns the file's bytes, read once: what a
// caller records of the file (its sha256) is what was parsed.
func LoadFile(path string) (*Config, []byte, error) {
	b, err := readConfigFile(path)
	if err != nil {
		return nil, nil, err
	}
	c, err := ParseIn(b, filepath.Dir(path))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", safeio.DisplayPath(path), err)
	}
	if c.PolicyAt != "" {
		c.PolicyAt = safeio.DisplayPath(path) + ": " + c.PolicyAt
	}
	return c, b, nil
}

// readConfigFile reads a configuration file of at most MaxConfigBytes.
func readConfigFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("agent config: %w", safeio.DisplayPathError(err, path))
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("agent config: %w", err)
	}
	if len(b) > MaxConfigBytes {
		return nil, fmt.Errorf("%s: larger than the limit of %d MiB for a configuration file", safeio.DisplayPath(path), MaxConfigBytes>>20)
	}
	return b, nil
}

// Parse parses a configuration document. Unknown keys are errors.
// The document is at most MaxConfigBytes and MaxConfigNodes. Sizes and
// rates need their unit (5KB, 100Gbps; a bare number but 0 is an error),
// Pmax is a fraction or a percentage; thresholds below one MTU are
// Warnings. Relative file paths (db, registry, TLS files) are from the
// working directory.
func Parse(data []byte) (*Config, error) { return ParseIn(data, "") }

// ParseIn is Parse with relative file paths (db, registry,
// tls-ca, tls-cert, tls-key; db's default agent.db too) taken from dir,
// the configuration file's folder, as Load does: a configuration
// means the same files from wherever the agent is started.
func ParseIn(data []byte, dir string) (*Config, error) {
	f, doc, err := decodeConfig(data)
	if err != nil {
		return nil, err
	}
	c, err := buildConfig(f, dir)
	if err == nil && doc.Err() == nil {
		if l, ok := doc.Line("policy"); ok {
			c.PolicyAt = fmt.Sprintf("line %d", l)
		}
		return c, nil
	}
	// Every problem at once: the check's (unknown keys, values of the
	// wrong type), then each value error of the fields it did not flag.
	var all errList
	flagged := map[string]bool{}
	// (both kinds: Err gives the unknown keys alone when there are any,
	// and a wrong-typed value then read as its zero, "0 must be at
	// least 1", while the value the file gives went unsaid)
	for _, k := range doc.Unknown() {
		all, flagged[k.Path] = append(all, k), true
	}
	for _, e := range doc.Invalid() {
		all, flagged[e.Path] = append(all, e), true
	}
	// a value error of a node that aliases bring to several places is
	// listed once, at the first, as the check lists an unknown key
	type nodeErr struct {
		n    *yaml.Node
		rest string
	}
	said := map[nodeErr]bool{}
	for _, e := range unjoin(err) {
		if flaggedField(flagged, e.Error()) {
			continue
		}
		located, path := locatePath(doc, e)
		if n := doc.Node(path); n != nil {
			k := nodeErr{n, strings.TrimPrefix(e.Error(), path)}
			if said[k] {
				continue
			}
			said[k] = true
		}
		all = append(all, located)
	}
	sort.SliceStable(all, func(i, j int) bool { return lineOf(all[i]) < lineOf(all[j]) })
	return nil, all.err()
}

// lineOf is the line an error starts with ("line 12: ..."); one that
// names no line comes after those that do.
func lineOf(err error) int {
	var n int
	if _, e := fmt.Sscanf(err.Error(), "line %d:", &n); e != nil {
		return math.MaxInt
	}
	return n
}

// flaggedField reports whether msg is about a field (or a field within
// one) that flagged names: its value was not decoded, so what the checks
// after decoding say of it is a consequence.
func flaggedField(flagged map[string]bool, msg string) bool {
	field, _, _ := strings.Cut(msg, ": ")
	for p := range flagged {
		if field == p || strings.HasPrefix(field, p+".") || strings.HasPrefix(field, p+"[") ||
			strings.HasPrefix(p, field+".") {
			return true
		}
	}
	return false
}

// errList collects the errors of independent checks, to report them all.
type errList []error

// add appends err when it is not nil, reporting whether it was.
func (l *errList) add(err error) bool {
	if err == nil {
		return false
	}
	*l = append(*l, unjoin(err)...)
	return true
}

// err is nil, the one error, or every error, one a line.
func (l errList) err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return joined(l)
}

// joined is several errors: "N errors:", then one an indented line.
type joined []error

func (j joined) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d errors:", len(j))
	for _, e := range j {
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap gives the errors to errors.Is and errors.As.
func (j joined) Unwrap() []error { return j }

// unjoin is the errors an errList joined, or err alone (none for nil).
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(joined); ok {
		return j
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok && !isWrapped(err) {
		// errors.Join's (the guardrails' checks): each its own
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}

// isWrapped says whether err adds words of its own to the errors it
// wraps (fmt.Errorf with %w twice): such an error is kept whole.
func isWrapped(err error) bool {
	j := err.(interface{ Unwrap() []error })
	var parts []string
	for _, e := range j.Unwrap() {
		if e != nil {
			parts = append(parts, e.Error())
		}
	}
	return err.Error() != strings.Join(parts, "\n")
}

// buildConfig checks a decoded file and fills a Config from it; errors
// start with the field path they are about (guardrails.bounds[0].kmin: ...).
func buildConfig(f *fileConfig, dir string) (*Config, error) {
	var err error
	if f.DB == "" {
		f.DB = "agent.db"
	}
	f.resolvePaths(dir)
	c := &Config{Mode: Mode(f.Mode), Policy: f.Policy, DB: f.DB, Registry: f.Registry, Owner: f.Owner}
	var errs errList
	errs.add(c.parseRun(f))
	if c.SampleInterval == 0 { // not read: the checks that need it take the default
		c.Interval, c.SampleInterval = time.Second, time.Second
	}
	errs.add(c.parseTargets(f))
	if c.Fleet != nil {
		errs.add(c.Fleet.checkSetTimeouts(c.Targets))
		c.Warnings = append(c.Warnings, c.Fleet.warnings(c.Targets)...)
	}
	c.Guardrails, err = parseGuard(f.Guardrails, c.Interval)
	if errs.add(err) || len(errs) > 0 {
		return nil, errs.err()
	}
	c.Guardrails.Reward = DefaultReward()
	c.FallbackPreset = f.Guardrails.FallbackPreset
	c.SafePreset = f.Guardrails.SafePreset
	if c.SafePreset == "" {
		c.SafePreset = core.DefaultSafePreset
	}
	if c.Guardrails.LowConfidence == core.LowConfidencePreset && c.FallbackPreset == "" {
		return nil, fmt.Errorf("guardrails.fallback-preset: required when guardrails.low-confidence is preset")
	}
	if err := c.resolvePresets(); err != nil {
		return nil, err
	}
	c.Warnings = append(c.Warnings, prefixAll("policy "+c.Policy+": ", policy.SpecWarnings(c.Policy))...)
	if len(f.Guardrails.Bounds) > 0 {
		c.Warnings = append(c.Warnings, boundsWarnings(c.Guardrails.Bounds)...)
	}
	return c, nil
}

func prefixAll(prefix string, ss []string) []string {
	for i := range ss {
		ss[i] = prefix + ss[i]
	}
	return ss
}

// boundsWarnings names every guardrails.bounds limit on Kmin or Kmax
// that lies below one MTU (0 is a deliberate "no marking floor").
func boundsWarnings(bs []core.RateBounds) []string {
	var out []string
	for i, b := range bs {
		for _, k := range []struct {
			key, end string
			v        int64
		}{{"kmin", "minimum", b.KminMin}, {"kmin", "maximum", b.KminMax}, {"kmax", "minimum", b.KmaxMin}, {"kmax", "maximum", b.KmaxMax}} {
			if k.v > 0 && k.v < env.MTUBytes {
				out = append(out, fmt.Sprintf("guardrails.bounds[%d].%s: the %s %s is below one MTU (%s): a queue of a single packet crosses it (was a size in KB meant?)",
					i, k.key, k.end, units.FormatBytes(k.v), units.FormatBytes(env.MTUBytes)))
			}
		}
	}
	return out
}

// resolvePaths makes the file paths of f that are relative relative to
// dir ("" leaves them as they are).
func (f *fileConfig) resolvePaths(dir string) {
	if dir == "" || dir == "." {
		return
	}
	rel := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	for _, p := range []*string{&f.DB, &f.Registry, &f.TLSCA, &f.TLSCert, &f.TLSKey} {
		rel(p)
	}
	f.Fleet.resolvePaths(rel)
	for name, t := range f.Targets {
		rel(&t.TLSCA)
		rel(&t.TLSCert)
		rel(&t.TLSKey)
		f.Targets[name] = t
	}
}

// decodeConfig decodes a configuration file strictly (unknown keys and
// values of the wrong type are errors) after checking its size and the
// node count of its aliases; it returns the check, which knows the line of
// every field.
func decodeConfig(data []byte) (*fileConfig, *safeio.YAMLCheck, error) {
	if len(data) > MaxConfigBytes {
		return nil, nil, fmt.Errorf("configuration of %d bytes: larger than the limit of %d MiB", len(data), MaxConfigBytes>>20)
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("empty configuration (want at least targets)")
		}
		return nil, nil, err
	}
	if err := checkNodeCount(&doc, MaxConfigNodes); err != nil {
		return nil, nil, err
	}
	// Every unknown key at once, with its line and the keys allowed there;
	// else every value of the wrong type (line 5: targets.leaf0.queues[0]:
	// want a whole number, got "a"). Each is reported once even when an
	// anchor brings it to several places.
	// The rest of the file is decoded and checked all the same (ParseIn
	// reports both), the fields the check flagged left at zero.
	check := safeio.CheckYAML(&doc, fileConfig{}, safeio.CheckOptions{Integer: "a whole number"})
	var f fileConfig
	// Decoded again from the text: yaml.Node.Decode has no KnownFields.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		var te *yaml.TypeError
		if check.Err() != nil && errors.As(err, &te) && !slices.ContainsFunc(te.Errors, func(m string) bool { return strings.Contains(m, "already defined") }) {
			return &f, check, nil // the check says it better
		}
		if cerr := check.Err(); cerr != nil {
			return nil, nil, cerr
		}
		return nil, nil, decodeErrors(err)
	}
	return &f, check, nil
}

// decodeErrors lists the messages of a *yaml.TypeError the check left to
// the decoder (such as a merge key given twice), each once.
func decodeErrors(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range te.Errors {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	if len(out) == 1 {
		return errors.New(out[0])
	}
	return fmt.Errorf("%d errors:\n  %s", len(out), strings.Join(out, "\n  "))
}

// locate puts the line of the field an error is about before it: the
// longest field path of the file that starts the message (up to a colon,
// space or slash), else the nearest parent in the file of the path before
// the first colon (targets.sw0.address: required → the line of sw0).
func locate(doc *safeio.YAMLCheck, err error) error {
	located, _ := locatePath(doc, err)
	return located
}

// locatePath is locate that also returns the field path of the file that
// starts the message ("" when none does).
func locatePath(doc *safeio.YAMLCheck, err error) (_ error, path string) {
	msg := err.Error()
	best := 0
	for i := 1; i < len(msg); i++ {
		if c := msg[i]; c != ':' && c != ' ' && c != '/' {
			continue
		}
		if l, ok := doc.Line(msg[:i]); ok {
			best, path = l, msg[:i]
		}
	}
	if best == 0 {
		if i := strings.IndexByte(msg, ':'); i > 0 {
			best = doc.NearestLine(msg[:i])
		}
	}
	if best == 0 {
		return err, ""
	}
	return fmt.Errorf("line %d: %w", best, err), path
}

// parseRun fills and checks how the agent runs: mode, policy, intervals,
// databases, retention, metrics address and owner; every error at once.
func (c *Config) parseRun(f *fileConfig) error {
	var errs errList
	errs.add(c.parseMode(f))
	errs.add(c.parseIntervals(f))
	if c.DB == "" {
		c.DB = "agent.db"
	}
	if c.Registry != "" && samePath(c.DB, c.Registry) {
		errs.add(fmt.Errorf("db: %s is also the model registry (registry: %s): give the agent a db of its own", safeio.DisplayPath(c.DB), safeio.DisplayPath(c.Registry)))
	}
	c.StoreRecommendations = f.StoreRecommendations
	var err error
	if c.Retention, err = parseDur("retention", f.Retention, time.Hour); !errs.add(err) && c.Retention <= 0 {
		errs.add(fmt.Errorf("retention: must be positive"))
	}
	if f.Metrics == nil {
		c.Metrics = "127.0.0.1:9273"
	} else {
		c.Metrics = *f.Metrics
	}
	c.MetricsQueues, err = parseMetricsQueues(f.MetricsQueues)
	errs.add(err)
	c.MetricsMaxConns, err = parseMaxConns(f.MetricsMaxConns)
	errs.add(err)
	c.Fleet, err = parseFleet(f.Fleet)
	errs.add(err)
	if c.Owner == "" {
		h, _ := os.Hostname()
		if h == "" {
			h = "agent"
		}
		c.Owner = fmt.Sprintf("%s/%d", h, os.Getpid())
	}
	return errs.err()
}

// parseMode checks the mode, approve and the policy.
func (c *Config) parseMode(f *fileConfig) error {
	var errs errList
	if c.Mode == "" {
		c.Mode = ModeShadow
	}
	if c.Mode != ModeShadow && c.Mode != ModeClosedLoop {
		errs.add(fmt.Errorf("mode: %q is not allowed (want shadow or closed-loop)", f.Mode))
	}
	if c.Approve = f.Approve; c.Approve && c.Mode != ModeClosedLoop {
		errs.add(fmt.Errorf("approve: only a closed loop waits for approvals (mode is %s)", c.Mode))
	}
	if c.Policy == "" {
		c.Policy = policy.DefaultSpec
	}
	if err := checkPolicySpec(c.Policy); err != nil {
		errs.add(fmt.Errorf("policy: %w", err))
	}
	return errs.err()
}

// parseIntervals reads interval and sample-interval (0 both when either
// is wrong).
func (c *Config) parseIntervals(f *fileConfig) (err error) {
	defer func() {
		if err != nil {
			c.Interval, c.SampleInterval = 0, 0
		}
	}()
	if c.Interval, err = parseDur("interval", f.Interval, time.Second); err != nil {
		return err
	}
	if c.Interval < MinInterval {
		return fmt.Errorf("interval: %s is below the minimum of %s", c.Interval, MinInterval)
	}
	if c.Interval > MaxInterval {
		return fmt.Errorf("interval: %s is above the maximum of %s (the guardrails' default timers are multiples of it)", f.Interval, MaxInterval)
	}
	if c.SampleInterval, err = parseDur("sample-interval", f.SampleInterval, c.Interval); err != nil {
		return err
	}
	if c.SampleInterval < MinInterval {
		return fmt.Errorf("sample-interval: %s is below the minimum of %s", c.SampleInterval, MinInterval)
	}
	if c.SampleInterval > c.Interval {
		return fmt.Errorf("sample-interval: %s must not be above interval %s", c.SampleInterval, c.Interval)
	}
	return nil
}

// parseTargets fills the targets in name order, gnmic's top-level
// defaults applied, and notes the gnmic-only keys it ignores.
func (c *Config) parseTargets(f *fileConfig) error {
	if len(f.Targets) == 0 {
		return fmt.Errorf("targets: at least one target is required")
	}
	if f.Port != "" {
		// once, as the key it is (it was blamed on every target's address,
		// even those that give their own port)
		if p, err := strconv.Atoi(f.Port); err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("port: %q is not a port number (1-65535)", f.Port)
		}
	}
	if _, ok := f.Targets[""]; ok {
		return fmt.Errorf("targets: a target with an empty name (the name is how --target, approve --queue and the audit log know it)")
	}
	for n := range f.Targets {
		// a queue is named TARGET/PORT/qN, and files are named after
		// targets (agent pending --gnmic): a / or \ in the name broke the
		// first and wrote the second outside its folder
		if i := strings.IndexFunc(n, func(r rune) bool { return r == '/' || r == '\\' || unicode.IsControl(r) }); i >= 0 {
			return fmt.Errorf("targets.%s: the name holds %q: a target's name may not hold /, \\ or control characters", n, n[i:i+1])
		}
	}
	names := make([]string, 0, len(f.Targets))
	for n := range f.Targets {
		names = append(names, n)
	}
	slices.SortFunc(names, env.NaturalCompare)
	c.Notes = append(c.Notes, ignoredNote("", &f.GnmicIgnored)...)
	var errs errList
	for _, n := range names {
		ft := f.gnmicDefaults.apply(f.Targets[n])
		c.Notes = append(c.Notes, ignoredNote("targets."+n+".", &ft.GnmicIgnored)...)
		if ft.Address == "" {
			ft.Address = n // gnmic: the key is the address
		}
		var err error
		if ft.Address, err = withPort(ft.Address, f.Port); err != nil {
			errs.add(fmt.Errorf("targets.%s.address: %v", n, err))
			continue
		}
		t, err := parseTarget(n, ft)
		if errs.add(err) {
			continue
		}
		switch {
		case t.Password != "" && t.Insecure:
			c.Warnings = append(c.Warnings, fmt.Sprintf("targets.%s: a password with insecure: true (no TLS) crosses the network readable", n))
		case t.Password != "" && t.SkipVerify:
			c.Warnings = append(c.Warnings, fmt.Sprintf("targets.%s: a password with skip-verify: true goes to whoever answers at %s (the switch's certificate is not checked)", n, t.Address))
		}
		if t.Device != "" {
			if dev := gnmipath.Devices[t.Device]; dev.MinSample > c.SampleInterval {
				errs.add(fmt.Errorf("targets.%s.device: %s samples no faster than every %s; sample-interval is %s (raise sample-interval, and interval with it, to %s or more)",
					n, dev.Name, dev.MinSample, c.SampleInterval, dev.MinSample))
			}
		}
		c.Targets = append(c.Targets, t)
	}
	if errs.add(checkDistinctSwitches(c.Targets)) || len(errs) > 0 {
		return errs.err()
	}
	if len(c.Notes) > 1 {
		c.Notes = []string{"gnmic-only keys ignored: " + strings.Join(c.Notes, ", ")}
	} else if len(c.Notes) == 1 {
		c.Notes[0] = "gnmic-only key ignored: " + c.Notes[0]
	}
	return nil
}

// samePath reports whether two paths name the same file, as far as can be
// told without the files (both made absolute and cleaned).
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return aa == bb
}

// checkNodeCount refuses a document with more than limit nodes once its
// aliases are expanded, or with an anchor that contains an alias of itself.
// Each anchored node is counted once and remembered, so the count costs
// the size of the text, not of the expansion.
func checkNodeCount(doc *yaml.Node, limit int) error {
	memo := map[*yaml.Node]int{}
	busy := map[*yaml.Node]bool{}
	var size func(n *yaml.Node) (int, error)
	size = func(n *yaml.Node) (int, error) {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if v, ok := memo[n]; ok {
			return v, nil
		}
		if busy[n] {
			return 0, fmt.Errorf("line %d: anchor %q contains itself", n.Line, n.Anchor)
		}
		busy[n] = true
		total := 1
		for _, c := range n.Content {
			s, err := size(c)
			if err != nil {
				return 0, err
			}
			if total += s; total > limit {
				break // enough: the caller refuses it
			}
		}
		delete(busy, n)
		if n.Anchor != "" {
			memo[n] = total
		}
		return total, nil
	}
	n, err := size(doc)
	if err != nil {
		return err
	}
	if n > limit {
		return fmt.Errorf("configuration: more than %d YAML nodes once aliases are expanded (the limit; an alias counts as the whole node it names)", limit)
	}
	return nil
}

// checkPolicySpec checks a policy spec as far as it can without the model
// registry (policy.CheckSpec): every form but model:NAME is parsed here
// (fixed: and schedule: settings, preset names, the embedded model loaded),
// so that a typo fails at load, not at start; model:NAME (alone, as a
// schedule entry or as +headroom=model:NAME) is looked up when the agent
// starts.
func checkPolicySpec(s string) error { return policy.CheckSpec(s) }

// DefaultFrameBytes is the largest frame a target's floor is computed for
// when its cable is stated without an mtu: SONiC's default port MTU with
// the Ethernet header and FCS.
const DefaultFrameBytes = gnmipath.DefaultMTU + gnmipath.EthernetOverhead

// parseCable reads a target's cable ("100m", "0.3km") and mtu (the port
// MTU as the switch is configured with it, 68 to 9216, default
// gnmipath.DefaultMTU) into metres and the largest frame (the mtu and
// gnmipath.EthernetOverhead), as the decoder reads a SONiC switch's own.
func parseCable(field, cable string, mtu *int) (float64, int, error) {
	if cable == "" {
		if mtu != nil {
			return 0, 0, fmt.Errorf("%s.mtu: only used with cable (the length the headroom floor is computed for)", field)
		}
		return 0, 0, nil
	}
	num, scale := strings.TrimSpace(cable), 1.0
	switch {
	case strings.HasSuffix(num, "km"):
		num, scale = strings.TrimSuffix(num, "km"), 1000
	case strings.HasSuffix(num, "m"):
		num = strings.TrimSuffix(num, "m")
	default:
		return 0, 0, fmt.Errorf("%s.cable: %q has no unit (want metres, e.g. 40m or 0.3km)", field, cable)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || !(v*scale > 0) || v*scale > 100_000 {
		return 0, 0, fmt.Errorf("%s.cable: %q: want a length above 0 and at most 100km, e.g. 40m", field, cable)
	}
	frame := DefaultFrameBytes
	if mtu != nil {
		if *mtu < gnmipath.MinPortMTU || *mtu > gnmipath.MaxPortMTU {
			return 0, 0, fmt.Errorf("%s.mtu: %d: want the port MTU in bytes, %d to %d", field, *mtu, gnmipath.MinPortMTU, gnmipath.MaxPortMTU)
		}
		frame = *mtu + gnmipath.EthernetOverhead
	}
	return v * scale, frame, nil
}

func parseDur(field, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := units.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", field, err)
	}
	return d, nil
}

// DefaultGNMIPort is the port of a target address that names none, as in
// gnmic.
const DefaultGNMIPort = "57400"

// apply fills the keys t does not set from gnmic's top-level defaults.
func (d gnmicDefaults) apply(t fileTarget) fileTarget {
	for _, s := range []struct {
		dst *string
		def string
	}{{&t.Username, d.Username}, {&t.Password, d.Password},
		{&t.TLSCA, d.TLSCA}, {&t.TLSCert, d.TLSCert}, {&t.TLSKey, d.TLSKey}, {&t.Timeout, d.Timeout},
		{&t.RetryTimer, d.RetryTimer}, {&t.Encoding, d.Encoding}} {
		if *s.dst == "" {
			*s.dst = s.def
		}
	}
	if t.Insecure == nil {
		t.Insecure = d.Insecure
	}
	if t.SkipVerify == nil {
		t.SkipVerify = d.SkipVerify
	}
	return t
}

// withPort is addr with port (DefaultGNMIPort when "") added when it has
// none: "10.0.0.1" → "10.0.0.1:57400", "::1" → "[::1]:57400".
func withPort(addr, port string) (string, error) {
	if port == "" {
		port = DefaultGNMIPort
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("port %q is not a port number", port)
	}
	if _, p, err := net.SplitHostPort(addr); err == nil {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%q: port %q is not a port number (1-65535)", addr, p)
		}
		return addr, nil
	}
	host := strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
	if host == "" || strings.ContainsAny(host, " /") {
		return "", fmt.Errorf("%q is not a host or host:port", addr)
	}
	return net.JoinHostPort(host, port), nil
}

// ignoredNote names, with prefix, the keys of v (a struct of yaml.Nodes)
// that the file set.
func ignoredNote(prefix string, v any) []string {
	var out []string
	rv := reflect.ValueOf(v).Elem()
	for i := 0; i < rv.NumField(); i++ {
		if n := rv.Field(i).Interface().(yaml.Node); n.Kind != 0 {
			out = append(out, prefix+strings.Split(rv.Type().Field(i).Tag.Get("yaml"), ",")[0])
		}
	}
	return out
}

func parseTarget(name string, f fileTarget) (Target, error) {
	field := "targets." + name
	t := Target{
		Name: name, Address: f.Address, Namespace: f.Namespace,
		Username: f.Username, Password: f.Password,
		Insecure: f.Insecure != nil && *f.Insecure, SkipVerify: f.SkipVerify != nil && *f.SkipVerify,
		TLSCA: f.TLSCA, TLSCert: f.TLSCert, TLSKey: f.TLSKey,
		Dialect: f.Dialect, Device: f.Device, ASIC: strings.ToLower(f.ASIC), Encoding: f.Encoding, Queues: f.Queues,
	}
	var errs errList
	if t.Address == "" {
		errs.add(fmt.Errorf("%s.address: required (host:port)", field))
	} else if !strings.Contains(t.Address, ":") {
		errs.add(fmt.Errorf("%s.address: %q has no port (want host:port)", field, t.Address))
	}
	if f.MaxPorts != nil {
		if *f.MaxPorts < 1 || *f.MaxPorts > MaxMaxPorts {
			errs.add(fmt.Errorf("%s.max-ports: %d is outside the allowed range 1..%d (ports whose telemetry is kept)", field, *f.MaxPorts, MaxMaxPorts))
		}
		t.MaxPorts = *f.MaxPorts
	}
	// Every step is checked; the ones after the device need its dialect.
	errs.add(t.parseTimers(field, f))
	if errs.add(t.parseDevice(field, f)) {
		return t, errs.err()
	}
	for _, step := range []func(string, fileTarget) error{t.parseCable, t.checkWire, t.checkTLS,
		t.parsePorts, t.parseFabricPorts, t.parseQueues} {
		errs.add(step(field, f))
	}
	return t, errs.err()
}

// parseTimers reads timeout and retry-timer, both positive.
func (t *Target) parseTimers(field string, f fileTarget) error {
	var err error
	if t.Timeout, err = parseDur(field+".timeout", f.Timeout, 10*time.Second); err != nil {
		return err
	}
	if t.RetryTimer, err = parseDur(field+".retry-timer", f.RetryTimer, 2*time.Second); err != nil {
		return err
	}
	if t.RetryTimer <= 0 {
		return fmt.Errorf("%s.retry-timer: must be positive (0 makes a hot reconnect loop)", field)
	}
	if t.Timeout <= 0 {
		return fmt.Errorf("%s.timeout: must be positive", field)
	}
	return nil
}

// parseDevice resolves the device profile, which implies the dialect (openconfig when neither is given).
func (t *Target) parseDevice(field string, f fileTarget) error {
	if t.Device != "" {
		dev, err := gnmipath.LookupDevice(t.Device)
		if err != nil {
			return fmt.Errorf("%s.device: %v", field, err)
		}
		t.Device = dev.Name
		if t.Dialect == "" {
			t.Dialect = string(dev.Dialect)
		}
		if t.Dialect != string(dev.Dialect) {
			return fmt.Errorf("%s.device: %s speaks the %s dialect, not %s (drop dialect or make it %s)", field, dev.Name, dev.Dialect, t.Dialect, dev.Dialect)
		}
	}
	if t.Dialect == "" {
		t.Dialect = DialectOpenConfig
	}
	if err := t.parseSetTimeout(field, f); err != nil {
		return err
	}
	t.Zone = strings.TrimSpace(f.Zone)
	return t.parseCommit(field, f)
}

// SonicSetTimeout is set-timeout's default under the sonic dialect, and
// MaxSetTimeout its bound.
const (
	SonicSetTimeout = 60 * time.Second
	MaxSetTimeout   = 10 * time.Minute
)

// parseSetTimeout reads set-timeout (its default under sonic:
// SonicSetTimeout; else 0, the agent's).
func (t *Target) parseSetTimeout(field string, f fileTarget) error {
	if f.SetTimeout == "" {
		// sonic-gnmi (device sonic, or the sonic dialect's device not
		// named); not simswitch's idealised ecntune-sonic
		if t.Dialect == DialectSONiC && t.Device != "ecntune-sonic" {
			t.SetTimeout = SonicSetTimeout
		}
		return nil
	}
	d, err := time.ParseDuration(f.SetTimeout)
	if err != nil || d < time.Second || d > MaxSetTimeout {
		return fmt.Errorf("%s.set-timeout: %q: want a duration from 1s to %s (e.g. 30s)", field, f.SetTimeout, MaxSetTimeout)
	}
	t.SetTimeout = d
	return nil
}

// MaxCommitConfirmed bounds commit-confirmed (the extension's default
// rollback is ten minutes).
const MaxCommitConfirmed = 10 * time.Minute

// parseCommit reads commit-confirmed, refused for a device that does not
// implement the extension (one inferred at connect time is checked then).
func (t *Target) parseCommit(field string, f fileTarget) error {
	if f.Commit == "" {
		return nil
	}
	d, err := time.ParseDuration(f.Commit)
	if err != nil || d < time.Second || d > MaxCommitConfirmed {
		return fmt.Errorf("%s.commit-confirmed: %q: want a rollback duration from 1s to %s (e.g. 10s)", field, f.Commit, MaxCommitConfirmed)
	}
	if t.Device != "" {
		if dev, _ := gnmipath.LookupDevice(t.Device); dev != nil && !dev.CommitConfirmed {
			return fmt.Errorf("%s.commit-confirmed: device %s does not implement gNMI's commit confirmed extension (gnmipath/PROFILES.md); remove the key", field, t.Device)
		}
	}
	t.CommitConfirmed = d
	return nil
}

// parseCable reads the cable length and MTU the lossless floor is computed for.
func (t *Target) parseCable(field string, f fileTarget) error {
	var err error
	if t.CableMeters, t.FrameBytes, err = parseCable(field, f.Cable, f.MTU); err != nil {
		return err
	}
	return nil
}

// checkWire checks the asic, dialect, encoding and namespace.
func (t *Target) checkWire(field string, f fileTarget) error {
	switch {
	case t.ASIC == "":
	case t.Dialect != DialectSONiC:
		return fmt.Errorf("%s.asic: only sonic targets have a buffer-profile arithmetic to choose", field)
	case t.ASIC != "mellanox" && t.ASIC != "broadcom":
		return fmt.Errorf("%s.asic: %q is not allowed (want mellanox or broadcom)", field, t.ASIC)
	}
	if t.Dialect != DialectOpenConfig && t.Dialect != DialectSONiC {
		return fmt.Errorf("%s.dialect: %q is not allowed (want openconfig or sonic)", field, t.Dialect)
	}
	switch t.Encoding = strings.ToLower(t.Encoding); t.Encoding {
	case "":
		t.Encoding = "json_ietf"
	case "json_ietf", "json", "proto":
	default:
		return fmt.Errorf("%s.encoding: %q is not allowed (want json_ietf, json or proto)", field, t.Encoding)
	}
	if t.Namespace != "" && t.Dialect != DialectSONiC {
		return fmt.Errorf("%s.namespace: only the sonic dialect has namespaces (openconfig selects the switch by its name)", field)
	}
	return nil
}

// checkTLS checks the TLS options and loads the files they name.
func (t *Target) checkTLS(field string, f fileTarget) error {
	if t.Insecure && (t.TLSCA != "" || t.TLSCert != "" || t.TLSKey != "") {
		return fmt.Errorf("%s.insecure: cannot be combined with tls-ca, tls-cert or tls-key", field)
	}
	if (t.TLSCert == "") != (t.TLSKey == "") {
		return fmt.Errorf("%s.tls-cert/tls-key: give both or neither", field)
	}
	if t.TLSCA != "" {
		b, err := safeio.ReadRegularFile(t.TLSCA, safeio.MaxPEMBytes)
		if err != nil {
			return fmt.Errorf("%s.tls-ca: %v", field, err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(b) {
			return fmt.Errorf("%s.tls-ca: %s: no PEM certificate in it", field, safeio.DisplayPath(t.TLSCA))
		}
	}
	if t.TLSCert != "" {
		cert, err := safeio.ReadRegularFile(t.TLSCert, safeio.MaxPEMBytes)
		if err != nil {
			return fmt.Errorf("%s.tls-cert: %v", field, err)
		}
		key, err := safeio.ReadRegularFile(t.TLSKey, safeio.MaxPEMBytes)
		if err != nil {
			return fmt.Errorf("%s.tls-key: %v", field, err)
		}
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			return fmt.Errorf("%s.tls-cert/tls-key: %s, %s: %v", field, safeio.DisplayPath(t.TLSCert), safeio.DisplayPath(t.TLSKey), err)
		}
	}
	return nil
}

// parsePorts reads ports: "*" or a list of interface names.
func (t *Target) parsePorts(field string, f fileTarget) error {
	switch f.Ports.Kind {
	case 0:
		t.AllPorts = true
	case yaml.ScalarNode:
		if f.Ports.Value != "*" {
			return fmt.Errorf("%s.ports: %q is not allowed (want \"*\" or a list of interface names)", field, f.Ports.Value)
		}
		t.AllPorts = true
	case yaml.SequenceNode:
		var err error
		if t.Ports, err = interfaceList(field+".ports", &f.Ports, nil); err != nil {
			return err
		}
		if len(t.Ports) == 0 {
			return fmt.Errorf("%s.ports: empty list (want \"*\" or interface names)", field)
		}
	default:
		return fmt.Errorf("%s.ports: want \"*\" or a list of interface names", field)
	}
	return nil
}

// parseFabricPorts reads fabric-ports: a list of the ports facing switches, or lldp.
func (t *Target) parseFabricPorts(field string, f fileTarget) error {
	switch f.FabricPorts.Kind {
	case 0:
	case yaml.ScalarNode:
		if f.FabricPorts.Tag != "!!str" || f.FabricPorts.Value != FabricPortsLLDP {
			return fmt.Errorf("%s.fabric-ports: want a list of interface names ([] when every port faces a host) or %s (discover them from the switch's LLDP neighbours), not %q",
				field, FabricPortsLLDP, f.FabricPorts.Value)
		}
		t.DiscoverPeers = true
	case yaml.SequenceNode:
		t.PeersKnown = true
		var err error
		t.FabricPorts, err = interfaceList(field+".fabric-ports", &f.FabricPorts, func(port string) error {
			if !t.WantsPort(port) {
				return fmt.Errorf("%q is not among ports", port)
			}
			return nil
		})
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s.fabric-ports: want a list of interface names ([] when every port faces a host) or %s (discover them from the switch's LLDP neighbours)",
			field, FabricPortsLLDP)
	}
	return nil
}

// parseQueues reads queues (default 3 and 4) and queue-names.
func (t *Target) parseQueues(field string, f fileTarget) error {
	var err error
	if f.Queues != nil && len(f.Queues) == 0 {
		// not "left out": the closed loop would write queues 3 and 4,
		// which the list does not name
		return fmt.Errorf("%s.queues: empty list: name the lossless queues (left out, they are 3 and 4)", field)
	}
	if len(t.Queues) == 0 {
		t.Queues = []int{3, 4}
	}
	if t.QueueNames, err = parseQueueNames(field, f.QueueNames, t.Dialect); err != nil {
		return err
	}
	seenQ := map[int]bool{}
	for _, q := range t.Queues {
		if q < 0 || q > 7 {
			return fmt.Errorf("%s.queues: %d is out of range (want 0..7)", field, q)
		}
		if seenQ[q] {
			return fmt.Errorf("%s.queues: %d listed twice", field, q)
		}
		seenQ[q] = true
	}
	return nil
}

// parseQueueNames checks a target's queue-names: the name the switch gives
// each queue index it names otherwise (openconfig only: a queue keyed
// queue[name=AF3] rather than queue[name=3]), one name per index, no name
// twice, none that is itself another index.
func parseQueueNames(field string, m map[int]string, dialect string) (map[int]string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	if strings.EqualFold(dialect, DialectSONiC) {
		return nil, fmt.Errorf("%s.queue-names: for openconfig switches only (SONiC numbers its queues in COUNTERS_QUEUE_NAME_MAP)", field)
	}
	seen := map[string]int{}
	for _, q := range slices.Sorted(maps.Keys(m)) {
		n := strings.TrimSpace(m[q])
		switch {
		case q < 0 || q > 7:
			return nil, fmt.Errorf("%s.queue-names: queue %d is out of range (want 0..7)", field, q)
		case n == "":
			return nil, fmt.Errorf("%s.queue-names: queue %d has an empty name", field, q)
		}
		if i, err := strconv.Atoi(n); err == nil && i != q {
			return nil, fmt.Errorf("%s.queue-names: queue %d named %q, which is the index of another queue", field, q, n)
		}
		if other, ok := seen[n]; ok {
			return nil, fmt.Errorf("%s.queue-names: %q names both queue %d and queue %d", field, n, other, q)
		}
		seen[n] = q
	}
	return m, nil
}

// switchIDs are the identities of the switch t reaches (two for
// localhost, which reaches ::1 or 127.0.0.1), and a description of it: the
// address canonicalised (canonicalHosts), with the namespace (sonic) or the
// target name (openconfig, which selects the switch by it).
func (t Target) switchIDs() (ids []string, desc string) {
	hosts, port := []string{t.Address}, ""
	if h, p, err := net.SplitHostPort(t.Address); err == nil {
		hosts, port = canonicalHosts(h), p
		if n, err := strconv.ParseUint(p, 10, 16); err == nil {
			port = strconv.FormatUint(n, 10)
		}
	}
	for i, h := range hosts {
		addr := h
		if port != "" {
			addr = net.JoinHostPort(h, port)
		}
		id, d := t.switchID(addr)
		ids = append(ids, id)
		if i == 0 {
			desc = d
		}
	}
	return ids, desc
}

// canonicalHosts are the addresses a dial to host reaches, each in one
// spelling: lower case without a trailing dot; an IP address in its
// shortest form, an IPv4-mapped IPv6 address as IPv4 (::ffff:127.0.0.1 is
// 127.0.0.1), the unspecified address as the loopback one it is dialled as
// (0.0.0.0 is 127.0.0.1, :: is ::1); localhost as both loopback addresses.
func canonicalHosts(host string) []string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" {
		return []string{"127.0.0.1", "::1"}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return []string{host}
	}
	ip = ip.Unmap().WithZone(ip.Zone())
	if ip.IsUnspecified() {
		if ip.Is4() {
			return []string{"127.0.0.1"}
		}
		return []string{"::1"}
	}
	return []string{ip.String()}
}

// switchID is what selects t's switch on the wire when it is reached at
// addr (canonical): the address and, in the openconfig dialect, the target
// name sent as prefix.target; in the sonic dialect prefix.target is the
// database, so the namespace element selects the switch ("localhost" and
// none both mean the default one). Host names other than localhost are
// not resolved.
func (t Target) switchID(addr string) (id, desc string) {
	if t.Dialect == DialectSONiC {
		ns := t.Namespace
		if ns == "localhost" {
			ns = ""
		}
		if ns == "" {
			return "sonic\x00" + addr + "\x00", "address " + addr + ", default namespace"
		}
		return "sonic\x00" + addr + "\x00" + ns, "address " + addr + ", namespace " + ns
	}
	return "openconfig\x00" + addr + "\x00" + t.Name, "address " + addr + ", target " + t.Name
}

// checkDistinctSwitches refuses two targets that reach the same switch:
// the agent would apply every change twice and count the change budget and
// hold times per name. The error names both targets with their addresses
// as written.
func checkDistinctSwitches(ts []Target) error {
	seen := map[string]Target{}
	for _, t := range ts {
		ids, desc := t.switchIDs()
		for _, id := range ids {
			if prev, ok := seen[id]; ok {
				return fmt.Errorf("targets.%s (address %s) and targets.%s (address %s) name the same switch (%s): give each switch one target",
					prev.Name, safeio.DisplayPath(prev.Address), t.Name, safeio.DisplayPath(t.Address), desc)
			}
		}
		for _, id := range ids {
			seen[id] = t
		}
	}
	return nil
}

// WantsPort reports whether the target's port selection includes port.
func (t Target) WantsPort(port string) bool {
	if t.AllPorts {
		return true
	}
	for _, p := range t.Ports {
		if p == port {
			return true
		}
	}
	return false
}

// interfaceList reads a YAML sequence of distinct interface names; accept,
// when given, vets each one. Errors start with key (e.g. targets.sw0.ports).
func interfaceList(key string, seq *yaml.Node, accept func(string) error) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, n := range seq.Content {
		if n.Kind != yaml.ScalarNode || n.Value == "" {
			return nil, fmt.Errorf("%s: line %d: want an interface name", key, n.Line)
		}
		if seen[n.Value] {
			return nil, fmt.Errorf("%s: %q listed twice", key, n.Value)
		}
		if accept != nil {
			if err := accept(n.Value); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
		}
		seen[n.Value] = true
		out = append(out, n.Value)
	}
	return out, nil
}

// FabricPortsLLDP is the fabric-ports value that asks for discovery.
const FabricPortsLLDP = "lldp"

// PeerOf tells what port faces: env.PeerSwitch when it is listed in
// fabric-ports, env.PeerHost when it is not but the list is given, and
// env.PeerUnknown without one (and with fabric-ports: lldp, whose peers
// come from PeerFrom).
func (t Target) PeerOf(port string) env.Peer {
	if !t.PeersKnown {
		return env.PeerUnknown
	}
	for _, p := range t.FabricPorts {
		if p == port {
			return env.PeerSwitch
		}
	}
	return env.PeerHost
}

// PeerFrom is PeerOf for a target whose peers may have been discovered:
// with DiscoverPeers, what discovered says of port (env.PeerUnknown when it
// says nothing, e.g. before discovery or after it failed); otherwise
// PeerOf.
func (t Target) PeerFrom(discovered map[string]env.Peer, port string) env.Peer {
	if t.DiscoverPeers {
		return discovered[port]
	}
	return t.PeerOf(port)
}

// WantsQueue reports whether queue q is under control on this target.
func (t Target) WantsQueue(q int) bool {
	for _, x := range t.Queues {
		if x == q {
			return true
		}
	}
	return false
}

func parseGuard(f fileGuard, interval time.Duration) (core.GuardConfig, error) {
	g := core.DefaultGuardConfig(interval)
	var errs errList
	if len(f.Bounds) > 0 {
		g.Bounds = nil
		rates := map[float64]int{}
		for i, b := range f.Bounds {
			rb, err := parseBounds(fmt.Sprintf("guardrails.bounds[%d]", i), b)
			if errs.add(err) {
				continue
			}
			if j, dup := rates[rb.RateBps]; dup {
				errs.add(fmt.Errorf("guardrails.bounds[%d].rate: %s is the rate of guardrails.bounds[%d] too (one entry per link rate)", i, b.Rate, j))
			}
			rates[rb.RateBps] = i
			g.Bounds = append(g.Bounds, rb)
		}
	}
	if f.MaxStepRatio != nil {
		g.MaxStepRatio = *f.MaxStepRatio
	}
	for _, d := range []struct {
		key, v string
		to     *time.Duration
	}{{"min-hold", f.MinHold, &g.MinHold}, {"min-hold-tighten", f.MinHoldTighten, &g.MinHoldTighten}, {"rollback.retry-after", f.Rollback.RetryAfter, &g.RollbackRetryAfter},
		{"stale-freeze", f.StaleFreeze, &g.StaleFreeze}, {"stale-revert", f.StaleRevert, &g.StaleRevert},
		{"external-hold", f.ExternalHold, &g.ExternalHold}} {
		v, err := parseDur("guardrails."+d.key, d.v, *d.to)
		if !errs.add(err) {
			*d.to = v
		}
	}
	if f.ChangeBudget != nil {
		g.ChangeBudget = *f.ChangeBudget
	}
	if f.Dwell != nil {
		g.Dwell = *f.Dwell
	}
	if f.DwellLoosen != nil {
		g.DwellLoosen = *f.DwellLoosen
	}
	if f.MinConfTighten != nil {
		if !(*f.MinConfTighten >= 0 && *f.MinConfTighten <= 1) {
			errs.add(fmt.Errorf("guardrails.min-confidence-tighten: %g must be within [0, 1]", *f.MinConfTighten))
		} else {
			g.MinConfidenceTighten = *f.MinConfTighten
		}
	}
	if f.TightenUnsure != nil {
		g.TightenUnsureFor = *f.TightenUnsure
	}
	if f.IdleUtil != nil {
		g.IdleUtil = *f.IdleUtil
	}
	if f.MinConfidence != nil {
		g.MinConfidence = *f.MinConfidence
	}
	if f.LowConfidence != "" {
		g.LowConfidence = core.LowConfidenceAction(f.LowConfidence)
	}
	if f.Rollback.Window != nil {
		g.RollbackWindow = *f.Rollback.Window
	}
	if f.Rollback.DropFrac != nil {
		g.RollbackDropFrac = *f.Rollback.DropFrac
	}
	if f.Rollback.PauseIncrease != nil {
		g.RollbackPauseIncrease = *f.Rollback.PauseIncrease
	}
	if f.Rollback.RewardDrop != nil {
		g.RollbackRewardDrop = *f.Rollback.RewardDrop
	}
	if f.ReadBackPmaxTol != nil {
		g.ReadBackPmaxTol = *f.ReadBackPmaxTol
	}
	if f.PmaxStep != nil {
		g.PmaxStep = *f.PmaxStep
	}
	if errs.add(parseAlphaLimits(f.Alpha, &g)) {
		return g, errs.err()
	}
	if len(errs) > 0 {
		return g, errs.err()
	}
	return g, g.ValidateRules()
}

// parseAlphaLimits sets the alpha limits the file gives. A limit given
// as 0 is an error rather than the default that 0 means in GuardConfig.
func parseAlphaLimits(f fileAlpha, g *core.GuardConfig) error {
	for _, l := range []struct {
		key string
		v   string
		to  *float64
	}{{"min", f.Min, &g.AlphaMin}, {"max", f.Max, &g.AlphaMax}} {
		if l.v == "" {
			continue
		}
		a, err := parseAlpha(l.v)
		if err != nil {
			return fmt.Errorf("guardrails.alpha.%s: %v", l.key, err)
		}
		if !(a > 0) {
			return fmt.Errorf("guardrails.alpha.%s: %s must be > 0", l.key, l.v)
		}
		*l.to = a
	}
	if f.MaxStep != nil {
		if !(*f.MaxStep >= 1) {
			return fmt.Errorf("guardrails.alpha.max-step: %g must be a finite number >= 1", *f.MaxStep)
		}
		g.AlphaMaxStep = *f.MaxStep
	}
	return nil
}

// parseAlpha reads a dynamic-threshold factor written as a number (0.25,
// 8) or a fraction of two (1/64).
func parseAlpha(v string) (float64, error) {
	v = strings.TrimSpace(v)
	num, den, frac := strings.Cut(v, "/")
	a, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err == nil && frac {
		var d float64
		if d, err = strconv.ParseFloat(strings.TrimSpace(den), 64); err == nil {
			if d == 0 {
				return 0, fmt.Errorf("%q divides by 0", v)
			}
			a /= d
		}
	}
	if err != nil || math.IsNaN(a) || math.IsInf(a, 0) {
		return 0, fmt.Errorf("%q is not a number or a fraction (e.g. 0.25 or 1/64)", v)
	}
	return a, nil
}

// DefaultReward is the reward a configuration file's agent scores
// intervals with (each recommendation's reward and the guard's reward
// rule): env.Reward with env.DefaultRewardWeights.
func DefaultReward() func(env.Metrics) float64 {
	w := env.DefaultRewardWeights()
	return func(m env.Metrics) float64 { return env.Reward(m, w) }
}

// resolvePresets fills Guardrails.Fallback and Guardrails.Safe from the
// preset names of the configuration (policy.Preset, at the reference rate)
// and then checks the guardrails as a whole.
func (c *Config) resolvePresets() error {
	for _, p := range []struct {
		field, name string
		to          *env.Setting
	}{{"guardrails.fallback-preset", c.FallbackPreset, &c.Guardrails.Fallback}, {"guardrails.safe-preset", c.SafePreset, &c.Guardrails.Safe}} {
		if p.name == "" {
			continue
		}
		pr, err := policy.Preset(p.name)
		if err != nil {
			return fmt.Errorf("%s: %v", p.field, err)
		}
		*p.to = pr.Setting(units.RefRateBps)
	}
	return c.Guardrails.Validate()
}

func parseBounds(field string, b fileBounds) (core.RateBounds, error) {
	var rb core.RateBounds
	var err error
	if b.Rate == "" {
		return rb, fmt.Errorf("%s.rate: required (e.g. 100Gbps)", field)
	}
	if rb.RateBps, err = units.ParseRate(b.Rate); err != nil {
		return rb, fmt.Errorf("%s.rate: %v", field, err)
	}
	pair := func(name string, v []string) (lo, hi int64, err error) {
		if len(v) != 2 {
			return 0, 0, fmt.Errorf("%s.%s: want [min, max], e.g. [5KB, 2MB]", field, name)
		}
		var errs errList
		for i, to := range []*int64{&lo, &hi} {
			var e error
			if *to, e = units.ParseBytes(v[i]); e != nil {
				errs.add(fmt.Errorf("%s.%s: %v", field, name, e))
			}
		}
		return lo, hi, errs.err()
	}
	var errs errList
	rb.KminMin, rb.KminMax, err = pair("kmin", b.Kmin)
	errs.add(err)
	rb.KmaxMin, rb.KmaxMax, err = pair("kmax", b.Kmax)
	errs.add(err)
	if len(b.Pmax) != 2 {
		errs.add(fmt.Errorf("%s.pmax: want [min, max] probabilities in (0, 1], e.g. [0.01, 0.5] or [1%%, 50%%]", field))
		return rb, errs.err()
	}
	if rb.PmaxMin, err = units.ParseFraction(b.Pmax[0]); err != nil {
		errs.add(fmt.Errorf("%s.pmax: %v", field, err))
	} else if rb.PmaxMax, err = units.ParseFraction(b.Pmax[1]); err != nil {
		errs.add(fmt.Errorf("%s.pmax: %v", field, err))
	}
	return rb, errs.err()
}

// parseMetricsQueues reads the metrics-queues key: a number of queues
// (at least 1, at most MaxMetricsQueues) or all.
func parseMetricsQueues(v string) (int, error) {
	v = strings.TrimSpace(v)
	switch v {
	case "":
		return DefaultMetricsQueues, nil
	case "all":
		return AllQueues, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxMetricsQueues {
		return 0, fmt.Errorf("metrics-queues: %q: want a number of queues from 1 to %d (the most congested get per-queue series) or all", v, MaxMetricsQueues)
	}
	return n, nil
}
