package simenv

import (
	"math"
	"math/rand/v2"
	"testing"
)

// mlxTimers is DCQCN as ns-3 HPCC's RdmaHw runs it (Mellanox form), with a
// real event per timer tick: the alpha timer every AlphaTimer from the first
// CNP, the rate-decrease check every DecreaseTimer from the first CNP plus
// 1 ns, and the rate-increase timer every IncreaseTimer from the last cut.
// Timers due at the same instant run in the order ns-3 scheduled them: the
// increase timer (scheduled 300 us earlier) before the decrease check
// (scheduled 4 us earlier). The engine computes the same thing lazily.
type mlxTimers struct {
	d                   DCQCNConfig
	maxRate             float64
	rate, target, alpha float64
	started             bool
	alphaFlag, decFlag  bool
	stage               int
	nextAlpha, nextDec  Time
	nextInc             Time // -1: not armed yet
}

func (m *mlxTimers) cnp(t Time) {
	m.alphaFlag, m.decFlag = true, true
	if !m.started {
		m.started = true
		m.alpha = 1
		m.alphaFlag = false
		m.nextAlpha = t + m.d.AlphaTimer
		m.nextDec = t + m.d.DecreaseTimer + Nanosecond
		m.target = m.rate
	}
}

// runBefore fires every timer due strictly before t.
func (m *mlxTimers) runBefore(t Time) {
	for m.started {
		next, kind := m.nextAlpha, 0
		if m.nextDec < next {
			next, kind = m.nextDec, 1
		}
		if m.nextInc >= 0 && m.nextInc <= next {
			next, kind = m.nextInc, 2
		}
		if next >= t {
			return
		}
		switch kind {
		case 0:
			if m.alphaFlag {
				m.alpha = (1-m.d.G)*m.alpha + m.d.G
			} else {
				m.alpha *= 1 - m.d.G
			}
			m.alphaFlag = false
			m.nextAlpha += m.d.AlphaTimer
		case 1:
			m.nextDec += m.d.DecreaseTimer
			if m.decFlag {
				if m.stage != 0 {
					m.target = m.rate
				}
				m.rate = math.Max(m.d.MinRateBps, m.rate*(1-m.alpha/2))
				m.stage = 0
				m.decFlag = false
				m.nextInc = next + m.d.IncreaseTimer
			}
		case 2:
			m.nextInc += m.d.IncreaseTimer
			switch {
			case m.stage < m.d.FastRecoverySteps:
			case m.stage == m.d.FastRecoverySteps:
				m.target = math.Min(m.target+m.d.AIBps, m.maxRate)
			default:
				m.target = math.Min(m.target+m.d.HAIBps, m.maxRate)
			}
			m.rate = (m.rate + m.target) / 2
			m.stage++
		}
	}
}

// dcqcnFlow returns a sim with one flow whose DCQCN state can be driven by
// hand (the flow is registered but sends nothing).
func dcqcnFlow(t *testing.T) (*Sim, *flow) {
	t.Helper()
	s, err := New(hpccStar(2))
	if err != nil {
		t.Fatal(err)
	}
	id := s.addFlow(1, 2, 3, 1<<30, 0, 0, 100)
	f := &s.flows[id]
	f.maxRate, f.rate, f.target = 100e9, 100e9, 100e9
	return s, f
}

// TestDCQCNLazyTimersMatchEager replays random CNP arrival times (bursts a
// few microseconds apart, separated by quiet spells of up to 2 ms, so that
// every timer and stage is exercised) through the engine and through the
// eager timer model, and compares the sending rate before every CNP.
func TestDCQCNLazyTimersMatchEager(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		s, f := dcqcnFlow(t)
		d := s.cfg.DCQCN
		m := &mlxTimers{d: d, maxRate: 100e9, rate: 100e9, target: 100e9, alpha: 1, nextInc: -1}
		r := rand.New(rand.NewPCG(seed, 7))
		now := Time(0)
		worst, lowest := 0.0, f.rate
		for i := 0; i < 5000; i++ {
			if r.IntN(4) == 0 {
				now += Time(r.Int64N(int64(2 * Millisecond)))
			} else {
				now += Time(r.Int64N(int64(6 * Microsecond)))
			}
			now++ // distinct instants
			s.RunUntil(now - 1)
			m.runBefore(now)
			if e := math.Abs(f.rate-m.rate) / m.rate; e > worst {
				worst = e
			}
			lowest = min(lowest, f.rate)
			s.now = now
			s.cnpReceived(f)
			m.cnp(now)
		}
		if worst > 1e-9 {
			t.Errorf("seed %d: engine rate differs from the eager timers by %.3g (relative)", seed, worst)
		}
		if lowest > 50e9 {
			t.Errorf("seed %d: the rate never fell below %.1f G; the replay exercises little", seed, lowest/1e9)
		}
	}
}

// TestDCQCNIncreaseBeforeDecreaseOnTie: when the increase timer and the
// decrease check fall on the same instant (they share the 4 us grid, as
// 300 us is a multiple of 4 us), ns-3 applies the increase first and then
// the cut, with the target clamped to the increased rate. The result must
// not depend on which of the two events the heap hands out first.
func TestDCQCNIncreaseBeforeDecreaseOnTie(t *testing.T) {
	setup := func() (*Sim, *flow) {
		s, f := dcqcnFlow(t)
		s.now = 10 * Millisecond
		f.cnpSeen = true
		f.alpha = 0.1
		f.alphaNext = s.now + Microsecond // no alpha tick due
		f.rate, f.target = 40e9, 60e9
		f.rpStage = 3 // hyper increase
		f.decFlag, f.decPending = true, true
		f.decGen, f.rpGen = 5, 7
		f.incAt = s.now
		return s, f
	}
	id := int32(0)
	// the decrease check first
	s1, f1 := setup()
	s1.rateDecrease(id, 5)
	s1.rateIncreaseTimer(id, 7) // the queued timer event, now stale
	// the increase timer first
	s2, f2 := setup()
	s2.rateIncreaseTimer(id, 7)
	s2.rateDecrease(id, 5)

	// increase: target 60 + 0.2 = 60.2 G, rate (40 + 60.2)/2 = 50.1 G;
	// cut: target clamped to 50.1 G, rate 50.1 * (1 - 0.1/2) = 47.595 G.
	for i, f := range []*flow{f1, f2} {
		if math.Abs(f.rate-47.595e9) > 1 || math.Abs(f.target-50.1e9) > 1 || f.rpStage != 0 {
			t.Errorf("order %d: rate %.4f G target %.4f G stage %d, want 47.5950 G, 50.1000 G, 0", i, f.rate/1e9, f.target/1e9, f.rpStage)
		}
		if f.incAt != 10*Millisecond+300*Microsecond {
			t.Errorf("order %d: next increase at %v, want 10.3ms", i, f.incAt)
		}
	}
}
