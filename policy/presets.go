package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ecntune/ecntune/env"
)

// presetDef is one row of the preset table: the setting stated at
// units.RefRateBps (100 Gb/s), explicit vendor values at other rates, and
// where it comes from.
type presetDef struct {
	name   string
	at100G env.Setting
	byRate map[float64]env.Setting
	source string
}

// presets is the one table of static ECN settings in use today (the
// baselines to beat). Byte figures are stated at 100 Gb/s and scale
// linearly with port rate, except where a vendor states a value for a
// particular rate (byRate), which is then used as is at that rate.
var presets = []presetDef{
	{
		// Stated at 40 Gb/s (5 KB / 200 KB / 1%): ×2.5 to 100 Gb/s, so the
		// 40 Gb/s setting comes back exactly at 40 Gb/s.
		name:   "dcqcn-paper",
		at100G: env.Setting{KminBytes: 12_500, KmaxBytes: 500_000, Pmax: 0.01},
		source: "DCQCN paper, Zhu et al., SIGCOMM 2015 (stated at 40 Gb/s: 5 KB / 200 KB / 1%)",
	},
	{
		// 100 KB and 400 KB per 25 Gb/s.
		name:   "hpcc",
		at100G: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2},
		source: "HPCC simulator's DCQCN runs (simulation/run.py): 100 KB / 400 KB per 25 Gb/s, 20%",
	},
	{
		// The template gives bytes without a rate; taken as stated at 100G.
		name:   "sonic-default",
		at100G: env.Setting{KminBytes: 1_048_576, KmaxBytes: 2_097_152, Pmax: 0.05},
		source: "SONiC AZURE_LOSSLESS WRED profile (qos_config.j2, queues 3 and 4)",
	},
	{
		name:   "sonic-mellanox",
		at100G: env.Setting{KminBytes: 2_000_000, KmaxBytes: 10_000_000, Pmax: 0.05},
		source: "SONiC Mellanox SN4600C WRED profile (sonic-buildimage PR #20265)",
	},
	{
		// NVIDIA gives Kmin and Kmax but no marking probability. We use 10%:
		// the middle of the vendor range (1%..30%), between Cisco's 7% and
		// HPCC's 20%; Kmax is a hard marking edge anyway (every packet
		// above it is marked), so Pmax only shapes the ramp below it.
		name:   "nvidia",
		at100G: env.Setting{KminBytes: 150_000, KmaxBytes: 1_500_000, Pmax: 0.1},
		source: "NVIDIA Onyx / Cumulus RoCE lossless (150 KB / 1500 KB; Pmax not given, 10% chosen)",
	},
	{
		name:   "huawei-latency",
		at100G: env.Setting{KminBytes: 7_000, KmaxBytes: 500_000, Pmax: 0.3},
		byRate: map[float64]env.Setting{25e9: {KminBytes: 7_000, KmaxBytes: 150_000, Pmax: 0.3}},
		source: "Huawei CloudEngine static ECN, latency-sensitive (Kmax 150 KB at 25GE, 500 KB at 100GE)",
	},
	{
		name:   "huawei-throughput",
		at100G: env.Setting{KminBytes: 7_000, KmaxBytes: 750_000, Pmax: 0.1},
		byRate: map[float64]env.Setting{25e9: {KminBytes: 7_000, KmaxBytes: 200_000, Pmax: 0.1}},
		source: "Huawei CloudEngine static ECN, throughput-sensitive (Kmax 200 KB at 25GE, 750 KB at 100GE)",
	},
	{
		name:   "cisco",
		at100G: env.Setting{KminBytes: 150_000, KmaxBytes: 3_000_000, Pmax: 0.07},
		source: "Cisco Nexus AI/ML networking blueprint (100G)",
	},
}

// PresetNames lists the preset names, sorted.
func PresetNames() []string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.name
	}
	sort.Strings(names)
	return names
}

// Static is a Policy that always asks for one preset (or, from NewFixed,
// one explicit setting), scaled to each port's rate.
type Static struct {
	def  presetDef
	kind string // "" for a vendor preset, "fixed" for an explicit setting
}

// kindOr is the policy's kind, or preset for a vendor preset: its
// reasons' label with "preset".
func (s Static) kindOr(preset string) string {
	if s.kind == "" {
		return preset
	}
	return s.kind
}

// Preset returns the preset of that name.
func Preset(name string) (Static, error) {
	for _, p := range presets {
		if p.name == name {
			return Static{def: p}, nil
		}
	}
	return Static{}, fmt.Errorf("unknown preset %q (known: %s)", name, strings.Join(PresetNames(), ", "))
}

// NewStatic returns the static policy of preset name.
func NewStatic(name string) (Policy, error) {
	s, err := Preset(name)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Name is "static:" followed by the preset name, or "fixed:" followed by
// the setting (a Lookup spec).
func (s Static) Name() string {
	if s.kind == "" {
		return StaticPrefix + s.def.name
	}
	return FixedPrefix + s.def.name
}

// Preset is the preset name.
func (s Static) Preset() string { return s.def.name }

// Source says where the preset's figures come from.
func (s Static) Source() string { return s.def.source }

// Setting is the preset at rateBps: the vendor's own value when it states
// one for that rate, else the 100 Gb/s value scaled linearly. A rate that
// is not positive and finite gives the 100 Gb/s value.
func (s Static) Setting(rateBps float64) env.Setting {
	if v, ok := s.def.byRate[rateBps]; ok {
		return v
	}
	return s.def.at100G.ScaledTo(rateBps)
}

// Decide asks for the preset on every queue, keeping each queue's headroom.
// A queue whose link rate is unknown holds its setting.
func (s Static) Decide(obs []env.Observation) []Decision {
	out := make([]Decision, len(obs))
	for i, o := range obs {
		d := Decision{Key: o.Key, Action: -1}
		if !env.KnownRate(o.RateBps) {
			d.Setting = o.Current
			d.Reason = fmt.Sprintf("%s %s: link rate %g is unknown, holding", s.kindOr("preset"), s.def.name, o.RateBps)
			out[i] = d
			continue
		}
		d.Setting = s.Setting(o.RateBps)
		d.Setting.HeadroomBytes = o.Current.HeadroomBytes
		d.Confidence = 1
		d.Reason = s.kindOr("preset") + " " + s.def.name
		out[i] = d
	}
	return out
}
