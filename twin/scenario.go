package twin

import (
	"bytes"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing/fstest"

	"gopkg.in/yaml.v3"

	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/scenarios/cdf"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// Families are the flow-size families a twin's workload is drawn from:
// the shipped CDFs (scenarios/cdf), by the name of their file.
var Families = []string{"websearch", "fbhadoop"}

// Incast is a many-to-one burst repeated every Every.
type Incast struct {
	Fanin     int
	SizeBytes int64
	Every     simenv.Time
}

// Collective is an all-reduce or all-to-all among Ranks hosts, repeated
// after Gap.
type Collective struct {
	Kind      string // "allreduce" or "alltoall"
	Ranks     int
	SizeBytes int64
	Gap       simenv.Time
}

// Workload is the traffic of one time window: flows of a family at a
// load, and at most one incast and one collective beside them.
type Workload struct {
	Family     string // one of Families; "" for none
	Load       float64
	Incast     *Incast
	Collective *Collective
}

// Describe renders w for reports, e.g. "websearch 42% + incast 8x256KB/500us".
func (w Workload) Describe() string {
	var parts []string
	if w.Family != "" {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", w.Family, 100*w.Load))
	}
	if c := w.Incast; c != nil {
		parts = append(parts, fmt.Sprintf("incast %dx%s every %s", c.Fanin, units.FormatBytes(c.SizeBytes), durText(c.Every)))
	}
	if c := w.Collective; c != nil {
		parts = append(parts, fmt.Sprintf("%s %d ranks %s gap %s", c.Kind, c.Ranks, units.FormatBytes(c.SizeBytes), durText(c.Gap)))
	}
	if len(parts) == 0 {
		return "idle"
	}
	return strings.Join(parts, " + ")
}

// Phase is a time window of the twin's run with its workload.
type Phase struct {
	Start, End simenv.Time
	Workload   Workload
}

// Scenario is a twin's scenario: its fabric and its phases.
type Scenario struct {
	Name     string
	Seed     uint64
	Duration simenv.Time
	Fabric   Fabric
	Phases   []Phase
	// Lead is the lead-in: the first Lead of the run is the first
	// window's traffic before the observation began (its fit found the
	// agent began to record on traffic already running, not at its
	// start; 0 when it began with it). Phases after the first are placed
	// after it; the first begins at 0.
	Lead simenv.Time
	// Interval is the control interval the twin is decided at: the
	// agent's that recorded the observation (the twin's interval, where a
	// long one was compressed); 0: eval's default for Duration.
	Interval simenv.Time
	// Comment lines head the file (what it was fitted from, the notes).
	Comment []string
}

// File is the scenario's name in the file system Files gives.
const File = "twin.yaml"

// YAML renders s as an ecntune scenario file; the CDF files it names are
// cdf/NAME.txt beside it (CDFFiles).
func (s *Scenario) YAML() []byte {
	var b strings.Builder
	for _, c := range s.Comment {
		fmt.Fprintf(&b, "# %s\n", c)
	}
	if s.Lead > 0 {
		fmt.Fprintf(&b, "# The first %s is a lead-in: traffic already running before the observation began.\n", durText(s.Lead))
	}
	f := &s.Fabric
	fmt.Fprintf(&b, "name: %s\nseed: %d\nduration: %s\n", yamlScalar(s.Name), s.Seed, durText(s.Duration))
	if s.Interval > 0 {
		fmt.Fprintf(&b, "interval: %s   # the agent's decision interval (one above %s is simulated as %s)\n", durText(s.Interval),
			durText(MaxTwinInterval), durText(CompressedInterval))
	}
	if s.Lead > 0 {
		fmt.Fprintf(&b, "warmup: %s   # the lead-in's flows are not judged\n", durText(s.Lead))
	}
	common := fmt.Sprintf("host_rate: %s, link_delay: %s, buffer: %s", units.FormatRate(f.HostRateBps), durText(f.LinkDelay), bytesText(f.BufferBytes))
	if f.Kind == "star" {
		fmt.Fprintf(&b, "topology: {kind: star, hosts: %d, %s}\n", f.Hosts, common)
	} else {
		fmt.Fprintf(&b, "topology: {kind: leafspine, leaves: %d, spines: %d, hosts_per_leaf: %d, %s,\n           fabric_rate: %s}\n",
			f.Leaves, f.Spines, f.HostsPerLeaf, common, units.FormatRate(f.FabricRateBps))
	}
	fmt.Fprintf(&b, "ecn: {kmin: %s, kmax: %s, pmax: %g}\n", bytesText(f.ECN.KminBytes), bytesText(f.ECN.KmaxBytes), f.ECN.Pmax)
	hdrm := ""
	if f.HeadroomBytes > 0 {
		hdrm = ", headroom: " + bytesText(f.HeadroomBytes) // at 100 Gb/s, as the switches report it
	}
	fmt.Fprintf(&b, "pfc: {enabled: true, alpha: %g, cable: %gm%s}\n", f.Alpha, f.CableMeters, hdrm)
	h := f.HostRateBps
	fmt.Fprintf(&b, "dcqcn: {enabled: true, g: 0.00390625, ai: %s, hai: %s, increase_timer: 300us,\n        alpha_timer: 1us, decrease_timer: 4us, min_rate: %s}\n",
		units.FormatRate(h*2e-4), units.FormatRate(h*2e-3), units.FormatRate(h*1e-2))
	fmt.Fprintf(&b, "mtu: %d\nworkloads:\n", f.MTU)
	for _, p := range s.Phases {
		window := ""
		if len(s.Phases) > 1 {
			window = fmt.Sprintf(", start: %s, end: %s", durText(p.Start), durText(p.End))
		}
		if f.Queue != simenv.DefaultPriority {
			window += fmt.Sprintf(", priority: %d", f.Queue)
		}
		writeWorkload(&b, p.Workload, window)
	}
	return []byte(b.String())
}

func writeWorkload(b *strings.Builder, w Workload, window string) {
	n := 0
	if w.Family != "" {
		fmt.Fprintf(b, "  - {kind: cdf, cdf: cdf/%s.txt, load: %.4g%s}\n", w.Family, w.Load, window)
		n++
	}
	if c := w.Incast; c != nil {
		fmt.Fprintf(b, "  - {kind: incast, fanin: %d, size: %s, every: %s%s}\n", c.Fanin, bytesText(c.SizeBytes), durText(c.Every), window)
		n++
	}
	if c := w.Collective; c != nil {
		fmt.Fprintf(b, "  - {kind: %s, ranks: %d, size: %s, gap: %s%s}\n", c.Kind, c.Ranks, bytesText(c.SizeBytes), durText(c.Gap), window)
		n++
	}
	if n == 0 { // an idle window: the lightest traffic a scenario takes
		fmt.Fprintf(b, "  - {kind: cdf, cdf: cdf/websearch.txt, load: 0.001%s}\n", window)
	}
}

// Files is s's scenario (File) with the CDF files it names, as a file
// system: what scenario.ParseFS reads and what a caller writes out.
func (s *Scenario) Files() (fstest.MapFS, error) {
	y := s.YAML()
	m := fstest.MapFS{File: {Data: y}}
	for _, fam := range Families {
		if !bytes.Contains(y, []byte("cdf/"+fam+".txt")) {
			continue // only the files it names (one it does not was written beside it)
		}
		data, err := fs.ReadFile(cdf.Files, fam+".txt")
		if err != nil {
			return nil, err
		}
		m["cdf/"+fam+".txt"] = &fstest.MapFile{Data: data}
	}
	return m, nil
}

// Config parses s's YAML into the simulator's configuration: what is
// simulated is what the file says.
func (s *Scenario) Config() (simenv.Config, error) {
	m, err := s.Files()
	if err != nil {
		return simenv.Config{}, err
	}
	return scenario.ParseFS(m, File)
}

// bytesText writes a size exactly, in KB or MB when it is a whole number
// of them.
func bytesText(b int64) string {
	switch {
	case b != 0 && b%1_000_000 == 0:
		return fmt.Sprintf("%dMB", b/1_000_000)
	case b != 0 && b%1000 == 0:
		return fmt.Sprintf("%dKB", b/1000)
	}
	return fmt.Sprintf("%dB", b)
}

// durText writes a duration exactly, in the largest of ms, us and ns that
// divides it.
func durText(t simenv.Time) string {
	ns := t.Ns()
	switch {
	case ns == 0:
		return "0ms"
	case ns != 0 && ns%1_000_000 == 0:
		return fmt.Sprintf("%dms", ns/1_000_000)
	case ns != 0 && ns%1000 == 0:
		return fmt.Sprintf("%dus", ns/1000)
	}
	return fmt.Sprintf("%dns", ns)
}

// yamlScalar is v as a YAML scalar that reads back as v (quoted where
// plain would not: "dc1 #2", "a: b").
func yamlScalar(v string) string {
	b, err := yaml.Marshal(v)
	if err != nil { // a string always marshals
		return strconv.Quote(v)
	}
	return strings.TrimSuffix(string(b), "\n")
}
