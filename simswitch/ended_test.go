package simswitch

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
)

// txBytes is the data the switch has sent on all its queues.
func txBytes(s *Server) uint64 {
	tel, _, _ := s.r.telemetry(0, false)
	var n uint64
	for _, p := range tel.Ports {
		for _, q := range p.Queues {
			n += q.TxBytes
		}
	}
	return n
}

// waitSimAt waits until the simulation reaches at.
func waitSimAt(t *testing.T, s *Server, at simenv.Time) { t.Helper(); waitSim(t, s, at) }

// TestScenarioEndIsSaid: a finite scenario's end is logged once and
// reported by Ended, after which no traffic moves; with Loop the traffic
// goes on past the end and nothing is said.
func TestScenarioEndIsSaid(t *testing.T) {
	for _, loop := range []bool{false, true} {
		t.Run(fmt.Sprint("loop=", loop), func(t *testing.T) {
			var mu sync.Mutex
			var lines []string
			s, _ := start(t, gnmipath.OpenConfig, func(c *Config) {
				c.Sim.Name = "short"
				c.Sim.Duration = 300 * simenv.Microsecond
				c.Sim.Workloads[0].End = 250 * simenv.Microsecond
				c.Sim.Loop = loop
				c.Logf = func(f string, a ...any) {
					mu.Lock()
					lines = append(lines, fmt.Sprintf(f, a...))
					mu.Unlock()
				}
			})
			if s.Ended() {
				t.Fatal("Ended at start")
			}
			waitSimAt(t, s, 400*simenv.Microsecond)
			before := txBytes(s)
			waitSimAt(t, s, 900*simenv.Microsecond)
			after := txBytes(s)
			mu.Lock()
			said := 0
			for _, l := range lines {
				if strings.Contains(l, "scenario short ended at simulated") {
					said++
				}
			}
			mu.Unlock()
			if loop {
				if s.Ended() || said != 0 || s.End() != 0 {
					t.Errorf("looping scenario: Ended %v, End %v, end said %d times", s.Ended(), s.End(), said)
				}
				if after <= before {
					t.Errorf("looping scenario: no traffic between 400us and 900us (tx %d -> %d bytes)", before, after)
				}
				return
			}
			if !s.Ended() || said != 1 || s.End() != 300*simenv.Microsecond {
				t.Errorf("finite scenario past its end: Ended %v, End %v, end said %d times (%q)", s.Ended(), s.End(), said, lines)
			}
			if after != before {
				t.Errorf("finite scenario: traffic after its end (tx %d -> %d bytes)", before, after)
			}
		})
	}
}
