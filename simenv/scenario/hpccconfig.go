package scenario

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ecntune/ecntune/internal/safeio"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/simenv"
)

// HPCC (ns-3) configuration files: "config_*.txt" of the HPCC simulator
// (program scratch/third), one "KEY value..." per line. See
// LoadHPCCConfig for how each key maps onto simenv.Config.

// hpccKey says how many values a key takes and what it does with them.
type hpccKey struct {
	n     int // number of values; -1 for the rate maps (count, then pairs)
	apply func(c *hpccBuild, v []string) error
}

// hpccBuild is the Config under construction plus what needs all keys.
type hpccBuild struct {
	cfg          simenv.Config
	topologyFile string
	flowFile     string
	kmin, kmax   map[float64]int64
	pmax         map[float64]float64
	ackInterval  int64
	keyLine      map[string]int // line of each key given
	notes        []string       // warnings about the files the config names
}

// Keys whose values only name output files or tracing: accepted, ignored.
var hpccOutputKeys = map[string]int{
	"TRACE_FILE": 1, "TRACE_OUTPUT_FILE": 1, "FCT_OUTPUT_FILE": 1, "PFC_OUTPUT_FILE": 1,
	"QLEN_MON_FILE": 1, "QLEN_MON_START": 1, "QLEN_MON_END": 1, "ENABLE_TRACE": 1,
}

// Keys that only matter for other congestion-control modes (HPCC, TIMELY,
// DCTCP, PINT) or windows, which CC_MODE 1 with HAS_WIN 0 never reads, and
// keys third.cc reads but never uses (DATA_RATE, LINK_DELAY): accepted,
// ignored.
var hpccInertKeys = map[string]int{
	"GLOBAL_T": 1, "VAR_WIN": 1, "FAST_REACT": 1, "U_TARGET": 1, "MI_THRESH": 1, "INT_MULTI": 1,
	"MULTI_RATE": 1, "SAMPLE_FEEDBACK": 1, "PINT_LOG_BASE": 1, "PINT_PROB": 1, "DCTCP_RATE_AI": 1,
	"DATA_RATE": 1, "LINK_DELAY": 1,
}

// Keys without a default ns-3 can run with (third.cc leaves them empty, 0,
// or at a value we do not model): they must be given.
var hpccRequired = []string{"TOPOLOGY_FILE", "FLOW_FILE", "KMAX_MAP", "KMIN_MAP", "PMAX_MAP",
	"RATE_AI", "RATE_HAI", "RP_TIMER", "EWMA_GAIN", "L2_ACK_INTERVAL", "HAS_WIN"}

var hpccKeys = map[string]hpccKey{
	"TOPOLOGY_FILE": {1, func(c *hpccBuild, v []string) error { c.topologyFile = v[0]; return nil }},
	"FLOW_FILE":     {1, func(c *hpccBuild, v []string) error { c.flowFile = v[0]; return nil }},
	"CC_MODE": {1, func(c *hpccBuild, v []string) error {
		if v[0] != "1" {
			return fmt.Errorf("unsupported CC_MODE %s, only 1 (DCQCN)", quote(v[0]))
		}
		return nil
	}},
	"HAS_WIN":           {1, mustBe("0", "a sending window is not modelled; DCQCN runs without one")},
	"RATE_BOUND":        {1, mustBe("1", "senders always pace at their DCQCN rate")},
	"CLAMP_TARGET_RATE": {1, mustBe("0", "target-rate clamping on every cut is not modelled")},
	"L2_BACK_TO_ZERO":   {1, mustBe("0", "only go-back-N retransmission is modelled")},
	"ERROR_RATE_PER_LINK": {1, func(c *hpccBuild, v []string) error {
		if f, err := parseFloat(v[0]); err != nil || f != 0 {
			return fmt.Errorf("%s: only 0 is supported (random link loss is not modelled)", quote(v[0]))
		}
		return nil
	}},
	"LINK_DOWN": {3, func(c *hpccBuild, v []string) error {
		if v[0] != "0" {
			return fmt.Errorf("%s: only \"0 0 0\" (no link failure) is supported; link failures are not modelled", quote(strings.Join(v, " ")))
		}
		return nil
	}},
	"PAUSE_TIME": {1, func(c *hpccBuild, v []string) error {
		// ns-3 treats any PAUSE with a non-zero time as "stop until RESUME",
		// which is what the simulator models; 0 turns every PAUSE into a RESUME.
		if f, err := parseFloat(v[0]); err != nil || f <= 0 {
			return fmt.Errorf("%s: must be a positive number (0 would disable PFC pauses)", quote(v[0]))
		}
		return nil
	}},
	"USE_DYNAMIC_PFC_THRESHOLD": {1, func(c *hpccBuild, v []string) error {
		// third.cc passes it to QbbNetDevice::DynamicThreshold, which nothing
		// reads: the HPCC MMU's XOFF threshold is always dynamic.
		return boolFlag(v[0], func(bool) {})
	}},
	"ENABLE_QCN": {1, func(c *hpccBuild, v []string) error {
		// third.cc gives it to the NICs (DCQCN) and to every switch's
		// EcnEnabled: 0 also stops switch marking.
		return boolFlag(v[0], func(b bool) { c.cfg.DCQCN.Enabled, c.cfg.ECNOff = b, !b })
	}},
	"ACK_HIGH_PRIO": {1, func(c *hpccBuild, v []string) error {
		// third.cc hands it only to the hosts' RDMA egress queue, where ACKs
		// are strict priority either way; switches keep SwitchNode's
		// AckHighPrio default (0), so ACKs share the data's queue, buffer and
		// PFC there. That is our AckHighPriority=false, whatever the key says.
		return boolFlag(v[0], func(bool) { c.cfg.AckHighPriority = false })
	}},
	"PACKET_PAYLOAD_SIZE": {1, func(c *hpccBuild, v []string) error {
		n, err := intIn(v[0], 1, 9000)
		c.cfg.MTU = int(n)
		return err
	}},
	"L2_CHUNK_SIZE": {1, func(c *hpccBuild, v []string) error { _, err := intIn(v[0], 0, math.MaxUint32); return err }},
	"L2_ACK_INTERVAL": {1, func(c *hpccBuild, v []string) error {
		n, err := intIn(v[0], 1, math.MaxUint32)
		c.ackInterval = n
		return err
	}},
	"SIMULATOR_STOP_TIME": {1, func(c *hpccBuild, v []string) error {
		t, err := secondsTime(v[0])
		if err == nil && t <= 0 {
			err = fmt.Errorf("%s: must be above 0 seconds", quote(v[0]))
		}
		if err == nil && t > simenv.MaxDuration {
			err = fmt.Errorf("%s seconds is above the maximum of %v", quote(v[0]), units.MaxSimDuration)
		}
		c.cfg.Duration = t
		return err
	}},
	"BUFFER_SIZE": {1, func(c *hpccBuild, v []string) error {
		// third.cc: ConfigBufferSize(buffer_size * 1024 * 1024).
		n, err := intIn(v[0], 1, 1<<20)
		c.cfg.BufferBytes = n << 20
		return err
	}},
	"RP_TIMER":               {1, usField(func(c *hpccBuild) *simenv.Time { return &c.cfg.DCQCN.IncreaseTimer })},
	"ALPHA_RESUME_INTERVAL":  {1, usField(func(c *hpccBuild) *simenv.Time { return &c.cfg.DCQCN.AlphaTimer })},
	"RATE_DECREASE_INTERVAL": {1, usField(func(c *hpccBuild) *simenv.Time { return &c.cfg.DCQCN.DecreaseTimer })},
	"EWMA_GAIN": {1, func(c *hpccBuild, v []string) error {
		g, err := parseFloat(v[0])
		if err != nil || !(g > 0 && g <= 1) {
			return fmt.Errorf("%s: must be a number in (0, 1]", quote(v[0]))
		}
		c.cfg.DCQCN.G = g
		return nil
	}},
	"FAST_RECOVERY_TIMES": {1, func(c *hpccBuild, v []string) error {
		n, err := intIn(v[0], 0, 1000)
		c.cfg.DCQCN.FastRecoverySteps = int(n)
		return err
	}},
	"RATE_AI":  {1, rateField(func(c *hpccBuild) *float64 { return &c.cfg.DCQCN.AIBps })},
	"RATE_HAI": {1, rateField(func(c *hpccBuild) *float64 { return &c.cfg.DCQCN.HAIBps })},
	"MIN_RATE": {1, rateField(func(c *hpccBuild) *float64 { return &c.cfg.DCQCN.MinRateBps })},
	"KMIN_MAP": {-1, func(c *hpccBuild, v []string) error {
		return rateMap(v, "KB", func(r float64, s string) error {
			n, err := intIn(s, 0, math.MaxUint32)
			c.kmin[r] = n * 1000
			return err
		})
	}},
	"KMAX_MAP": {-1, func(c *hpccBuild, v []string) error {
		return rateMap(v, "KB", func(r float64, s string) error {
			n, err := intIn(s, 0, math.MaxUint32)
			c.kmax[r] = n * 1000
			return err
		})
	}},
	"PMAX_MAP": {-1, func(c *hpccBuild, v []string) error {
		return rateMap(v, "probability", func(r float64, s string) error {
			p, err := parseFloat(s)
			if err != nil || !(p > 0 && p <= 1) {
				return fmt.Errorf("pmax %s is outside (0, 1]", quote(s))
			}
			c.pmax[r] = p
			return nil
		})
	}},
}

func mustBe(want, why string) func(*hpccBuild, []string) error {
	return func(_ *hpccBuild, v []string) error {
		if v[0] != want {
			return fmt.Errorf("%s is not supported, only %s (%s)", quote(v[0]), want, why)
		}
		return nil
	}
}

func boolFlag(s string, set func(bool)) error {
	switch s {
	case "0":
		set(false)
	case "1":
		set(true)
	default:
		return fmt.Errorf("%s: want 0 or 1", quote(s))
	}
	return nil
}

func intIn(s string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s: want an integer in %d..%d", quote(s), lo, hi)
	}
	return n, nil
}

// usField sets a time given in microseconds (as a double, like ns-3's
// MicroSeconds(double)); it must be positive.
func usField(field func(*hpccBuild) *simenv.Time) func(*hpccBuild, []string) error {
	return func(c *hpccBuild, v []string) error {
		f, err := parseFloat(v[0])
		if err != nil || f <= 0 || f > 1e9 {
			return fmt.Errorf("%s: want a positive number of microseconds", quote(v[0]))
		}
		*field(c) = nsTime(f, 1e3, 1)
		if *field(c) <= 0 {
			return fmt.Errorf("%s: below the 1 ns resolution", quote(v[0]))
		}
		return nil
	}
}

func rateField(field func(*hpccBuild) *float64) func(*hpccBuild, []string) error {
	return func(c *hpccBuild, v []string) error {
		r, err := parseNS3Rate(v[0])
		*field(c) = r
		return err
	}
}

// rateMap parses "<count> <rate bps> <value> ..." and hands each pair on.
func rateMap(v []string, unit string, set func(rate float64, val string) error) error {
	if len(v) == 0 {
		return fmt.Errorf("missing the entry count")
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n < 1 {
		return fmt.Errorf("entry count %s: want a positive integer", quote(v[0]))
	}
	if len(v) != 1+2*n {
		return fmt.Errorf("declares %d entries, so wants %d values after the count (\"<rate bps> <%s>\" pairs), got %d", n, 2*n, unit, len(v)-1)
	}
	seen := map[float64]bool{}
	for i := 0; i < n; i++ {
		r, err := strconv.ParseUint(v[1+2*i], 10, 64)
		if err != nil || r == 0 {
			return fmt.Errorf("entry %d: rate %s: want a positive integer in bits per second", i+1, quote(v[1+2*i]))
		}
		if seen[float64(r)] {
			return fmt.Errorf("entry %d: rate %d is given twice", i+1, r)
		}
		seen[float64(r)] = true
		if err := set(float64(r), v[2+2*i]); err != nil {
			return fmt.Errorf("entry %d (rate %d): %v", i+1, r, err)
		}
	}
	return nil
}

// LoadHPCCConfig reads an ns-3 HPCC configuration file (config_*.txt) and
// the topology and flow files it names (relative paths against the config
// file's folder, absolute ones as they are), and returns the equivalent
// simenv.Config, which simenv.Check accepts:
//
//   - TOPOLOGY_FILE → Topology (see LoadHPCCTopology: switches "sw<id>",
//     hosts "host<id>"); FLOW_FILE → one trace workload, flows in file order
//     (lines after the declared count: a warning, ParseHPCCConfigWarn).
//   - KMIN_MAP / KMAX_MAP (KB = 1000 B) and PMAX_MAP per port rate →
//     ECNByRate; every switch port's rate must appear in all three (ns-3
//     asserts the same). ECN is set to the entry at 100 Gb/s, or to the
//     lowest-rate entry scaled to 100 Gb/s.
//   - BUFFER_SIZE, in MiB as third.cc applies it (×1024×1024) → BufferBytes.
//   - ENABLE_QCN → DCQCN.Enabled and, 0, ECNOff (ns-3 switches mark only
//     with it); RATE_AI, RATE_HAI, MIN_RATE (ns-3 rates;
//     MIN_RATE not above the slowest host link, as dcqcn.min_rate);
//     RP_TIMER, ALPHA_RESUME_INTERVAL, RATE_DECREASE_INTERVAL (µs);
//     EWMA_GAIN → G; FAST_RECOVERY_TIMES.
//   - PACKET_PAYLOAD_SIZE → MTU; ACK_HIGH_PRIO → AckHighPriority;
//     L2_ACK_INTERVAL (bytes) 1..payload → one ACK per packet, which is what
//     ns-3 does for such values (larger values skip ACKs early in a flow,
//     not modelled: error).
//   - SIMULATOR_STOP_TIME (s) → Duration.
//   - CC_MODE must be 1 (DCQCN), HAS_WIN 0, RATE_BOUND 1, CLAMP_TARGET_RATE
//     0, L2_BACK_TO_ZERO 0, ERROR_RATE_PER_LINK 0, LINK_DOWN "0 0 0": other
//     values change behaviour that is not modelled and are errors.
//   - PFC as the HPCC MMU does it: headroom 3 × rate × link delay
//     (HeadroomHPCC), α = 1/8 scaled with port rate, 4 KiB reserve, XON
//     offset 3 KiB, 48 B of headers per packet.
//   - Output and tracing keys (TRACE_OUTPUT_FILE, FCT_OUTPUT_FILE, ...) and
//     keys only other CC modes read are ignored. Unknown keys and repeated
//     keys are errors. An omitted key takes third.cc's default, except the
//     keys third.cc has no usable default for, which are required.
func LoadHPCCConfig(path string) (simenv.Config, error) {
	data, err := readFile(path, "HPCC config", safeio.MaxConfigBytes)
	if err != nil {
		return simenv.Config{}, err
	}
	return ParseHPCCConfig(data, filepath.Dir(path), path)
}

// ParseHPCCConfig parses the content of an HPCC config; relative file names
// in it are relative to baseDir; name labels errors and gives the scenario
// name. Values echoed in errors are quoted and cut short.
func ParseHPCCConfig(data []byte, baseDir, name string) (simenv.Config, error) {
	c, _, err := ParseHPCCConfigWarn(data, baseDir, name)
	return c, err
}

// LoadHPCCConfigWarn is LoadHPCCConfig that also returns a warning per key
// of the file that is read but ignored (output files, other CC modes).
func LoadHPCCConfigWarn(path string) (simenv.Config, []string, error) {
	data, err := readFile(path, "HPCC config", safeio.MaxConfigBytes)
	if err != nil {
		return simenv.Config{}, nil, err
	}
	return ParseHPCCConfigWarn(data, filepath.Dir(path), path)
}

// ParseHPCCConfigWarn is ParseHPCCConfig with the warnings of
// LoadHPCCConfigWarn.
func ParseHPCCConfigWarn(data []byte, baseDir, name string) (simenv.Config, []string, error) {
	var out, inert []string
	c, notes, err := parseHPCCConfig(data, baseDir, name, func(line int, key string, output bool) {
		k := fmt.Sprintf("%s (line %d)", key, line)
		if output {
			out = append(out, k)
		} else {
			inert = append(inert, k)
		}
	})
	var warnings []string
	if len(out) > 0 {
		warnings = append(warnings, fmt.Sprintf("%s: ignored, as ecntune writes no ns-3 trace, monitor or output files "+
			"(sim --report draws queue heatmaps, --fct-out writes flows): %s", name, strings.Join(out, ", ")))
	}
	if len(inert) > 0 {
		warnings = append(warnings, fmt.Sprintf("%s: ignored, as only DCQCN (CC_MODE 1) without windows is simulated: %s",
			name, strings.Join(inert, ", ")))
	}
	return c, append(warnings, notes...), err
}

// parseHPCCConfig is ParseHPCCConfigWarn, telling ignored of every key it
// ignores (output: one that only names an output file or tracing), and
// returning the warnings about the files the config names.
func parseHPCCConfig(data []byte, baseDir, name string, ignored func(line int, key string, output bool)) (simenv.Config, []string, error) {
	b := newHPCCBuild(name)
	name = safeio.DisplayPath(name)
	if err := b.readKeys(data, name, ignored); err != nil {
		return simenv.Config{}, nil, err
	}
	if err := b.checkKeys(name); err != nil {
		return simenv.Config{}, nil, err
	}
	if err := b.loadFiles(baseDir, name); err != nil {
		return simenv.Config{}, nil, err
	}
	if err := b.check(name); err != nil {
		return simenv.Config{}, nil, err
	}
	return b.cfg, b.notes, nil
}

// newHPCCBuild starts the config of file name from third.cc's defaults for
// the keys a config may omit.
func newHPCCBuild(name string) *hpccBuild {
	b := &hpccBuild{cfg: simenv.DefaultConfig(),
		kmin: map[float64]int64{}, kmax: map[float64]int64{}, pmax: map[float64]float64{}}
	c := &b.cfg
	base := strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	c.Name = strings.TrimPrefix(base, "config_")
	// third.cc's defaults for keys a config may omit.
	c.DCQCN.Enabled = true
	c.DCQCN.AlphaTimer = 55 * simenv.Microsecond
	c.DCQCN.DecreaseTimer = 4 * simenv.Microsecond
	c.DCQCN.FastRecoverySteps = 5
	c.DCQCN.MinRateBps = 100e6
	c.DCQCN.CNPInterval = 0
	c.DCQCN.ByteCounter = 0
	c.MTU = 1000
	c.AckHighPriority = false
	c.AckBytes = 60 // rdma-hw.cc pads ACKs to 60 B with their PPP header
	c.AckEvery = 1
	c.BufferBytes = 16 << 20
	c.Duration = nsTime(3.01, 1e9, 1) // SIMULATOR_STOP_TIME 3.01, as ns-3 converts it
	c.HeaderBytes = simenv.DefaultHeaderBytes
	c.PFC = simenv.PFCConfig{Enabled: true, Alpha: 0.125, AlphaScaleWithRate: true,
		CableMeters: c.PFC.CableMeters, HeadroomFormula: simenv.HeadroomHPCC,
		ReserveBytes: 4 * 1024, XonOffsetBytes: 3 * 1024}
	b.keyLine = map[string]int{}
	return b
}

// readKeys applies every "KEY value..." line of data, refusing a key given
// twice, unknown, or with the wrong number of values.
func (b *hpccBuild) readKeys(data []byte, name string, ignored func(line int, key string, output bool)) error {
	seen := b.keyLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), safeio.MaxConfigBytes+1) // any line of a file within the cap
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		key, vals := f[0], f[1:]
		if prev, dup := seen[key]; dup {
			return fmt.Errorf("%s: line %d: %s is given again (first on line %d)", name, line, key, prev)
		}
		seen[key] = line
		want, apply := 0, (func(*hpccBuild, []string) error)(nil)
		if k, ok := hpccKeys[key]; ok {
			want, apply = k.n, k.apply
		} else if n, ok := hpccOutputKeys[key]; ok {
			want = n
			ignored(line, key, true)
		} else if n, ok := hpccInertKeys[key]; ok {
			want = n
			ignored(line, key, false)
		} else {
			return fmt.Errorf("%s: line %d: unknown key %s (allowed: %s)", name, line, showKey(key), strings.Join(allHPCCKeys(), ", "))
		}
		if want >= 0 && len(vals) != want {
			return fmt.Errorf("%s: line %d: %s takes %d value(s), got %d", name, line, key, want, len(vals))
		}
		if apply != nil {
			if err := apply(b, vals); err != nil {
				return fmt.Errorf("%s: line %d: %s: %v", name, line, key, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// checkKeys requires the keys ns-3 has no usable default for and an ACK
// interval that is modelled.
func (b *hpccBuild) checkKeys(name string) error {
	for _, k := range hpccRequired {
		if _, ok := b.keyLine[k]; !ok {
			return fmt.Errorf("%s: %s is missing; it has no usable default in ns-3 and must be given", name, k)
		}
	}
	if mtu := b.cfg.MTU; b.ackInterval > int64(mtu) {
		return fmt.Errorf("%s: line %d: L2_ACK_INTERVAL %d is above PACKET_PAYLOAD_SIZE %d: ns-3 then sends no ACK for the first %d bytes of a flow, which is not modelled (use 1..%d)",
			name, b.keyLine["L2_ACK_INTERVAL"], b.ackInterval, mtu, b.ackInterval, mtu)
	}
	return nil
}

// loadFiles reads the topology and flow files the config names (relative
// to baseDir), sets ECN by link rate, and makes the flows the workload.
func (b *hpccBuild) loadFiles(baseDir, name string) error {
	c := &b.cfg
	topoPath := joinPath(baseDir, b.topologyFile)
	topo, err := LoadHPCCTopology(topoPath)
	if err != nil {
		return fmt.Errorf("%s: TOPOLOGY_FILE: %w", name, err)
	}
	c.Topology = topo
	if host := hostRate(topo); c.DCQCN.MinRateBps > host && host > 0 {
		// as the YAML's dcqcn.min_rate; the figures would be of a fabric
		// without congestion control
		at, what := "", " (the default)"
		if l, ok := b.keyLine["MIN_RATE"]; ok {
			at, what = fmt.Sprintf(" line %d:", l), ""
		}
		return fmt.Errorf("%s:%s MIN_RATE %s%s is above the host link rate %s: DCQCN could never slow a sender; give MIN_RATE below it (e.g. 1000Mb/s)",
			name, at, units.FormatRate(c.DCQCN.MinRateBps), what, units.FormatRate(host))
	}
	if err := b.ecnByRate(name); err != nil {
		return err
	}
	flowPath := joinPath(baseDir, b.flowFile)
	flows, lines, rest, err := loadFlowFile(flowPath)
	if err != nil {
		return fmt.Errorf("%s: FLOW_FILE: %w", name, err)
	}
	if rest.lines > 0 {
		b.notes = append(b.notes, fmt.Sprintf("%s: FLOW_FILE %v; ignored, as ns-3 does: raise the count on line %d to run %s",
			name, rest, rest.countLine, rest.them()))
	}
	if err := checkFlowNodes(flows, lines, topo, flowPath); err != nil {
		return fmt.Errorf("%s: FLOW_FILE: %w", name, err)
	}
	c.Workloads = []simenv.Workload{{Kind: simenv.WorkloadTrace, Priority: simenv.DefaultPriority, Flows: flows}}
	return nil
}

// check holds the config to simenv.Check, a buffer error told by the
// BUFFER_SIZE line (or its default).
func (b *hpccBuild) check(name string) error {
	err := simenv.Check(b.cfg)
	if err == nil {
		return nil
	}
	var fe *simenv.FieldError
	if errors.As(err, &fe) && fe.Field == "BufferBytes" {
		if l, ok := b.keyLine["BUFFER_SIZE"]; ok {
			return fmt.Errorf("%s: line %d: BUFFER_SIZE: %v", name, l, err)
		}
		return fmt.Errorf("%s: BUFFER_SIZE (default 16 MiB): %v", name, err)
	}
	return fmt.Errorf("%s: %v", name, err)
}

// joinPath resolves a file named in a config: absolute paths as they are,
// relative ones against the config's folder.
func joinPath(baseDir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(baseDir, p)
}

// ecnByRate builds Config.ECNByRate from the three maps, checking that
// every switch port rate is covered and every setting is valid.
func (b *hpccBuild) ecnByRate(name string) error {
	c := &b.cfg
	used := map[float64]bool{}
	for _, l := range c.Topology.Links {
		if c.Topology.Nodes[l.A].Switch || c.Topology.Nodes[l.B].Switch {
			used[l.RateBps] = true
		}
	}
	c.ECNByRate = map[float64]simenv.ECN{}
	for r := range used {
		for _, m := range []struct {
			key string
			ok  bool
		}{{"KMIN_MAP", hasRate(b.kmin, r)}, {"KMAX_MAP", hasRate(b.kmax, r)}, {"PMAX_MAP", b.pmax[r] > 0}} {
			if !m.ok {
				return fmt.Errorf("%s: line %d: %s has no entry for %s (%.0f bps), a switch port rate of the topology",
					name, b.keyLine[m.key], m.key, units.FormatRate(r), r)
			}
		}
	}
	var rates []float64
	for r := range b.kmin {
		if hasRate(b.kmax, r) && b.pmax[r] > 0 {
			rates = append(rates, r)
		}
	}
	sort.Float64s(rates)
	for _, r := range rates {
		e := simenv.ECN{KminBytes: b.kmin[r], KmaxBytes: b.kmax[r], Pmax: b.pmax[r]}
		if err := e.Validate(); err != nil {
			return fmt.Errorf("%s: line %d: KMIN_MAP/KMAX_MAP at %s: %v", name, b.keyLine["KMIN_MAP"], units.FormatRate(r), err)
		}
		c.ECNByRate[r] = e
	}
	if e, ok := c.ECNByRate[units.RefRateBps]; ok {
		c.ECN = e
	} else if len(rates) > 0 {
		e := c.ECNByRate[rates[0]]
		c.ECN = simenv.ECN{KminBytes: scaleTo(e.KminBytes, rates[0]), KmaxBytes: scaleTo(e.KmaxBytes, rates[0]), Pmax: e.Pmax}
	}
	return nil
}

// scaleTo restates a threshold given at rateBps at units.RefRateBps.
func scaleTo(b int64, rateBps float64) int64 {
	return int64(math.Round(float64(b) * units.RefRateBps / rateBps))
}

func hasRate(m map[float64]int64, r float64) bool { _, ok := m[r]; return ok }

func allHPCCKeys() []string {
	var ks []string
	for k := range hpccKeys {
		ks = append(ks, k)
	}
	for k := range hpccOutputKeys {
		ks = append(ks, k)
	}
	for k := range hpccInertKeys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// showKey renders an unknown key for an error: quoted when it is spelled
// like a key (letters, digits and _, as in KMAX_MAP), else only its length:
// a line such as /etc/shadow's first is no key, and an error must not show
// a file's content when the file is not an ns-3 config.
func showKey(key string) string {
	if len(key) <= 64 && strings.Trim(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == "" {
		return quote(key)
	}
	return fmt.Sprintf("(a first word of %d bytes, not spelled like a key; not an ns-3 config?)", len(key))
}
