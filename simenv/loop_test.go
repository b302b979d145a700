package simenv

import "testing"

// TestLoopKeepsTrafficGoing runs every kind of finite workload past the
// scenario's Duration: without Loop no flow starts after its end, with
// Loop each workload starts flows again in every later repetition, inside
// its window shifted by k*Duration.
func TestLoopKeepsTrafficGoing(t *testing.T) {
	cfg := func(loop bool) Config {
		c := smallLeafSpine(5)
		c.Duration = 1 * Millisecond
		cdf := []CDFPoint{{0, 0}, {1000, 50}, {20000, 100}}
		c.Workloads = []Workload{
			{Kind: WorkloadCDF, Priority: 3, CDF: cdf, Load: 0.3, End: 600 * Microsecond},
			{Kind: WorkloadIncast, Priority: 3, Fanin: 3, SizeBytes: 20_000, Start: 100 * Microsecond},
			{Kind: WorkloadTrace, Priority: 3, Flows: []TraceFlow{
				{Src: 0, Dst: 5, Priority: 3, SizeBytes: 5000, Start: 50 * Microsecond},
				{Src: 1, Dst: 6, Priority: 3, SizeBytes: 5000, Start: 300 * Microsecond}}},
		}
		c.Loop = loop
		return c
	}
	const until = 3500 * Microsecond
	for _, loop := range []bool{false, true} {
		s, err := New(cfg(loop))
		if err != nil {
			t.Fatal(err)
		}
		s.RunUntil(until)
		late := map[int]map[Time]int{} // workload -> repetition -> flows started
		for _, f := range s.Flows() {
			rep := f.Start / Millisecond
			if late[f.Workload] == nil {
				late[f.Workload] = map[Time]int{}
			}
			late[f.Workload][rep]++
			off := f.Start - rep*Millisecond
			switch f.Workload {
			case 0:
				if off >= 600*Microsecond {
					t.Errorf("loop=%v: cdf flow at %v, outside its window [k ms, k ms + 600us)", loop, f.Start)
				}
			case 1:
				if off != 100*Microsecond {
					t.Errorf("loop=%v: incast flow at %v, want k ms + 100us", loop, f.Start)
				}
			case 2:
				if off != 50*Microsecond && off != 300*Microsecond {
					t.Errorf("loop=%v: trace flow at %v, want k ms + 50us or 300us", loop, f.Start)
				}
			}
		}
		for w := 0; w < 3; w++ {
			for rep := Time(0); rep <= 3; rep++ {
				n := late[w][rep]
				if rep == 0 && n == 0 {
					t.Errorf("loop=%v: workload %d started no flow in its first run", loop, w)
				}
				if rep > 0 && !loop && n > 0 {
					t.Errorf("without loop: workload %d started %d flows in repetition %d, after the scenario's end", w, n, rep)
				}
				if rep > 0 && loop && n == 0 {
					t.Errorf("with loop: workload %d started no flow in repetition %d (%v..%v)", w, rep, rep*Millisecond, (rep+1)*Millisecond)
				}
			}
		}
		if want := map[bool]int{false: 3, true: 12}[loop]; late[1][0]+late[1][1]+late[1][2]+late[1][3] != want {
			t.Errorf("loop=%v: %d incast flows, want %d", loop, late[1][0]+late[1][1]+late[1][2]+late[1][3], want)
		}
	}
}
