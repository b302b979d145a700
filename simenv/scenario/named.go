package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/safeio"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/simenv"
)

// Named is a scenario ready to run: its configuration, the name results
// report it under and, when it was read from a file, the file's path and
// the sha256 of its bytes (what a trained model's provenance records).
// Training and evaluation both take scenarios in this form.
type Named struct {
	Name   string
	Path   string // slash-separated; "" when not read from a file
	SHA256 string // lower-case hex; "" when not read from a file
	// Files are the files the scenario file names (its topology file, its
	// workloads' cdf and trace files) with the sha256 of their bytes: what
	// it runs beside its own bytes. Nil when not read from a file.
	Files  []NamedFile
	Config simenv.Config
}

// NamedFile is a file a scenario file names: its name as written there
// (relative to the scenario's folder, or absolute) and the sha256 of its
// bytes.
type NamedFile struct {
	Name, SHA256 string
}

// namedFiles are the files a scenario file's data names, as written, each
// once, in the order named, with their sha256 (read relative to dir).
func namedFiles(data []byte, dir string) ([]NamedFile, error) {
	var f fileScenario
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	var names []string
	if f.Topology != nil && f.Topology.File != "" {
		names = append(names, f.Topology.File)
	}
	for _, w := range f.Workloads {
		n := ""
		switch simenv.WorkloadKind(w.Kind) {
		case simenv.WorkloadCDF:
			n = w.CDF
		case simenv.WorkloadTrace:
			n = w.File
		}
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	out := make([]NamedFile, 0, len(names))
	for _, n := range names {
		path := n
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		b, err := readFile(path, "file", safeio.MaxFlowFileBytes)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		out = append(out, NamedFile{Name: n, SHA256: hex.EncodeToString(sum[:])})
	}
	return out, nil
}

// LoadNamed reads a YAML scenario file as Load does and names it: the
// scenario's name, else the file's base name without its extension.
func LoadNamed(path string) (Named, error) {
	data, err := readFile(path, "scenario", safeio.MaxYAMLBytes) // the same capped read as Load
	if err != nil {
		return Named{}, err
	}
	cfg, err := Parse(data, filepath.Dir(path), path)
	if err != nil {
		return Named{}, err
	}
	files, err := namedFiles(data, filepath.Dir(path))
	if err != nil {
		return Named{}, fmt.Errorf("%s: %w", safeio.DisplayPath(path), err)
	}
	sum := sha256.Sum256(data)
	name := cfg.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return Named{Name: name, Path: filepath.ToSlash(path), SHA256: hex.EncodeToString(sum[:]), Files: files, Config: cfg}, nil
}

// Warnings lists what looks wrong in c without being invalid: an ECN
// threshold below one packet (usually a size in KB read as bytes), or, as
// in effect at some port rate, not below the switch's buffer (usually a
// threshold written at that rate, which ecn states at 100 Gb/s); ECN
// marking off (then no threshold is warned about); headroom below the
// lossless floor; pfc settings that PFC off makes inert (those that differ
// from the defaults: a Config does not say which keys a file gave).
func Warnings(c simenv.Config) []string {
	var out []string
	if !c.PFC.Enabled {
		var inert []string
		if c.PFC.HeadroomBytes > 0 {
			inert = append(inert, "pfc.headroom "+units.FormatBytes(c.PFC.HeadroomBytes))
		}
		if c.PFC.HeadroomFactor > 0 {
			inert = append(inert, fmt.Sprintf("pfc headroom factor %g", c.PFC.HeadroomFactor))
		}
		if c.PFC.HeadroomFormula != "" && c.PFC.HeadroomFormula != simenv.HeadroomIEEE {
			inert = append(inert, "pfc.formula "+c.PFC.HeadroomFormula)
		}
		if c.PFC.XonOffsetBytes != simenv.DefaultXonOffset {
			inert = append(inert, "pfc.xon_offset "+units.FormatBytes(c.PFC.XonOffsetBytes))
		}
		if len(inert) > 0 {
			them := "it"
			if len(inert) > 1 {
				them = "them"
			}
			out = append(out, fmt.Sprintf("%s: no effect with PFC off (pfc.enabled false: no headroom, no PAUSE or RESUME); remove %s or enable PFC",
				strings.Join(inert, ", "), them))
		}
	}
	frame := int64(0)
	if c.MTU > 0 {
		frame = int64(c.MTU + max(c.HeaderBytes, 0))
	}
	if c.ECNOff {
		out = append(out, "ECN marking is off (ENABLE_QCN 0: ns-3's switches then mark nothing): the ECN thresholds, and any policy's ECN settings, change nothing")
	}
	add := func(where string, e simenv.ECN, buffer int64) {
		if c.ECNOff {
			return
		}
		for _, w := range (env.Setting{KminBytes: e.KminBytes, KmaxBytes: e.KmaxBytes, Pmax: e.Pmax}).WarningsAt(frame, buffer) {
			out = append(out, where+": "+w)
		}
	}
	// ecn as stated is in effect at 100G only: its buffer check there
	at100 := int64(0)
	if slices.ContainsFunc(c.Topology.Links, func(l simenv.Link) bool { return l.RateBps == 100e9 }) {
		at100 = c.BufferBytes
	}
	add("ecn", c.ECN, at100)
	rates := make([]float64, 0, len(c.ECNByRate))
	for r := range c.ECNByRate {
		rates = append(rates, r)
	}
	slices.Sort(rates)
	for _, r := range rates {
		add("ecn at "+units.FormatRate(r), c.ECNByRate[r], c.BufferBytes)
	}
	// the thresholds in effect on ports of other rates: ecn, stated at
	// 100G, scaled to each (100Mbps hosts ran at kmin 0B, kmax 2B with no
	// warning)
	var scaled []float64
	for _, l := range c.Topology.Links {
		if _, own := c.ECNByRate[l.RateBps]; !own && l.RateBps != 100e9 && !slices.Contains(scaled, l.RateBps) {
			scaled = append(scaled, l.RateBps)
		}
	}
	// headroom below the lossless floor where it is in effect (pfc.headroom
	// is stated at 100G and scaled too: 40KB at 25G with 400 m cables is
	// 10KB against a 40KB floor, and the lossless class dropped 445
	// packets with no word)
	type rd struct {
		r float64
		d simenv.Time
	}
	seen := map[rd]bool{}
	for _, l := range c.Topology.Links {
		k := rd{l.RateBps, l.Delay}
		if seen[k] {
			continue
		}
		seen[k] = true
		h, f := simenv.PGHeadroom(c, l.RateBps, l.Delay)
		switch {
		case h >= f:
		case c.PFC.HeadroomBytes > 0:
			out = append(out, fmt.Sprintf("pfc.headroom %s (stated at 100Gbps, scaled) is %s in effect at %s with a %v link: below the lossless floor %s, where the lossless class can drop",
				units.FormatBytes(c.PFC.HeadroomBytes), units.FormatBytes(h), units.FormatRate(l.RateBps), l.Delay.Duration(), units.FormatBytes(f)))
		default:
			// a formula's headroom too (hpcc's 3 x rate x delay is 375B
			// on a 10 ns link at 100G, under one frame: 2,925 drops in
			// the lossless class with no word)
			out = append(out, fmt.Sprintf("pfc headroom %s (the %s rule) at %s with a %v link is below the lossless floor %s, where the lossless class can drop",
				units.FormatBytes(h), headroomRule(c), units.FormatRate(l.RateBps), l.Delay.Duration(), units.FormatBytes(f)))
		}
	}
	slices.Sort(scaled)
	for _, r := range scaled {
		f := r / 100e9
		add(fmt.Sprintf("ecn as in effect at %s (stated at 100Gbps, scaled)", units.FormatRate(r)), simenv.ECN{
			KminBytes: int64(math.Round(float64(c.ECN.KminBytes) * f)), KmaxBytes: int64(math.Round(float64(c.ECN.KmaxBytes) * f)), Pmax: c.ECN.Pmax}, c.BufferBytes)
	}
	return out
}

// headroomRule names how the scenario sets each lossless PG's headroom
// when pfc.headroom does not.
func headroomRule(c simenv.Config) string {
	switch {
	case c.PFC.HeadroomFactor > 0:
		return fmt.Sprintf("pfc.headroom_factor %g", c.PFC.HeadroomFactor)
	case c.PFC.HeadroomFormula == simenv.HeadroomHPCC:
		return "pfc.formula hpcc: 3 x rate x link delay"
	}
	return "lossless floor"
}
