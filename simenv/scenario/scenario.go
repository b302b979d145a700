package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	pathpkg "path"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ecntune/ecntune/internal/safeio"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/simenv"
)

type fileScenario struct {
	Name            string         `yaml:"name"`
	Seed            *uint64        `yaml:"seed"`
	Duration        string         `yaml:"duration"`
	Interval        string         `yaml:"interval"`
	Warmup          string         `yaml:"warmup"`
	Topology        *fileTopology  `yaml:"topology"`
	ECN             *fileECN       `yaml:"ecn"`
	PFC             *filePFC       `yaml:"pfc"`
	DCQCN           *fileDCQCN     `yaml:"dcqcn"`
	MTU             *int           `yaml:"mtu"`
	HeaderBytes     *int           `yaml:"header_bytes"`
	AckBytes        *int           `yaml:"ack_bytes"`
	AckHighPriority *bool          `yaml:"ack_high_priority"`
	AckEvery        *int           `yaml:"ack_every"`
	Workloads       []fileWorkload `yaml:"workloads"`
}

type fileTopology struct {
	Kind         string `yaml:"kind"`
	Hosts        *int   `yaml:"hosts"`
	Leaves       *int   `yaml:"leaves"`
	Spines       *int   `yaml:"spines"`
	HostsPerLeaf *int   `yaml:"hosts_per_leaf"`
	HostRate     string `yaml:"host_rate"`
	FabricRate   string `yaml:"fabric_rate"`
	LinkDelay    string `yaml:"link_delay"`
	Buffer       string `yaml:"buffer"`
	File         string `yaml:"file"`
}

type fileECN struct {
	Kmin string  `yaml:"kmin"`
	Kmax string  `yaml:"kmax"`
	Pmax *string `yaml:"pmax"` // a fraction (0.2) or a percentage (20%)
}

type filePFC struct {
	Enabled            *bool    `yaml:"enabled"`
	Alpha              *float64 `yaml:"alpha"`
	AlphaScaleWithRate *bool    `yaml:"alpha_scale_with_rate"`
	Cable              string   `yaml:"cable"`
	Headroom           string   `yaml:"headroom"`
	Formula            string   `yaml:"formula"`
	Reserve            string   `yaml:"reserve"`
	XonOffset          string   `yaml:"xon_offset"`
}

type fileDCQCN struct {
	Enabled       *bool    `yaml:"enabled"`
	G             *float64 `yaml:"g"`
	AI            string   `yaml:"ai"`
	HAI           string   `yaml:"hai"`
	IncreaseTimer string   `yaml:"increase_timer"`
	AlphaTimer    string   `yaml:"alpha_timer"`
	DecreaseTimer string   `yaml:"decrease_timer"`
	MinRate       string   `yaml:"min_rate"`
	FastRecovery  *int     `yaml:"fast_recovery"`
	CNPInterval   string   `yaml:"cnp_interval"`
	ByteCounter   string   `yaml:"byte_counter"`
}

type fileWorkload struct {
	Kind     string   `yaml:"kind"`
	Start    string   `yaml:"start"`
	End      string   `yaml:"end"`
	Priority *int     `yaml:"priority"`
	Hosts    []string `yaml:"hosts"`
	CDF      string   `yaml:"cdf"`
	Load     *float64 `yaml:"load"`
	Fanin    *int     `yaml:"fanin"`
	Size     string   `yaml:"size"`
	Every    string   `yaml:"every"`
	Ranks    *int     `yaml:"ranks"`
	Gap      string   `yaml:"gap"`
	File     string   `yaml:"file"`
}

// Load reads a YAML scenario file.
func Load(path string) (simenv.Config, error) {
	data, err := readFile(path, "scenario", safeio.MaxYAMLBytes)
	if err != nil {
		return simenv.Config{}, err
	}
	return Parse(data, filepath.Dir(path), path)
}

// Parse parses a YAML scenario. Files it names are relative to baseDir; name
// labels errors (usually the file's path) and, without a name key, gives the
// scenario its name.
func Parse(data []byte, baseDir string, name string) (simenv.Config, error) {
	return parse(data, baseDir, name, nil)
}

// ParseFS parses the scenario file at path in fsys (an embedded set of
// scenarios, say); the files it names are read from fsys too, relative to
// path's directory, and must stay inside fsys.
func ParseFS(fsys fs.FS, path string) (simenv.Config, error) {
	data, err := safeio.ReadFS(fsys, path, safeio.MaxYAMLBytes)
	if err != nil {
		return simenv.Config{}, readErr(path, "scenario", err)
	}
	return parse(data, pathpkg.Dir(path), path, fsys)
}

func parse(data []byte, baseDir string, name string, fsys fs.FS) (simenv.Config, error) {
	c := &checker{name: safeio.DisplayPath(name), file: name}
	name = c.name // errors show the path escaped
	if len(data) > safeio.MaxYAMLBytes {
		return simenv.Config{}, fmt.Errorf("%s: the scenario is larger than %s, the limit for a scenario", name, safeio.FormatSize(safeio.MaxYAMLBytes))
	}
	// Parsed into a node tree, with aliases counted as what they expand to,
	// before the checker walks it or anything decodes it.
	root, err := safeio.DecodeYAML(data, safeio.MaxYAMLNodes)
	if err != nil {
		if errors.Is(err, safeio.ErrEmptyYAML) {
			return simenv.Config{}, fmt.Errorf("%s: the scenario is empty", name)
		}
		return simenv.Config{}, fmt.Errorf("%s: %v", name, err)
	}
	if err := c.check(root, fileScenario{}); err != nil {
		return simenv.Config{}, err
	}
	// The checker has vetted every key and value; decode strictly all the same.
	var f fileScenario
	sd := yaml.NewDecoder(bytes.NewReader(data))
	sd.KnownFields(true)
	if err := sd.Decode(&f); err != nil {
		return simenv.Config{}, fmt.Errorf("%s: %v", name, err)
	}
	b := &builder{checker: c, dir: baseDir, fsys: fsys, cfg: simenv.DefaultConfig()}
	if err := b.build(&f); err != nil {
		return simenv.Config{}, err
	}
	if err := b.simCheck(); err != nil {
		return simenv.Config{}, err
	}
	return b.cfg, nil
}

// simFields maps the simenv.Config fields simenv.Check may refuse to the
// scenario keys that set them.
var simFields = map[string]string{
	"BufferBytes":        "topology.buffer",
	"PFC.ReserveBytes":   "pfc.reserve",
	"PFC.HeadroomBytes":  "pfc.headroom",
	"PFC.XonOffsetBytes": "pfc.xon_offset",
}

// simCheck runs the simulator's own checks on the finished Config (MMU
// sizes against the buffer, which need every port's headroom), reporting a
// refused field at the key that set it.
func (b *builder) simCheck() error {
	err := simenv.Check(b.cfg)
	if err == nil {
		return nil
	}
	var fe *simenv.FieldError
	if errors.As(err, &fe) {
		if p, ok := simFields[fe.Field]; ok {
			return b.at(p, "%v", err)
		}
		// Workloads[i].Field: the workload's key of that name.
		var i int
		var field string
		if n, _ := fmt.Sscanf(strings.Replace(fe.Field, "].", "] ", 1), "Workloads[%d] %s", &i, &field); n == 2 {
			return b.at(fmt.Sprintf("workloads[%d].%s", i, strings.ToLower(field)), "%s", strings.TrimPrefix(fe.Msg, fmt.Sprintf("workloads[%d]: ", i)))
		}
	}
	return fmt.Errorf("%s: %v", b.name, err)
}

type builder struct {
	*checker
	dir   string
	fsys  fs.FS // nil: the operating system's files
	cfg   simenv.Config
	hosts []int // node ids of the hosts
}

func (b *builder) path(p string) string {
	if b.fsys != nil {
		return pathpkg.Join(b.dir, p)
	}
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(b.dir, p)
}

// read reads the file p (relative to the scenario's directory) that the
// scenario names as what, of at most max bytes; it returns the path it
// read, to label errors.
func (b *builder) read(p, what string, max int64) ([]byte, string, error) {
	full := b.path(p)
	var data []byte
	var err error
	switch {
	case b.fsys == nil:
		data, err = safeio.ReadFile(full, max)
	case !fs.ValidPath(full):
		err = fmt.Errorf("%s is outside the embedded scenarios", safeio.DisplayPath(p))
	default:
		data, err = safeio.ReadFS(b.fsys, full, max)
	}
	if err != nil {
		return nil, full, readErr(full, what, err)
	}
	return data, full, nil
}

// Typed field parsers: each reports errors at the field's path and line.

func (b *builder) bytes(path, s string, min int64) (int64, error) {
	v, err := units.ParseBytes(s)
	if err != nil {
		return 0, b.at(path, "%v", err)
	}
	if v < min {
		return 0, b.at(path, "%s is below the minimum of %s", s, units.FormatBytes(min))
	}
	return v, nil
}

func (b *builder) rate(path, s string) (float64, error) {
	v, err := units.ParseRate(s)
	if err != nil {
		return 0, b.at(path, "%v", err)
	}
	return v, nil
}

// duration parses a non-negative duration; positive demands > 0.
func (b *builder) duration(path, s string, positive bool) (simenv.Time, error) {
	d, err := units.ParseDuration(s)
	if err != nil {
		return 0, b.at(path, "%v", err)
	}
	if positive && d <= 0 {
		return 0, b.at(path, "%s must be above 0", s)
	}
	if d > units.MaxSimDuration {
		return 0, b.at(path, "%s is above the maximum of %v", s, units.MaxSimDuration)
	}
	return simenv.FromDuration(d), nil
}

// withinRun parses an optional duration s (0 when empty) that must end
// before the run does; why says what a longer one would mean.
func (b *builder) withinRun(path, s string, positive bool, why string) (simenv.Time, error) {
	if s == "" {
		return 0, nil
	}
	d, err := b.duration(path, s, positive)
	if err != nil {
		return 0, err
	}
	if d >= b.cfg.Duration {
		return 0, b.at(path, "%s is not below the duration %s: %s", s, b.cfg.Duration, why)
	}
	return d, nil
}

func (b *builder) intIn(path string, v *int, lo, hi int, def int) (int, error) {
	if v == nil {
		return def, nil
	}
	if *v < lo || *v > hi {
		return 0, b.at(path, "%d is outside %d..%d", *v, lo, hi)
	}
	return *v, nil
}

func (b *builder) build(f *fileScenario) error {
	cfg := &b.cfg
	cfg.Name = f.Name
	if cfg.Name == "" {
		cfg.Name = strings.TrimSuffix(filepath.Base(b.file), filepath.Ext(b.file))
	}
	if f.Seed != nil {
		cfg.Seed = *f.Seed
	}
	if f.Duration != "" {
		d, err := b.duration("duration", f.Duration, true)
		if err != nil {
			return err
		}
		cfg.Duration = d
	}
	var err error
	if cfg.Interval, err = b.withinRun("interval", f.Interval, true, "no decision would be taken"); err != nil {
		return err
	}
	if cfg.Warmup, err = b.withinRun("warmup", f.Warmup, false, "no flow would be counted"); err != nil {
		return err
	}
	if err := b.topology(f.Topology); err != nil {
		return err
	}
	if err := b.ecn(f.ECN); err != nil {
		return err
	}
	if err := b.pfc(f.PFC); err != nil {
		return err
	}
	if err := b.dcqcn(f.DCQCN); err != nil {
		return err
	}
	if cfg.MTU, err = b.intIn("mtu", f.MTU, 1, 9000, cfg.MTU); err != nil {
		return err
	}
	if cfg.HeaderBytes, err = b.intIn("header_bytes", f.HeaderBytes, 0, 1000, cfg.HeaderBytes); err != nil {
		return err
	}
	if cfg.AckBytes, err = b.intIn("ack_bytes", f.AckBytes, 1, 9000, cfg.AckBytes); err != nil {
		return err
	}
	if cfg.AckEvery, err = b.intIn("ack_every", f.AckEvery, 1, 1<<20, cfg.AckEvery); err != nil {
		return err
	}
	if f.AckHighPriority != nil {
		cfg.AckHighPriority = *f.AckHighPriority
	}
	if len(f.Workloads) == 0 {
		return b.at("workloads", "at least one workload is required (kinds: %s)", workloadKinds)
	}
	for i := range f.Workloads {
		w, err := b.workload(fmt.Sprintf("workloads[%d]", i), &f.Workloads[i])
		if err != nil {
			return err
		}
		cfg.Workloads = append(cfg.Workloads, w)
	}
	return nil
}

// topology reads the topology into the config and lists its hosts.
func (b *builder) topology(t *fileTopology) error {
	const p = "topology"
	if t == nil {
		return b.at(p, "required (kind: star, leafspine or hpcc)")
	}
	cfg := &b.cfg
	hostRate, fabricRate, delay, err := b.topologyCommon(t)
	if err != nil {
		return err
	}
	switch t.Kind {
	case "star":
		err = b.starTopology(t, hostRate, delay)
	case "leafspine":
		err = b.leafSpineTopology(t, hostRate, fabricRate, delay)
	case "hpcc":
		err = b.hpccTopology(t)
	case "":
		return b.at(p+".kind", "required (star, leafspine or hpcc)")
	default:
		return b.at(p+".kind", "unknown kind %q (allowed: star, leafspine, hpcc)", t.Kind)
	}
	if err != nil {
		return err
	}
	for id, n := range cfg.Topology.Nodes {
		if !n.Switch {
			b.hosts = append(b.hosts, id)
		}
	}
	if len(b.hosts) < 2 {
		return b.at(p, "the topology has %d host(s); at least 2 are needed", len(b.hosts))
	}
	return nil
}

// topologyCommon reads the settings kinds share: the host and fabric link
// rates, the link delay, and the switch buffer (into the config).
func (b *builder) topologyCommon(t *fileTopology) (hostRate, fabricRate float64, delay simenv.Time, err error) {
	const p = "topology"
	hostRate, delay = 100e9, simenv.Microsecond
	if t.HostRate != "" {
		if hostRate, err = b.rate(p+".host_rate", t.HostRate); err != nil {
			return 0, 0, 0, err
		}
	}
	fabricRate = hostRate
	if t.FabricRate != "" {
		if fabricRate, err = b.rate(p+".fabric_rate", t.FabricRate); err != nil {
			return 0, 0, 0, err
		}
	}
	if t.LinkDelay != "" {
		if delay, err = b.duration(p+".link_delay", t.LinkDelay, false); err != nil {
			return 0, 0, 0, err
		}
	}
	if t.Buffer != "" {
		if b.cfg.BufferBytes, err = b.bytes(p+".buffer", t.Buffer, 1); err != nil {
			return 0, 0, 0, err
		}
	}
	return hostRate, fabricRate, delay, nil
}

// topologyCount reads the count topology.key, required, in lo..hi.
func (b *builder) topologyCount(t *fileTopology, key string, v *int, lo, hi int) (int, error) {
	const p = "topology"
	if v == nil {
		return 0, b.at(p+"."+key, "required for kind %s", t.Kind)
	}
	return b.intIn(p+"."+key, v, lo, hi, 0)
}

// starTopology builds kind star: hosts around one switch.
func (b *builder) starTopology(t *fileTopology, hostRate float64, delay simenv.Time) error {
	if err := b.onlyKeys("topology", "kind star", "kind", "hosts", "host_rate", "link_delay", "buffer"); err != nil {
		return err
	}
	n, err := b.topologyCount(t, "hosts", t.Hosts, 2, maxNodes-1)
	if err != nil {
		return err
	}
	b.cfg.Topology = simenv.StarTopology(n, hostRate, delay)
	return nil
}

// leafSpineTopology builds kind leafspine: leaves of hosts, each linked to
// every spine.
func (b *builder) leafSpineTopology(t *fileTopology, hostRate, fabricRate float64, delay simenv.Time) error {
	const p = "topology"
	if err := b.onlyKeys(p, "kind leafspine", "kind", "leaves", "spines", "hosts_per_leaf",
		"host_rate", "fabric_rate", "link_delay", "buffer"); err != nil {
		return err
	}
	leaves, err := b.topologyCount(t, "leaves", t.Leaves, 1, 4096)
	if err != nil {
		return err
	}
	spines, err := b.topologyCount(t, "spines", t.Spines, 1, 4096)
	if err != nil {
		return err
	}
	hpl, err := b.topologyCount(t, "hosts_per_leaf", t.HostsPerLeaf, 1, 4096)
	if err != nil {
		return err
	}
	if leaves*hpl < 2 {
		return b.at(p+".hosts_per_leaf", "%d leaf × %d host is one host; a fabric needs at least 2", leaves, hpl)
	}
	if leaves*(hpl+1)+spines > maxNodes {
		return b.at(p, "%d nodes is above the limit of %d", leaves*(hpl+1)+spines, maxNodes)
	}
	b.cfg.Topology = simenv.LeafSpineTopology(leaves, spines, hpl, hostRate, fabricRate, delay)
	return nil
}

// hpccTopology builds kind hpcc from an HPCC topology file.
func (b *builder) hpccTopology(t *fileTopology) error {
	const p = "topology"
	if err := b.onlyKeys(p, "kind hpcc (rates and delays come from the file)", "kind", "file", "buffer"); err != nil {
		return err
	}
	if t.File == "" {
		return b.at(p+".file", "required for kind hpcc (an HPCC topology file)")
	}
	data, full, err := b.read(t.File, "topology file", safeio.MaxTopologyBytes)
	var topo simenv.Topology
	if err == nil {
		topo, err = ParseHPCCTopology(data, full)
	}
	if err != nil {
		return b.at(p+".file", "%v", err)
	}
	b.cfg.Topology = topo
	return nil
}

func (b *builder) ecn(e *fileECN) error {
	if e == nil {
		return nil
	}
	cfg := &b.cfg
	var err error
	if e.Kmin != "" {
		if cfg.ECN.KminBytes, err = b.bytes("ecn.kmin", e.Kmin, 0); err != nil {
			return err
		}
	}
	if e.Kmax != "" {
		if cfg.ECN.KmaxBytes, err = b.bytes("ecn.kmax", e.Kmax, 0); err != nil {
			return err
		}
	}
	if e.Pmax != nil {
		v, err := units.ParseFraction(*e.Pmax)
		if err != nil {
			return b.at("ecn.pmax", "%v", err)
		}
		if !(v > 0 && v <= 1) {
			return b.at("ecn.pmax", "%s is outside (0, 1]", *e.Pmax)
		}
		cfg.ECN.Pmax = v
	}
	if cfg.ECN.KminBytes > cfg.ECN.KmaxBytes {
		p := "ecn.kmin"
		if !b.has(p) {
			p = "ecn.kmax"
		}
		return b.at(p, "kmin %s is above kmax %s (need kmin <= kmax)",
			units.FormatBytes(cfg.ECN.KminBytes), units.FormatBytes(cfg.ECN.KmaxBytes))
	}
	return nil
}

func (b *builder) pfc(f *filePFC) error {
	if f == nil {
		return nil
	}
	const p = "pfc"
	pfc := &b.cfg.PFC
	var err error
	if f.Enabled != nil {
		pfc.Enabled = *f.Enabled
	}
	if f.Alpha != nil {
		if !(*f.Alpha > 0 && *f.Alpha <= simenv.MaxAlpha) {
			return b.at(p+".alpha", "%g is outside (0, %g]", *f.Alpha, simenv.MaxAlpha)
		}
		pfc.Alpha = *f.Alpha
	}
	if f.AlphaScaleWithRate != nil {
		pfc.AlphaScaleWithRate = *f.AlphaScaleWithRate
	}
	if f.Cable != "" {
		if pfc.CableMeters, err = parseMeters(f.Cable); err != nil {
			return b.at(p+".cable", "%v", err)
		}
	}
	if f.Headroom != "" {
		if pfc.HeadroomBytes, err = b.bytes(p+".headroom", f.Headroom, 1); err != nil {
			return err
		}
	}
	switch f.Formula {
	case "":
	case simenv.HeadroomIEEE, simenv.HeadroomHPCC:
		pfc.HeadroomFormula = f.Formula
	default:
		return b.at(p+".formula", "unknown formula %q (allowed: %s, %s)", f.Formula, simenv.HeadroomIEEE, simenv.HeadroomHPCC)
	}
	if f.Formula != "" && f.Headroom != "" {
		return b.at(p+".formula", "%s would do nothing: pfc.headroom %s sets every lossless PG's headroom (remove one of the two)", f.Formula, f.Headroom)
	}
	if f.Reserve != "" {
		if pfc.ReserveBytes, err = b.bytes(p+".reserve", f.Reserve, 0); err != nil {
			return err
		}
	}
	if f.XonOffset != "" {
		if pfc.XonOffsetBytes, err = b.bytes(p+".xon_offset", f.XonOffset, 0); err != nil {
			return err
		}
	}
	return nil
}

// parseMeters parses a cable length: "5m", "0.1km" or "5" (meters).
func parseMeters(s string) (float64, error) {
	t, mult := strings.TrimSpace(s), 1.0
	if v, ok := strings.CutSuffix(t, "km"); ok {
		t, mult = v, 1000
	} else if v, ok := strings.CutSuffix(t, "m"); ok {
		t = v
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || !finite(v) {
		return 0, fmt.Errorf("cannot parse cable length %q (want e.g. 5m or 0.3km)", s)
	}
	if v < 0 || v*mult > 100_000 {
		return 0, fmt.Errorf("cable length %q is outside 0..100km", s)
	}
	return v * mult, nil
}

func (b *builder) dcqcn(f *fileDCQCN) error {
	if f == nil || f.MinRate == "" {
		// The default floor (1 Gb/s) at or above the host links' rate
		// would keep DCQCN from slowing any sender: 1% of it instead, as
		// the default is of 100G
		d := &b.cfg.DCQCN
		if host := b.hostRate(); host > 0 && d.MinRateBps >= host {
			d.MinRateBps = host / 100
		}
	}
	if f == nil {
		return nil
	}
	const p = "dcqcn"
	d := &b.cfg.DCQCN
	var err error
	if f.Enabled != nil {
		d.Enabled = *f.Enabled
	}
	if f.G != nil {
		if !(*f.G > 0 && *f.G <= 1) {
			return b.at(p+".g", "%g is outside (0, 1]", *f.G)
		}
		d.G = *f.G
	}
	rates := []struct {
		key string
		s   string
		dst *float64
	}{{"ai", f.AI, &d.AIBps}, {"hai", f.HAI, &d.HAIBps}, {"min_rate", f.MinRate, &d.MinRateBps}}
	for _, r := range rates {
		if r.s != "" {
			if *r.dst, err = b.rate(p+"."+r.key, r.s); err != nil {
				return err
			}
		}
	}
	timers := []struct {
		key      string
		s        string
		dst      *simenv.Time
		positive bool
	}{{"increase_timer", f.IncreaseTimer, &d.IncreaseTimer, true}, {"alpha_timer", f.AlphaTimer, &d.AlphaTimer, true},
		{"decrease_timer", f.DecreaseTimer, &d.DecreaseTimer, true}, {"cnp_interval", f.CNPInterval, &d.CNPInterval, false}}
	for _, t := range timers {
		if t.s != "" {
			if *t.dst, err = b.duration(p+"."+t.key, t.s, t.positive); err != nil {
				return err
			}
		}
	}
	if d.FastRecoverySteps, err = b.intIn(p+".fast_recovery", f.FastRecovery, 0, 1000, d.FastRecoverySteps); err != nil {
		return err
	}
	if f.ByteCounter != "" {
		if d.ByteCounter, err = b.bytes(p+".byte_counter", f.ByteCounter, 0); err != nil {
			return err
		}
	}
	if host := b.hostRate(); d.MinRateBps > host {
		return b.at(p+".min_rate", "%s is above the host link rate %s", units.FormatRate(d.MinRateBps), units.FormatRate(host))
	}
	return nil
}

// hostRate is the slowest link rate at any host.
func (b *builder) hostRate() float64 { return hostRate(b.cfg.Topology) }

// hostRate is the slowest link rate at any host of t (0: no host link).
func hostRate(t simenv.Topology) float64 {
	r := 0.0
	for _, l := range t.Links {
		if !t.Nodes[l.A].Switch || !t.Nodes[l.B].Switch {
			if r == 0 || l.RateBps < r {
				r = l.RateBps
			}
		}
	}
	return r
}

const workloadKinds = "cdf, incast, allreduce, alltoall, trace"

// workload reads workload p (workloads[i]).
func (b *builder) workload(p string, f *fileWorkload) (simenv.Workload, error) {
	w := simenv.Workload{Kind: simenv.WorkloadKind(f.Kind), Priority: simenv.DefaultPriority}
	if err := b.workloadKeys(p, f); err != nil {
		return w, err
	}
	pool, err := b.workloadCommon(p, f, &w)
	if err != nil {
		return w, err
	}
	switch w.Kind {
	case simenv.WorkloadCDF:
		err = b.cdfWorkload(p, f, &w, pool)
	case simenv.WorkloadIncast:
		err = b.incastWorkload(p, f, &w, pool)
	case simenv.WorkloadAllReduce, simenv.WorkloadAllToAll:
		err = b.collectiveWorkload(p, f, &w, pool)
	case simenv.WorkloadTrace:
		err = b.traceWorkload(p, f, &w)
	}
	return w, err
}

// workloadKeys checks workload p's kind and that only the keys of its kind
// are given.
func (b *builder) workloadKeys(p string, f *fileWorkload) error {
	common := []string{"kind", "start", "end", "priority", "hosts"}
	switch simenv.WorkloadKind(f.Kind) {
	case simenv.WorkloadCDF:
		return b.onlyKeys(p, "kind cdf", append(common, "cdf", "load")...)
	case simenv.WorkloadIncast:
		return b.onlyKeys(p, "kind incast", append(common, "fanin", "size", "every")...)
	case simenv.WorkloadAllReduce, simenv.WorkloadAllToAll:
		return b.onlyKeys(p, "kind "+f.Kind, append(common, "ranks", "size", "gap")...)
	case simenv.WorkloadTrace:
		return b.onlyKeys(p, "kind trace (flows carry their own priority and start)", "kind", "file")
	case "":
		return b.at(p+".kind", "required (allowed: %s)", workloadKinds)
	default:
		return b.at(p+".kind", "unknown kind %q (allowed: %s)", f.Kind, workloadKinds)
	}
}

// workloadCommon reads the settings every kind has into w: start, end,
// priority and hosts; pool is how many hosts the workload may use.
func (b *builder) workloadCommon(p string, f *fileWorkload, w *simenv.Workload) (pool int, err error) {
	if f.Start != "" {
		if w.Start, err = b.duration(p+".start", f.Start, false); err != nil {
			return 0, err
		}
	}
	if w.Start >= b.cfg.Duration && w.Kind != simenv.WorkloadTrace {
		return 0, b.at(p+".start", "%s is not before the end of the run (duration %s); the workload would never run", w.Start, b.cfg.Duration)
	}
	if f.End != "" {
		if w.End, err = b.duration(p+".end", f.End, false); err != nil {
			return 0, err
		}
		if w.End <= w.Start {
			return 0, b.at(p+".end", "%s is not after start %s", w.End, w.Start)
		}
	}
	if w.Priority, err = b.intIn(p+".priority", f.Priority, 0, simenv.ControlQueue-1, w.Priority); err != nil {
		return 0, err
	}
	pool = len(b.hosts)
	if f.Hosts != nil {
		if w.Hosts, err = b.hostList(p+".hosts", f.Hosts); err != nil {
			return 0, err
		}
		pool = len(w.Hosts)
	}
	return pool, nil
}

// need fails when key of workload p, required for its kind, is not given.
func (b *builder) need(p string, f *fileWorkload, key string, given bool, what string) error {
	if !given {
		return b.at(p+"."+key, "required for kind %s (%s)", f.Kind, what)
	}
	return nil
}

// cdfWorkload reads kind cdf: flow sizes from a CDF file at an offered
// load, between pool hosts.
func (b *builder) cdfWorkload(p string, f *fileWorkload, w *simenv.Workload, pool int) error {
	if err := b.need(p, f, "cdf", f.CDF != "", "a flow-size CDF file"); err != nil {
		return err
	}
	data, full, err := b.read(f.CDF, "CDF file", safeio.MaxCDFBytes)
	if err == nil {
		w.CDF, err = ParseCDF(data, full)
	}
	if err != nil {
		return b.at(p+".cdf", "%v", err)
	}
	if err := b.need(p, f, "load", f.Load != nil, fmt.Sprintf("offered load per host link, %g..1", simenv.MinLoad)); err != nil {
		return err
	}
	if !(*f.Load >= simenv.MinLoad && *f.Load <= 1) {
		return b.at(p+".load", "%g is outside the allowed range %g..1 (a fraction of the hosts' link capacity)", *f.Load, simenv.MinLoad)
	}
	w.Load = *f.Load
	if pool < 2 {
		return b.at(p+".hosts", "a cdf workload needs at least 2 hosts, got %d", pool)
	}
	return nil
}

// incastWorkload reads kind incast: fanin senders of size bytes each to
// one receiver, every so often.
func (b *builder) incastWorkload(p string, f *fileWorkload, w *simenv.Workload, pool int) error {
	if err := b.need(p, f, "fanin", f.Fanin != nil, "number of senders"); err != nil {
		return err
	}
	if pool < 2 { // hosts lists too few: no fanin would do
		return b.at(p+".hosts", "an incast workload needs at least 2 hosts (senders and a receiver), got %d", pool)
	}
	if *f.Fanin < 1 || *f.Fanin > pool-1 {
		return b.at(p+".fanin", "%d senders need %d hosts (senders and a receiver), %d available; allowed 1..%d",
			*f.Fanin, *f.Fanin+1, pool, pool-1)
	}
	w.Fanin = *f.Fanin
	if err := b.need(p, f, "size", f.Size != "", "bytes per sender"); err != nil {
		return err
	}
	var err error
	if w.SizeBytes, err = b.bytes(p+".size", f.Size, 1); err != nil {
		return err
	}
	if err := b.need(p, f, "every", f.Every != "", "time between bursts"); err != nil {
		return err
	}
	w.Every, err = b.duration(p+".every", f.Every, true)
	return err
}

// collectiveWorkload reads kinds allreduce and alltoall: a collective of
// size bytes among ranks hosts, repeated after a gap.
func (b *builder) collectiveWorkload(p string, f *fileWorkload, w *simenv.Workload, pool int) error {
	if err := b.need(p, f, "ranks", f.Ranks != nil, "number of participating hosts"); err != nil {
		return err
	}
	if pool < 2 { // hosts lists too few: no ranks would do
		return b.at(p+".hosts", "an %s workload needs at least 2 hosts, got %d", f.Kind, pool)
	}
	if *f.Ranks < 2 || *f.Ranks > pool {
		return b.at(p+".ranks", "%d ranks with %d hosts available; allowed 2..%d", *f.Ranks, pool, pool)
	}
	w.Ranks = *f.Ranks
	if err := b.need(p, f, "size", f.Size != "", "bytes of the collective"); err != nil {
		return err
	}
	var err error
	if w.SizeBytes, err = b.bytes(p+".size", f.Size, int64(w.Ranks)); err != nil {
		return err
	}
	if f.Gap != "" {
		w.Gap, err = b.duration(p+".gap", f.Gap, false)
	}
	return err
}

// traceWorkload reads kind trace: the flows of an HPCC flow file.
func (b *builder) traceWorkload(p string, f *fileWorkload, w *simenv.Workload) error {
	if err := b.need(p, f, "file", f.File != "", "an HPCC flow file"); err != nil {
		return err
	}
	data, path, err := b.read(f.File, "flow file", safeio.MaxFlowFileBytes)
	var flows []simenv.TraceFlow
	var lines []int
	var rest flowRest
	if err == nil {
		flows, lines, rest, err = parseFlowFile(data, path)
	}
	if err == nil && rest.lines > 0 {
		// a flow file's own mistake, usually lines appended without raising the count
		err = fmt.Errorf("%v: raise the count on line %d to run %s, or delete %[3]s (ns-3 reads no further)", rest, rest.countLine, rest.them())
	}
	if err == nil {
		err = checkFlowNodes(flows, lines, b.cfg.Topology, path)
	}
	if err != nil {
		return b.at(p+".file", "%v", err)
	}
	if len(flows) > 0 && flows[0].Start >= b.cfg.Duration {
		return b.at(p+".file", "%s: the first flow starts at %s, not before the end of the run (duration %s); set duration beyond it",
			f.File, flows[0].Start, b.cfg.Duration)
	}
	w.Flows = flows
	return nil
}

// hostList resolves host names to node ids.
func (b *builder) hostList(p string, names []string) ([]int, error) {
	byName := map[string]int{}
	for id, n := range b.cfg.Topology.Nodes {
		byName[n.Name] = id
	}
	seen := map[int]bool{}
	ids := make([]int, 0, len(names))
	for i, name := range names {
		ep := fmt.Sprintf("%s[%d]", p, i)
		id, ok := byName[name]
		if !ok {
			return nil, b.at(ep, "no node is named %q (hosts are named like %s)", name, b.cfg.Topology.Nodes[b.hosts[0]].Name)
		}
		if b.cfg.Topology.Nodes[id].Switch {
			return nil, b.at(ep, "%s is a switch, not a host", name)
		}
		if seen[id] {
			return nil, b.at(ep, "%s is listed twice", name)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ids, nil
}
