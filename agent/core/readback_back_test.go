package core

import (
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// A read-back rollback goes to the setting the change started from: on a
// queue the agent never set, whose operator changed it A→B, a tune B→C
// that the switch took none of (it reads B) writes nothing, and one it
// took part of goes back to B, not to A, what the queue ran when the
// agent first saw it.
func TestReadBackRollbackToWhereTheChangeStarted(t *testing.T) {
	a, b := cur, cur
	b.KmaxBytes = 1_000_000 // the operator's
	c := b
	c.KminBytes, c.Pmax = 300_000, 0.1
	mix := b
	mix.Pmax = c.Pmax // the switch took the Pmax alone
	for _, tc := range []struct {
		name string
		got  env.Setting
		want *env.Setting
	}{{"took none", b, nil}, {"took part", mix, &b}} {
		g := newTestGuard(t, nil)
		now := int64(0)
		for _, s := range []env.Setting{a, a, a, b, b, b} {
			now += sec
			step(t, g, now, []env.Observation{ob(kA, s)}, []policy.Decision{dc(kA, s, 0.9)})
		}
		if lg, _ := g.LastGood(kA); !SameSetting(lg, b, 1e-9) {
			t.Errorf("%s: last good %s, want the operator's %s", tc.name, lg.Describe(), b.Describe())
		}
		now += sec
		p := step(t, g, now, []env.Observation{ob(kA, b)}, []policy.Decision{dc(kA, c, 0.9)})
		if len(p.Changes) != 1 || p.Changes[0].Kind != KindTune {
			t.Fatalf("%s: no tune: %+v", tc.name, p)
		}
		rb, _ := g.Result(p.Changes[0], Mismatch, tc.got, now)
		switch {
		case tc.want == nil && rb != nil:
			t.Errorf("%s: the switch runs %s, where the tune started; the guard orders %s to %s", tc.name, tc.got.Describe(), rb.Kind, rb.New.Describe())
		case tc.want != nil && (rb == nil || !SameSetting(rb.New, *tc.want, 1e-9)):
			t.Errorf("%s: read back %s: rollback %+v, want one to %s", tc.name, tc.got.Describe(), rb, tc.want.Describe())
		}
	}
}
