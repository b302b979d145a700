// Package simtest starts simulated switches for tests: a small fabric
// served as gNMI targets on a free loopback port, stopped when the test
// ends.
package simtest

import (
	"context"
	"testing"
	"time"

	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simswitch"
)

// Star is four hosts at 100 Gb/s on one switch, seeded, with ecn on every
// queue and a 3-to-1 incast of 300 KB every 100 µs on priority 3.
func Star(ecn simenv.ECN) simenv.Config {
	cfg := simenv.DefaultConfig()
	cfg.Seed = 7
	cfg.Topology = simenv.StarTopology(4, 100e9, simenv.Microsecond)
	cfg.ECN = ecn
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Fanin: 3, SizeBytes: 300_000, Every: 100 * simenv.Microsecond, Priority: 3}}
	return cfg
}

// Start serves cfg as gNMI targets of dialect d on 127.0.0.1 (200 times
// faster than real time; mod, when given, adjusts the configuration) and
// returns the server and its address.
func Start(t testing.TB, cfg simenv.Config, d gnmipath.Dialect, mod func(*simswitch.Config)) (*simswitch.Server, string) {
	t.Helper()
	sc := simswitch.Config{Sim: cfg, Dialect: d, Listen: "127.0.0.1:0", Timescale: 200, Step: 2 * time.Millisecond}
	if mod != nil {
		mod(&sc)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, addr, err := simswitch.Start(ctx, sc)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); s.Close() })
	return s, addr
}
