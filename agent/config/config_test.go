package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/policy"
)

const goodConfig = `
mode: closed-loop
policy: static:hpcc
interval: 500ms
sample-interval: 250ms
db: /tmp/x.db
metrics: ""
targets:
  leaf1:
    address: 127.0.0.1:57400
    insecure: true
    ports: [Ethernet0, Ethernet1]
    fabric-ports: [Ethernet1]
    encoding: proto
  leaf0:
    address: 127.0.0.1:57400
    username: admin
    password: secret
    skip-verify: true
    dialect: sonic
    namespace: leaf0
    queues: [3]
    retry-timer: 500ms
guardrails:
  bounds:
    - rate: 100Gbps
      kmin: [5KB, 2MB]
      kmax: [50KB, 8MB]
      pmax: [0.01, 0.5]
    - rate: 400Gbps
      kmin: [20KB, 8MB]
      kmax: [200KB, 32MB]
      pmax: [0.01, 0.5]
  max-step-ratio: 1.5
  min-hold: 3s
  change-budget: 10
  min-confidence: 0.7
  min-confidence-tighten: 0.2
  min-hold-tighten: 1s
  dwell-loosen: 12
  tighten-unsure-for: 8
  low-confidence: preset
  fallback-preset: sonic-default
  rollback: {window: 4, drop-frac: 0.001, pause-increase: 0.1, reward-drop: 0.2}
  stale-freeze: 2s
  stale-revert: 10s
  alpha: {min: 1/16, max: 2, max-step: 2}
`

func TestParseConfig(t *testing.T) {
	c, err := Parse([]byte(goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != ModeClosedLoop || c.Policy != "static:hpcc" || c.Interval != 500*time.Millisecond ||
		c.SampleInterval != 250*time.Millisecond || c.DB != "/tmp/x.db" || c.Metrics != "" || c.Registry != "" {
		t.Fatalf("top level %+v", c)
	}
	if len(c.Targets) != 2 || c.Targets[0].Name != "leaf0" || c.Targets[1].Name != "leaf1" {
		t.Fatalf("targets %+v", c.Targets)
	}
	l0, l1 := c.Targets[0], c.Targets[1]
	if l0.Dialect != DialectSONiC || !l0.AllPorts || len(l0.Queues) != 1 || l0.Username != "admin" || !l0.SkipVerify ||
		l0.RetryTimer != 500*time.Millisecond || l0.Namespace != "leaf0" || l0.Timeout != 10*time.Second {
		t.Fatalf("leaf0 %+v", l0)
	}
	if l1.Dialect != DialectOpenConfig || l1.Encoding != "proto" || l0.Encoding != "json_ietf" || l1.AllPorts || !l1.WantsPort("Ethernet1") || l1.WantsPort("Ethernet2") ||
		!l1.WantsQueue(4) || l1.WantsQueue(5) || l1.RetryTimer != 2*time.Second {
		t.Fatalf("leaf1 %+v", l1)
	}
	if l0.PeersKnown || l0.PeerOf("Ethernet0") != env.PeerUnknown || !l1.PeersKnown ||
		l1.PeerOf("Ethernet1") != env.PeerSwitch || l1.PeerOf("Ethernet0") != env.PeerHost {
		t.Fatalf("peers: leaf0 %+v, leaf1 %+v", l0.FabricPorts, l1.FabricPorts)
	}
	g := c.Guardrails
	if len(g.Bounds) != 2 || g.Bounds[1].KmaxMax != 32_000_000 || g.MaxStepRatio != 1.5 || g.MinHold != 3*time.Second ||
		g.ChangeBudget != 10 || g.MinConfidence != 0.7 || g.LowConfidence != core.LowConfidencePreset || g.RollbackWindow != 4 ||
		g.RollbackDropFrac != 0.001 || g.RollbackPauseIncrease != 0.1 || g.RollbackRewardDrop != 0.2 ||
		g.StaleFreeze != 2*time.Second || g.StaleRevert != 10*time.Second ||
		g.MinConfidenceTighten != 0.2 || g.MinHoldTighten != time.Second || g.DwellLoosen != 12 ||
		g.TightenUnsureFor != 8 {
		t.Fatalf("guardrails %+v", g)
	}
	if lo, hi, st := g.AlphaLimits(); lo != 1.0/16 || hi != 2 || st != 2 {
		t.Fatalf("alpha limits %g..%g step %g, want 1/16..2 step 2", lo, hi, st)
	}
	if c.FallbackPreset != "sonic-default" || c.SafePreset != "sonic-default" {
		t.Fatalf("presets %q %q", c.FallbackPreset, c.SafePreset)
	}
	// 200G port: nearest entry by log distance is 100G or 400G (equal); bytes scale.
	b := g.BoundsFor(200e9)
	if b.KmaxMax != 16_000_000 || b.KminMax != 4_000_000 {
		t.Fatalf("bounds at 200G %+v", b)
	}
	if b := g.BoundsFor(25e9); b.KminMin != 1250 || b.KmaxMax != 2_000_000 {
		t.Fatalf("bounds at 25G %+v", b)
	}
}

func TestConfigResolvesPresets(t *testing.T) {
	c, err := Parse([]byte(goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	sd, err := policy.Preset("sonic-default")
	if err != nil {
		t.Fatal(err)
	}
	if want := sd.Setting(units.RefRateBps); c.Guardrails.Safe != want || c.FallbackPreset != "" && c.Guardrails.Fallback == (env.Setting{}) {
		t.Fatalf("resolved safe %+v (want %+v), fallback %q %+v", c.Guardrails.Safe, want, c.FallbackPreset, c.Guardrails.Fallback)
	}
	bad := strings.Replace(goodConfig, "guardrails:\n", "guardrails:\n  safe-preset: nope\n", 1)
	if bad == goodConfig {
		t.Fatal("goodConfig has no guardrails block to add to")
	}
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "guardrails.safe-preset") {
		t.Fatalf("unknown safe preset: got %v", err)
	}
}

func TestParseConfigDefaults(t *testing.T) {
	c, err := Parse([]byte("targets:\n  sw0:\n    address: 10.0.0.1:9339\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != ModeShadow || c.Policy != policy.DefaultSpec || c.Interval != time.Second || c.SampleInterval != time.Second ||
		c.DB != "agent.db" || c.Metrics != "127.0.0.1:9273" || c.Targets[0].Queues[0] != 3 || c.Targets[0].Queues[1] != 4 ||
		c.Guardrails.MinHold != 5*time.Second || c.Guardrails.StaleRevert != 30*time.Second || c.Retention != time.Hour ||
		c.Guardrails.MinConfidenceTighten >= 0 || c.Guardrails.MinHoldTighten >= 0 || c.Guardrails.DwellLoosen != 0 {
		t.Fatalf("defaults %+v", c)
	}
	if lo, hi, st := c.Guardrails.AlphaLimits(); lo != core.DefaultAlphaMin || hi != core.DefaultAlphaMax || st != core.DefaultAlphaMaxStep {
		t.Fatalf("alpha limits %g..%g step %g, want the defaults", lo, hi, st)
	}
	// The reward is the configuration's: env.Reward with the default weights.
	m := env.Metrics{IntervalNs: int64(time.Second), Util: 0.6, AvgQueueFrac: 2, PauseRxFrac: 0.1}
	if c.Guardrails.Reward == nil || c.Guardrails.Reward(m) != env.Reward(m, env.DefaultRewardWeights()) {
		t.Fatal("the configuration's reward is not env.Reward with the default weights")
	}
}

func TestParseConfigErrors(t *testing.T) {
	base := "targets:\n  sw0:\n    address: 127.0.0.1:1\n"
	cases := []struct{ doc, want string }{
		{"", "empty configuration"},
		{"targets:\n  sw0: {address: 127.0.0.1:1, commit-confirmed: 100ms}\n", "sw0.commit-confirmed: \"100ms\": want a rollback duration from 1s"},
		{"targets:\n  sw0: {address: 127.0.0.1:1, commit-confirmed: soon}\n", "want a rollback duration"},
		{"targets:\n  sw0: {address: 127.0.0.1:1, device: arista-eos, commit-confirmed: 30s}\n", "device arista-eos does not implement gNMI's commit confirmed extension"},
		{"mode: auto\n" + base, "mode:"},
		{"policy: magic\n" + base, "policy:"},
		{"policy: fixed:2MB/1MB/1%\n" + base, "policy: policy \"fixed:2MB/1MB/1%\": setting \"2MB/1MB/1%\": kmin 2MB is above kmax 1MB"},
		{"policy: schedule:hpcc,nvidia\n" + base, "needs an offset"},
		{"policy: schedule:hpcc,1h=builtin:prefer=2\n" + base, "entry 2 (at 1h): policy \"builtin:prefer=2\": preference 2"},
		{"policy: 'schedule:hpcc,1h=model:'\n" + base, "entry 2 (at 1h): \"model:\" is not allowed"},
		{"policy: schedule:hpcc,1h=model:tuned,prefer=1\n" + base, "model:NAME,prefer=P cannot be one (write model:NAME:prefer=P)"},
		{"policy: schedule:hpcc,1h=model:tuned:prefer=2\n" + base, "entry 2 (at 1h): preference 2: want a number in [-1, 1]"},
		{"policy: schedule:hpcc,1h=schedule:nvidia\n" + base, "a schedule cannot hold a schedule"},
		{"policy: 'daily:08:00=hpcc,20:00=builtin:prefer=2'\n" + base, "entry 2 (at 20:00): policy \"builtin:prefer=2\": preference 2"},
		{"policy: 'daily:08:00=hpcc,07:00=nvidia'\n" + base, "07:00 is not after the previous entry's 08:00"},
		{"policy: 'daily:tz=Nowhere/City,08:00=hpcc'\n" + base, "want an IANA time zone name"},
		{"policy: 'daily:08:00=hpcc,20:00=daily:21:00=hpcc'\n" + base, "a schedule cannot hold a schedule"},
		{"policy: schedule:hpcc,1h=nope\n" + base, "entry 2 (at 1h): unknown preset \"nope\""},
		{"policy: builtin:prefer=2\n" + base, "policy: policy \"builtin:prefer=2\": preference 2: want a number in [-1, 1]"},
		{"policy: model:tuned,prefer=fast\n" + base, "policy: prefer=fast: not a number"},
		{"policy: model:,prefer=0.5\n" + base, "names no model"},
		{"policy: 'roles:host=static:nvidia'\n" + base, "no fabric= part"},
		{"policy: 'roles:host=static:nvidia;fabric=model:,prefer=1'\n" + base, "role fabric: \"model:,prefer=1\" names no model"},
		{"policy: 'roles:host=static:nvidia;fabric=static:nope'\n" + base, "role fabric"},
		{"guardrails: {min-confidence-tighten: 1.5}\n" + base, "guardrails.min-confidence-tighten: 1.5 must be within [0, 1]"},
		{"guardrails: {dwell-loosen: -1}\n" + base, "guardrails.dwell-loosen: -1 must not be negative"},
		{"guardrails: {tighten-unsure-for: -2}\n" + base, "guardrails.tighten-unsure-for: -2 must not be negative"},
		{"guardrails: {min-hold-tighten: soon}\n" + base, "guardrails.min-hold-tighten"},
		{"interval: 1\n" + base, "interval:"},
		{"interval: 1s\nsample-interval: 2s\n" + base, "sample-interval:"},
		{"retention: forever\n" + base, "retention:"},
		{"targets: {}\n", "targets:"},
		{"targets:\n  \"bad host\":\n    insecure: true\n", "targets.bad host.address"},
		{"port: 99999\ntargets:\n  sw0:\n    address: host\n", "line 1: port: \"99999\" is not a port number"},
		{"targets:\n  sw0:\n    address: h:1\n    dialect: junos\n", "targets.sw0.dialect"},
		{"targets:\n  sw0:\n    address: h:1\n    ports: all\n", "targets.sw0.ports"},
		{"targets:\n  sw0:\n    address: h:1\n    ports: [a, a]\n", "targets.sw0.ports"},
		{"targets:\n  sw0:\n    address: h:1\n    queues: [9]\n", "targets.sw0.queues"},
		{"targets:\n  sw0:\n    address: h:1\n    queue-names: {9: AF9}\n", "targets.sw0.queue-names: queue 9 is out of range"},
		{"targets:\n  sw0:\n    address: h:1\n    queue-names: {3: AF3, 4: AF3}\n", "targets.sw0.queue-names: \"AF3\" names both queue 3 and queue 4"},
		{"targets:\n  sw0:\n    address: h:1\n    queue-names: {3: \"4\"}\n", "queue 3 named \"4\", which is the index of another queue"},
		{"targets:\n  sw0:\n    address: h:1\n    queue-names: {3: \" \"}\n", "queue 3 has an empty name"},
		{"targets:\n  sw0:\n    address: h:1\n    dialect: sonic\n    queue-names: {3: AF3}\n", "targets.sw0.queue-names: for openconfig switches only"},
		{"targets:\n  sw0:\n    address: h:1\n    fabric-ports: Ethernet8\n", "targets.sw0.fabric-ports: want a list"},
		{"targets:\n  sw0:\n    address: h:1\n    fabric-ports: Ethernet8\n", "or lldp (discover them from the switch's LLDP neighbours), not \"Ethernet8\""},
		{"targets:\n  sw0:\n    address: h:1\n    fabric-ports: LLDP\n", "or lldp (discover them"},
		{"targets:\n  sw0:\n    address: h:1\n    fabric-ports: ~\n", "targets.sw0.fabric-ports: want a list"},
		{"targets:\n  sw0:\n    address: h:1\n    fabric-ports: {lldp: true}\n", "targets.sw0.fabric-ports: want a list of interface names ([] when every port faces a host) or lldp"},
		{"targets:\n  sw0:\n    address: h:1\n    fabric-ports: [e8, e8]\n", "targets.sw0.fabric-ports: \"e8\" listed twice"},
		{"targets:\n  sw0:\n    address: h:1\n    ports: [e1]\n    fabric-ports: [e8]\n", "targets.sw0.fabric-ports: \"e8\" is not among ports"},
		{"targets:\n  sw0:\n    address: h:1\n    retry-timer: 0s\n", "targets.sw0.retry-timer"},
		{"targets:\n  sw0:\n    address: h:1\n    insecure: true\n    tls-ca: ca.pem\n", "targets.sw0.insecure"},
		{"targets:\n  sw0:\n    address: h:1\n    tls-cert: c.pem\n", "targets.sw0.tls-cert"},
		{"targets:\n  sw0:\n    address: h:1\n    colour: red\n", "line 4: targets.sw0.colour: unknown key; allowed: address, namespace"},
		{"targets:\n  sw0:\n    address: h:1\n    namespace: sw0\n", "targets.sw0.namespace"},
		{"targets:\n  sw0:\n    address: h:1\n    encoding: ascii\n", "targets.sw0.encoding"},
		{"bogus: 1\n" + base, "line 1: bogus: unknown key; allowed: mode, policy,"},
		{base + "guardrails:\n  max-step-ratio: 0.5\n", "guardrails.max-step-ratio"},
		{base + "guardrails:\n  bounds: [{rate: 100G, kmin: [5KB], kmax: [1KB, 2KB], pmax: [0.1, 0.2]}]\n", "guardrails.bounds[0].kmin"},
		{base + "guardrails:\n  bounds: [{kmin: [5KB, 1MB], kmax: [1KB, 2KB], pmax: [0.1, 0.2]}]\n", "guardrails.bounds[0].rate"},
		{base + "guardrails:\n  bounds: [{rate: 100G, kmin: [5KB, 1MB], kmax: [10KB, 2MB], pmax: [0.1]}]\n", "guardrails.bounds[0].pmax"},
		{base + "guardrails:\n  low-confidence: preset\n", "guardrails.fallback-preset"},
		{base + "guardrails:\n  stale-freeze: 10s\n  stale-revert: 5s\n", "guardrails.stale-revert"},
		{base + "guardrails:\n  rollback: {window: 0}\n", "guardrails.rollback.window"},
		{base + "guardrails:\n  alpha: {min: 0}\n", "guardrails.alpha.min: 0 must be > 0"},
		{base + "guardrails:\n  alpha: {min: -1/8}\n", "guardrails.alpha.min: -1/8 must be > 0"},
		{base + "guardrails:\n  alpha: {min: 1/0}\n", "guardrails.alpha.min: \"1/0\" divides by 0"},
		{base + "guardrails:\n  alpha: {max: lots}\n", "guardrails.alpha.max: \"lots\" is not a number or a fraction"},
		{base + "guardrails:\n  alpha: {max: 1/128}\n", "guardrails.alpha.max: 1/128 is below alpha.min 1/64: want min <= max"},
		{base + "guardrails:\n  alpha: {min: 1, max: 1/2}\n", "guardrails.alpha.max: 1/2 is below alpha.min 1: want min <= max"},
		{base + "guardrails:\n  alpha: {max-step: 0.5}\n", "guardrails.alpha.max-step: 0.5 must be a finite number >= 1"},
		{base + "guardrails:\n  alpha: {max-step: 0}\n", "guardrails.alpha.max-step: 0 must be"},
		{base + "guardrails:\n  alpha: {max-step: 3}\n", "guardrails.alpha.max-step: 3 must be a power of two"},
		{base + "guardrails:\n  alpha: {step: 2}\n", "line 5: guardrails.alpha.step: unknown key; allowed: min, max, max-step"},
		{base + "guardrails:\n  rollback: {speed: 2}\n", "line 5: guardrails.rollback.speed: unknown key; allowed: window, drop-frac, pause-increase, reward-drop"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want error containing %q", c.doc, err, c.want)
		}
	}
}

// An unknown key and values of the wrong type are all said at once, each
// as the file gives it: the unknown key hid the others, and a value of the
// wrong type, read as 0, was reported as "0 must be at least 1".
func TestParseConfigUnknownKeysAndWrongTypesAtOnce(t *testing.T) {
	_, err := Parse([]byte("bogus: 1\ntargets:\n  sw0:\n    address: h:1\n    queues: three\nguardrails:\n  change-budget: lots\n"))
	want := "3 errors:\n  line 1: bogus: unknown key; allowed: mode, policy,"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), `line 5: targets.sw0.queues: want a list, got "three"`) ||
		!strings.Contains(err.Error(), `line 7: guardrails.change-budget: want a whole number, got "lots"`) || strings.Contains(err.Error(), "must be at least") {
		t.Fatalf("got %v", err)
	}
}

// queue-names maps queue indices to the names a switch gives them.
func TestParseConfigQueueNames(t *testing.T) {
	c, err := Parse([]byte("targets:\n  sw0:\n    address: h:1\n    device: arista-eos\n    queues: [3, 4]\n    queue-names: {3: AF3, 4: AF4}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if q := c.Targets[0].QueueNames; len(q) != 2 || q[3] != "AF3" || q[4] != "AF4" {
		t.Fatalf("queue names %v", q)
	}
}

// fabric-ports: lldp asks for discovery: no list, peers unknown until the
// agent has read the switch's LLDP neighbours (then PeerFrom has them).
func TestParseConfigFabricPortsLLDP(t *testing.T) {
	for _, v := range []string{"lldp", `"lldp"`} {
		c, err := Parse([]byte("targets:\n  sw0:\n    address: h:1\n    ports: [Ethernet0, Ethernet1]\n    fabric-ports: " + v + "\n"))
		if err != nil {
			t.Fatalf("fabric-ports: %s: %v", v, err)
		}
		tc := c.Targets[0]
		if !tc.DiscoverPeers || tc.PeersKnown || len(tc.FabricPorts) != 0 || tc.PeerOf("Ethernet0") != env.PeerUnknown {
			t.Fatalf("fabric-ports: %s: %+v", v, tc)
		}
		found := map[string]env.Peer{"Ethernet0": env.PeerSwitch, "Ethernet1": env.PeerHost}
		if tc.PeerFrom(found, "Ethernet0") != env.PeerSwitch || tc.PeerFrom(found, "Ethernet1") != env.PeerHost ||
			tc.PeerFrom(found, "Ethernet2") != env.PeerUnknown || tc.PeerFrom(nil, "Ethernet0") != env.PeerUnknown {
			t.Fatalf("fabric-ports: %s: PeerFrom %v", v, found)
		}
	}
	// A list is still a list, and PeerFrom ignores discoveries for it.
	c, err := Parse([]byte("targets:\n  sw0:\n    address: h:1\n    fabric-ports: [Ethernet1]\n"))
	if err != nil {
		t.Fatal(err)
	}
	tc := c.Targets[0]
	if tc.DiscoverPeers || tc.PeerFrom(map[string]env.Peer{"Ethernet1": env.PeerHost}, "Ethernet1") != env.PeerSwitch ||
		tc.PeerFrom(nil, "Ethernet0") != env.PeerHost {
		t.Fatalf("list: %+v", tc)
	}
}

func TestLoadConfigNamesFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "agent.yaml")
	os.WriteFile(p, []byte("mode: x\n"), 0o644)
	_, err := Load(p)
	if err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), "line 1: mode:") {
		t.Fatalf("got %v", err)
	}
	if _, err := Load(p + ".missing"); err == nil || !strings.Contains(err.Error(), "agent.yaml.missing") {
		t.Fatalf("got %v", err)
	}
}

func TestParseConfigPreference(t *testing.T) {
	base := "targets:\n  sw0:\n    address: 127.0.0.1:1\n"
	for _, p := range []string{"builtin:prefer=-0.5", "model:tuned,prefer=0.25", "model:tuned@2,prefer=-1",
		"roles:host=model:tuned,prefer=0.5;fabric=static:sonic-default+headroom=floor",
		"schedule:builtin:prefer=-1,3h=builtin:prefer=1,9h=model:tuned@2+headroom=floor",
		"roles:host=schedule:hpcc,1h=builtin;fabric=builtin",
		"daily:08:00=builtin:prefer=1,20:00=model:tuned+headroom=floor",
		"daily:tz=America/New_York,08:00=builtin:prefer=1,20:00=builtin",
		"model:tuned:prefer=0.5", "schedule:hpcc,3h=model:tuned@2:prefer=1,9h=model:tuned:prefer=-1",
		"daily:08:00=model:tuned:prefer=1,20:00=hpcc"} {
		c, err := Parse([]byte("policy: " + p + "\n" + base))
		if err != nil || c.Policy != p {
			t.Errorf("policy %s: %+v %v", p, c, err)
		}
	}
}

// The shipped example configurations parse.
func TestExampleConfigsParse(t *testing.T) {
	paths, err := filepath.Glob("../../examples/agent-*.yaml")
	if err != nil || len(paths) < 2 {
		t.Fatalf("examples: %v %v", paths, err)
	}
	for _, p := range paths {
		c, err := Load(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if len(c.Targets) == 0 || c.Policy == "" {
			t.Errorf("%s: %+v", p, c)
		}
		// The examples serve a 4-leaf, 2-spine simswitch fabric: leaves
		// have two uplinks, spines face leaves only (or the agent finds
		// that out, with fabric-ports: lldp).
		for _, tc := range c.Targets {
			if tc.DiscoverPeers {
				if len(tc.FabricPorts) != 0 || tc.PeersKnown || tc.Address == "" {
					t.Errorf("%s: target %s: fabric-ports: lldp with %v", p, tc.Name, tc.FabricPorts)
				}
				continue
			}
			want := 2
			if strings.HasPrefix(tc.Name, "spine") {
				want = 4
			}
			if len(tc.FabricPorts) != want || tc.Address == "" || tc.PeerOf("Ethernet3") == env.PeerUnknown {
				t.Errorf("%s: target %s: fabric-ports %v, address %q", p, tc.Name, tc.FabricPorts, tc.Address)
			}
		}
	}
}

// One switch under two target names would get every change twice, with
// budget and holds counted per name: a configuration error naming both.
func TestParseConfigDuplicateSwitch(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		// sonic sends no target name: the address (and namespace) is the switch.
		{"targets:\n  a: {address: 'sw1:9339', dialect: sonic}\n  b: {address: 'SW1:9339', dialect: sonic}\n",
			`targets.a (address sw1:9339) and targets.b (address SW1:9339) name the same switch`},
		{"targets:\n  a: {address: 'sw1:9339', dialect: sonic, namespace: asic0}\n  b: {address: 'sw1:9339', dialect: sonic, namespace: asic0}\n",
			`targets.a (address sw1:9339) and targets.b (address sw1:9339) name the same switch (address sw1:9339, namespace asic0)`},
		// "localhost" and no namespace select the same (default) namespace.
		{"targets:\n  a: {address: 'sw1:9339', dialect: sonic, namespace: localhost}\n  b: {address: 'sw1:9339', dialect: sonic}\n",
			`targets.a (address sw1:9339) and targets.b (address sw1:9339) name the same switch`},
		{"targets:\n  a: {address: '[::1]:9339', dialect: sonic}\n  b: {address: '[0:0::1]:9339', dialect: sonic}\n",
			`targets.a (address [::1]:9339) and targets.b (address [0:0::1]:9339) name the same switch`},
		{"targets:\n  a: {address: 'sw1:9339', dialect: sonic}\n  b: {address: 'sw1:09339', dialect: sonic}\n",
			`targets.a (address sw1:9339) and targets.b (address sw1:09339) name the same switch`},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.doc, err, c.want)
		}
	}
	// Distinct switches: openconfig names the switch by its target name
	// (prefix.target), so several may share an address (as simswitch
	// serves a fabric); sonic ones differ by namespace or address.
	for _, doc := range []string{
		"targets:\n  leaf0: {address: 'h:1'}\n  leaf1: {address: 'h:1'}\n",
		"targets:\n  a: {address: 'h:1', dialect: sonic, namespace: asic0}\n  b: {address: 'h:1', dialect: sonic, namespace: asic1}\n",
		"targets:\n  a: {address: 'h:1', dialect: sonic}\n  b: {address: 'h:2', dialect: sonic}\n",
	} {
		if _, err := Parse([]byte(doc)); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

// writeTLSFiles writes a self-signed certificate and its key as PEM into
// dir and returns their paths.
func writeTLSFiles(t *testing.T, dir string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ecntune test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certPath, keyPath
}

// TLS files are read when the configuration is: a CA that is not PEM, or
// a certificate and key that are no pair, are configuration errors rather
// than a dial that fails forever.
func TestParseConfigTLSFiles(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeTLSFiles(t, dir)
	_, otherKey := writeTLSFiles(t, t.TempDir())
	notPEM := filepath.Join(dir, "ca.txt")
	os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644)
	target := func(extra string) string { return "targets:\n  sw0:\n    address: h:1\n" + extra }
	for _, c := range []struct{ doc, want string }{
		{target("    tls-ca: " + notPEM + "\n"), "targets.sw0.tls-ca: " + notPEM + ": no PEM certificate"},
		{target("    tls-ca: " + filepath.Join(dir, "none.pem") + "\n"), "targets.sw0.tls-ca: open " + filepath.Join(dir, "none.pem")},
		{target("    tls-cert: " + cert + "\n    tls-key: " + otherKey + "\n"), "targets.sw0.tls-cert/tls-key: "},
		{target("    tls-cert: " + notPEM + "\n    tls-key: " + key + "\n"), "targets.sw0.tls-cert/tls-key: "},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.doc, err, c.want)
		}
	}
	c, err := Parse([]byte(target("    tls-ca: " + cert + "\n    tls-cert: " + cert + "\n    tls-key: " + key + "\n")))
	if err != nil || c.Targets[0].TLSCA != cert {
		t.Fatalf("valid TLS files: %v", err)
	}
}

// Intervals have a floor: interval: 1ns would spin the loop.
func TestParseConfigIntervalFloor(t *testing.T) {
	base := "targets:\n  sw0:\n    address: 127.0.0.1:1\n"
	for _, c := range []struct{ doc, want string }{
		{"interval: 1ns\n" + base, "interval: 1ns is below the minimum of 100ms"},
		{"interval: 99ms\n" + base, "interval: 99ms is below the minimum of 100ms"},
		{"interval: 1s\nsample-interval: 10ms\n" + base, "sample-interval: 10ms is below the minimum of 100ms"},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.doc, err, c.want)
		}
	}
	c, err := Parse([]byte("interval: 100ms\n" + base))
	if err != nil || c.Interval != MinInterval || c.SampleInterval != MinInterval {
		t.Fatalf("interval at the floor: %+v %v", c, err)
	}
}

// Two bounds for one link rate: which one applies would be an accident.
func TestParseConfigDuplicateBoundsRate(t *testing.T) {
	doc := "targets:\n  sw0:\n    address: h:1\nguardrails:\n  bounds:\n" +
		"    - {rate: 100Gbps, kmin: [5KB, 2MB], kmax: [50KB, 8MB], pmax: [0.01, 0.5]}\n" +
		"    - {rate: 400Gbps, kmin: [20KB, 8MB], kmax: [200KB, 32MB], pmax: [0.01, 0.5]}\n" +
		"    - {rate: 100G, kmin: [5KB, 1MB], kmax: [50KB, 4MB], pmax: [0.01, 0.5]}\n"
	_, err := Parse([]byte(doc))
	if err == nil || !strings.Contains(err.Error(), "guardrails.bounds[2].rate: 100G is the rate of guardrails.bounds[0] too") {
		t.Fatalf("got %v", err)
	}
}

// A gnmic targets block works as pasted: the key is the address (default
// port 57400), top-level username/password/insecure/skip-verify/encoding
// are defaults for every target, encodings are case-insensitive, and
// gnmic-only keys are ignored with one note naming them.
func TestParseConfigGnmicTargets(t *testing.T) {
	c, err := Parse([]byte(`
username: admin
password: secret
insecure: true
encoding: JSON_IETF
timeout: 5s
subscriptions:
  sub1: {paths: [/interfaces], stream-mode: sample}
outputs:
  out1: {type: file, file-type: stdout}
targets:
  172.17.0.100:
    subscriptions: [sub1]
    outputs: [out1]
  172.17.0.101:
    username: other
    insecure: false
    skip-verify: true
    tls-server-name: sw1
  "172.17.0.102:57000":
    encoding: PROTO
  "[2001:db8::1]":
  sw3:
    address: sw3.example.net
    name: leaf3
`))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Target{}
	for _, tg := range c.Targets {
		by[tg.Name] = tg
	}
	want := map[string]struct {
		addr, user, enc  string
		insecure, verify bool
	}{
		"172.17.0.100":       {"172.17.0.100:57400", "admin", "json_ietf", true, false},
		"172.17.0.101":       {"172.17.0.101:57400", "other", "json_ietf", false, true},
		"172.17.0.102:57000": {"172.17.0.102:57000", "admin", "proto", true, false},
		"[2001:db8::1]":      {"[2001:db8::1]:57400", "admin", "json_ietf", true, false},
		"sw3":                {"sw3.example.net:57400", "admin", "json_ietf", true, false},
	}
	if len(by) != len(want) {
		t.Fatalf("targets %v", by)
	}
	for n, w := range want {
		g := by[n]
		if g.Address != w.addr || g.Username != w.user || g.Password != "secret" && n != "172.17.0.101" || g.Encoding != w.enc ||
			g.Insecure != w.insecure || g.SkipVerify != w.verify || g.Timeout != 5*time.Second {
			t.Errorf("%s: %+v, want %+v", n, g, w)
		}
	}
	if len(c.Notes) != 1 {
		t.Fatalf("notes %q, want one line", c.Notes)
	}
	for _, k := range []string{"subscriptions", "outputs", "targets.172.17.0.100.subscriptions", "targets.172.17.0.101.tls-server-name", "targets.sw3.name"} {
		if !strings.Contains(c.Notes[0], k) {
			t.Errorf("note %q does not name %s", c.Notes[0], k)
		}
	}
	if _, err := Parse([]byte("targets:\n  sw0:\n    encoding: ascii\n")); err == nil || !strings.Contains(err.Error(), "targets.sw0.encoding") {
		t.Fatalf("unsupported encoding: %v", err)
	}
	if _, err := Parse([]byte("targets:\n  sw0:\n    subscriptionz: [x]\n")); err == nil || !strings.Contains(err.Error(), "subscriptionz") {
		t.Fatalf("a key neither ecntune's nor gnmic's must still be an error: %v", err)
	}
	// an address's own port is checked as the top-level port is (it
	// passed, and the agent retried "unknown port" forever)
	for _, addr := range []string{"127.0.0.1:notaport", "127.0.0.1:0", "[::1]:70000"} {
		if _, err := Parse([]byte("targets:\n  sw0:\n    address: \"" + addr + "\"\n")); err == nil || !strings.Contains(err.Error(), "targets.sw0.address") ||
			!strings.Contains(err.Error(), "is not a port number") {
			t.Errorf("address %s: %v", addr, err)
		}
	}
}

// A target naming a device whose server refuses fast sampling (sonic-gnmi:
// 1 s) is a configuration error when sample-interval is faster.
func TestConfigDeviceSampleFloor(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.yaml")
	body := "mode: shadow\ninterval: 500ms\nsample-interval: 500ms\ndb: a.db\ntargets:\n  leaf0:\n    address: 127.0.0.1:57400\n    insecure: true\n    device: sonic\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), "targets.leaf0.device: sonic samples no faster than every 1s") {
		t.Fatalf("got %v", err)
	}
	body = strings.ReplaceAll(body, "500ms", "1s")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(p); err != nil || c.Targets[0].Dialect != DialectSONiC {
		t.Fatalf("sonic at 1 s: %v %+v", err, c)
	}
}

// Relative db, registry and TLS paths are the config file's neighbours,
// wherever the agent starts; absolute ones stay.
func TestLoadConfigPathsRelativeToTheFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conf")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "agent.yaml")
	abs := filepath.Join(t.TempDir(), "models.db")
	doc := "db: state/agent.db\nregistry: " + abs + "\ntargets:\n  sw0:\n    address: 127.0.0.1:1\n    tls-ca: ca.pem\n"
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "ca.pem")) {
		t.Fatalf("tls-ca is not read next to the config: %v", err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(doc, "    tls-ca: ca.pem\n", "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.DB != filepath.Join(dir, "state", "agent.db") || c.Registry != abs {
		t.Errorf("db %s, registry %s", c.DB, c.Registry)
	}
	if err := os.WriteFile(p, []byte("targets:\n  sw0:\n    address: 127.0.0.1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err = Load(p); err != nil || c.DB != filepath.Join(dir, "agent.db") {
		t.Errorf("default db %s (%v), want it beside the config", c.DB, err)
	}
}

// Shadow mode keeps every interval's recommendations by default, a closed
// loop only when store-recommendations says so.
func TestStoreRecommendationsDefaults(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want bool
	}{{"mode: shadow\n", true}, {"mode: closed-loop\n", false}, {"mode: closed-loop\nstore-recommendations: true\n", true},
		{"mode: shadow\nstore-recommendations: false\n", false}} {
		cfg, err := Parse([]byte(c.doc + "targets:\n  sw0:\n    address: 127.0.0.1:1\n"))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.StoresRecommendations() != c.want {
			t.Errorf("%q: stores %v", c.doc, !c.want)
		}
	}
}

// Errors name the line and the field path, and a value of the wrong type
// inside an anchor is reported once, at the anchor, however many aliases
// use it (yaml.v3 said "line 5: cannot unmarshal !!str `a` into int" once
// per alias, without the field).
func TestConfigErrorsNameLineAndField(t *testing.T) {
	anchored := `targets:
  leaf0: &sim
    address: 127.0.0.1:57400
    insecure: true
    queues: [3, four]
  leaf1: *sim
  leaf2: *sim
guardrails:
  change-budget: many
  max-step-ratio: [2]
`
	_, err := Parse([]byte(anchored))
	if err == nil {
		t.Fatal("accepted")
	}
	want := "3 errors:\n" +
		"  line 5: targets.leaf0.queues[1]: want a whole number, got \"four\"\n" +
		"  line 9: guardrails.change-budget: want a whole number, got \"many\"\n" +
		"  line 10: guardrails.max-step-ratio: want a number, got a list"
	if err.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", err, want)
	}
	_, err = Parse([]byte("guardrails:\n  min-hold: 1s\n  min-hold: 2s\ntargets: {sw0: {address: 'h:1'}}\n"))
	if err == nil || err.Error() != "line 3: guardrails.min-hold: given twice (first on line 2)" {
		t.Errorf("duplicate key: %v", err)
	}
	// A long value (yaml.v3 shortens it in its message) is still found.
	_, err = Parse([]byte("targets:\n  sw0:\n    address: h:1\n    insecure: definitely-not-a-bool\n"))
	if err == nil || err.Error() != `line 4: targets.sw0.insecure: want true or false, got "definitely-not-a-bool"` {
		t.Errorf("long value: %v", err)
	}

	// Errors found after decoding carry the line of their field, or of its
	// nearest parent in the file when the field is missing.
	for _, c := range []struct{ doc, want string }{
		{"mode: auto\ntargets: {sw0: {address: 'h:1'}}\n", "line 1: mode: \"auto\" is not allowed"},
		{"targets:\n  sw0:\n    address: h:1\n    queues: [9]\n", "line 4: targets.sw0.queues: 9 is out of range"},
		{"targets:\n  sw0:\n    address: 'h:1'\n    tls-cert: c.pem\n", "line 4: targets.sw0.tls-cert/tls-key: give both or neither"},
		{"targets:\n  sw0:\n    address: 'h:1'\n    retry-timer: 0s\n", "line 4: targets.sw0.retry-timer: must be positive"},
		{"targets:\n  \"bad host\":\n    insecure: true\n", "line 2: targets.bad host.address: "},
		{"targets: {sw0: {address: 'h:1'}}\nguardrails:\n  bounds:\n    - rate: 100Gbps\n      kmin: [5KB, 2MB]\n      kmax: [10KB, 3MB]\n      pmax: [0.01, 0.5]\n    - rate: 100G\n      kmin: [400, 2MB]\n      kmax: [10KB, 3MB]\n      pmax: [0.01, 0.5]\n",
			"line 9: guardrails.bounds[1].kmin: size \"400\" has no unit: write 400KB"},
		{"targets: {sw0: {address: 'h:1'}}\nguardrails:\n  bounds:\n    - {rate: 100Gbps, kmin: [5KB, 2MB], kmax: [10KB, 3MB], pmax: [0.01, high]}\n",
			"line 4: guardrails.bounds[0].pmax: \"high\" is not a fraction"},
		{"targets: {sw0: {address: 'h:1'}}\nguardrails:\n  bounds:\n    - {rate: 100, kmin: [5KB, 2MB], kmax: [10KB, 3MB], pmax: [0.01, 0.5]}\n",
			"line 4: guardrails.bounds[0].rate: rate \"100\" has no unit: write 100Gbps"},
		{"targets: {sw0: {address: 'h:1'}}\npolicy: fixed:400/1600KB/20%\n", "line 2: policy: policy \"fixed:400/1600KB/20%\": setting \"400/1600KB/20%\": kmin: size \"400\" has no unit: write 400KB"},
		{"targets: {sw0: {address: 'h:1'}}\npolicy: schedule:sonic-default,5ms=400KB/1600/1%\n", "line 2: policy: policy \"schedule:"},
		{"targets: {}\n", "line 1: targets: at least one target"},
		{"targets: {sw0: {address: 'h:1'}}\nguardrails:\n  alpha:\n    min: 1/64\n    max-step: 3\n", "line 5: guardrails.alpha.max-step: 3 must be a power of two"},
		{"targets: {sw0: {address: 'h:1'}}\nguardrails:\n  alpha:\n    min: 1/4\n    max: 1/8\n", "line 5: guardrails.alpha.max: 1/8 is below alpha.min 1/4"},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s...", c.doc, err, c.want)
		}
	}
	// An error about no field of the file has no line.
	if _, err := Parse([]byte("mode: shadow\n")); err == nil || err.Error() != "targets: at least one target is required" {
		t.Errorf("no targets: %v", err)
	}
}

// Guardrail bounds take Pmax as fractions or percentages, and a Kmin or
// Kmax bound below one MTU, or a fixed:/schedule: threshold, is a warning
// (not an error) that the agent logs at start.
func TestConfigPmaxPercentAndMTUWarnings(t *testing.T) {
	doc := `policy: schedule:sonic-default,1h=1000B/400KB/1%
targets: {sw0: {address: 'h:1'}}
guardrails:
  bounds:
    - {rate: 100Gbps, kmin: [0, 2MB], kmax: [1KB, 3MB], pmax: [1%, 0.5]}
    - {rate: 400Gbps, kmin: [20KB, 8MB], kmax: [200KB, 32MB], pmax: ["0.5%", 50%]}
`
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if b := c.Guardrails.Bounds; b[0].PmaxMin != 0.01 || b[0].PmaxMax != 0.5 || b[1].PmaxMin != 0.005 || b[1].PmaxMax != 0.5 {
		t.Errorf("pmax bounds %+v", b)
	}
	want := []string{
		"policy schedule:sonic-default,1h=1000B/400KB/1%: entry 2 (at 1h): kmin 1KB is below one MTU (1.5KB)",
		"guardrails.bounds[0].kmax: the minimum 1KB is below one MTU (1.5KB)",
	}
	if len(c.Warnings) != len(want) {
		t.Fatalf("warnings %q, want %d", c.Warnings, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(c.Warnings[i], w) {
			t.Errorf("warning %d: %q, want %q...", i, c.Warnings[i], w)
		}
	}
	// The defaults and the examples warn about nothing.
	c, err = Parse([]byte("targets: {sw0: {address: 'h:1'}}\n"))
	if err != nil || len(c.Warnings) != 0 {
		t.Errorf("defaults: %q, %v", c.Warnings, err)
	}
}

// Every policy spec eval takes is checked at load, +headroom= included:
// builtin+headroom=floor was refused, static:NO-SUCH-PRESET and a bad
// headroom factor on static: or model: were accepted until the start.
func TestConfigPolicySpecs(t *testing.T) {
	base := "targets: {sw0: {address: 'h:1'}}\n"
	for _, p := range []string{"builtin+headroom=floor", "adaptive+headroom=default", "static:hpcc+headroom=floor*1.5",
		"fixed:400KB/1600KB/1%+headroom=floor", "model:x+headroom=floor", "builtin:prefer=0.5+headroom=floor*2", "static:hpcc",
		"builtin+headroom=model:hdrm", "builtin+headroom=floor+alpha=2", "model:x+alpha=1/8", "static:hpcc+alpha=0.5+headroom=floor",
		"roles:host=builtin+headroom=floor;fabric=builtin+headroom=floor+alpha=2"} {
		if _, err := Parse([]byte("policy: " + p + "\n" + base)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for p, want := range map[string]string{
		"static:no-such":                     "no-such",
		"static:hpcc+headroom=floor*99":      "headroom=floor*99: want floor*F with F in [1, 10]",
		"model:x+headroom=ceiling":           "headroom=ceiling: want floor, floor*F, default or model:NAME",
		"'builtin+headroom=model:'":          "headroom=model:NAME names no model",
		"fixed:400/1600KB/1%+headroom=floor": `kmin: size "400" has no unit`,
		"magic+headroom=floor":               `"magic" is not allowed`,
		"builtin+headroom=floor+alpha=3":     "alpha=3: want a power of two from 1/64 to 8",
		"magic+alpha=2":                      `"magic" is not allowed`,
	} {
		_, err := Parse([]byte("policy: " + p + "\n" + base))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "line 1: policy: ") {
			t.Errorf("%s: %v, want it to say %q", p, err, want)
		}
	}
}

// The configuration refuses an agent db that is the model registry.
func TestParseConfigDBIsRegistry(t *testing.T) {
	_, err := Parse([]byte("db: ./m.db\nregistry: m.db\ntargets:\n  sw0:\n    address: h:1\n"))
	if err == nil || !strings.Contains(err.Error(), "db: ./m.db is also the model registry (registry: m.db)") {
		t.Fatalf("got %v", err)
	}
}

// approve: true needs a closed loop; retry-after is a duration.
func TestConfigApproveAndRetryAfter(t *testing.T) {
	tg := "targets: {sw0: {address: 'h:1'}}\n"
	if _, err := Parse([]byte("mode: shadow\napprove: true\n" + tg)); err == nil || !strings.Contains(err.Error(), "approve: only a closed loop") {
		t.Errorf("approve in shadow mode: %v", err)
	}
	c, err := Parse([]byte("mode: closed-loop\napprove: true\nguardrails: {rollback: {retry-after: 20s}}\n" + tg))
	if err != nil || !c.Approve || c.Guardrails.RollbackRetryAfter != 20*time.Second {
		t.Fatalf("%+v, %v", c, err)
	}
	if _, err := Parse([]byte("guardrails: {rollback: {retry-after: soon}}\n" + tg)); err == nil || !strings.Contains(err.Error(), "guardrails.rollback.retry-after") {
		t.Errorf("a bad retry-after: %v", err)
	}
}

// Every error about a value comes at once, with the values of the wrong
// type: a file with four mistakes is fixed in one run, not four.
func TestConfigValueErrorsAtOnce(t *testing.T) {
	doc := `targets:
  sw0:
    address: h:1
    insecure: yes-please
  sw1:
    address: h:2
    retry-timer: 0s
interval: 1
guardrails:
  min-hold: 5
  bounds:
    - {rate: 100Gbps, kmin: [400, 5MB], kmax: [20KB, 12000000], pmax: [0.01, 1.0]}
`
	_, err := Parse([]byte(doc))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"line 4: targets.sw0.insecure: want true or false",
		"line 7: targets.sw1.retry-timer: must be positive",
		"line 8: interval: ",
		"line 10: guardrails.min-hold: ",
		"line 12: guardrails.bounds[0].kmin: size \"400\" has no unit",
		"line 12: guardrails.bounds[0].kmax: size \"12000000\" has no unit: write 12000000B (12MB)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
	if !strings.HasPrefix(err.Error(), "6 errors:\n") {
		t.Errorf("want 6 errors, got\n%v", err)
	}
}

// set-timeout: 60 s under sonic-gnmi unless given, none (the agent's)
// elsewhere and on simswitch's ecntune-sonic; a value out of range names
// the key.
func TestSetTimeout(t *testing.T) {
	for _, c := range []struct {
		target string
		want   time.Duration
		err    string
	}{
		{`{address: "127.0.0.1:1", device: sonic}`, SonicSetTimeout, ""},
		{`{address: "127.0.0.1:1", dialect: sonic}`, SonicSetTimeout, ""},
		{`{address: "127.0.0.1:1", device: ecntune-sonic}`, 0, ""},
		{`{address: "127.0.0.1:1"}`, 0, ""},
		{`{address: "127.0.0.1:1", device: sonic, set-timeout: 2m}`, 2 * time.Minute, ""},
		{`{address: "127.0.0.1:1", set-timeout: 20s}`, 20 * time.Second, ""},
		{`{address: "127.0.0.1:1", set-timeout: 500ms}`, 0, `targets.sw0.set-timeout: "500ms": want a duration from 1s to 10m0s`},
		{`{address: "127.0.0.1:1", set-timeout: soon}`, 0, `targets.sw0.set-timeout: "soon"`},
	} {
		cfg, err := Parse([]byte("targets:\n  sw0: " + c.target + "\n"))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want %q", c.target, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.target, err)
			continue
		}
		if got := cfg.Targets[0].SetTimeout; got != c.want {
			t.Errorf("%s: set timeout %v, want %v", c.target, got, c.want)
		}
	}
}

// A target's zone is read (fleet placement keeps the switch with an
// agent of its zone); it was refused as an unknown key while fleet.zone
// was taken and did nothing.
func TestTargetZone(t *testing.T) {
	cfg, err := Parse([]byte("targets:\n  sw0: {address: \"127.0.0.1:1\", zone: row1}\n  sw1: {address: \"127.0.0.1:2\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Targets[0].Zone != "row1" || cfg.Targets[1].Zone != "" {
		t.Fatalf("zones %q, %q", cfg.Targets[0].Zone, cfg.Targets[1].Zone)
	}
}

// Every guardrail value the agent cannot use is listed at once, each on
// its line, not the first alone (three more came one per rerun).
func TestEveryGuardrailErrorAtOnce(t *testing.T) {
	_, err := Parse([]byte("intreval: 1s\ntargets:\n  sw0: {address: \"127.0.0.1:1\"}\n" +
		"guardrails: {change-budget: -3, min-confidence: 7, idle-util: 5, rollback: {window: -1}}\n"))
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, w := range []string{"5 errors:", "line 1: intreval: unknown key", "line 4: guardrails.change-budget: -3 must be at least 1",
		"line 4: guardrails.min-confidence: 7 must be within [0, 1]", "line 4: guardrails.idle-util: 5 must be in [0, 1)",
		"line 4: guardrails.rollback.window: -1 must be at least 1 interval"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
}
