package fleetsoak

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// The set-log checks flag each kind of unsafe Set and pass a clean
// handover.
func TestCheckSetsFlagsUnsafeWrites(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	h := &history{owners: map[string][]*ownerKey{"sw0": {
		{Switch: "sw0", Member: "a", Token: 10, Lease: 1, Created: at(0), Deleted: at(10)},
		{Switch: "sw0", Member: "b", Token: 20, Lease: 2, Created: at(12)},
	}}, leaseEnd: map[int64]time.Time{1: at(10)}}
	set := func(s float64, w string, tok int64) setLine {
		return setLine{TimeNs: at(s).UnixNano(), Why: "set", Switch: "sw0", Port: "Ethernet0", Queue: 3, Writer: w, Token: tok}
	}
	clean := []setLine{set(1, "a", 10), set(5, "a", 10), set(18, "b", 20)}
	if bad, by := checkSets(clean, h); len(bad) != 0 || by["a"] != 2 || by["b"] != 1 {
		t.Fatalf("clean handover: %v %v", bad, by)
	}
	cases := map[string][]setLine{
		Unfenced:   {set(1, "", 0)},
		StaleToken: {set(1, "a", 10), set(18, "b", 20), set(19, "a", 10)},
		SameToken:  {set(18, "b", 20), set(19, "a", 20)},
		NotOwner:   {set(1, "b", 10)},
		AfterLease: {set(11, "a", 10)},
	}
	for kind, log := range cases {
		bad, _ := checkSets(log, h)
		if len(bad[kind]) != 1 {
			t.Errorf("%s: found %v", kind, bad)
		}
	}
	// every Set needs an intent of its writer for that queue and setting
	k := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
	a := audit{"a": {{TimeNs: at(0.5).UnixNano(), Change: core.Change{Key: k, New: env.Setting{KminBytes: 1, KmaxBytes: 2, Pmax: 0.1}}}}}
	l := set(1, "a", 10)
	l.Kmin, l.Kmax, l.Pmax = 1, 2, 0.1
	if u := unaudited([]setLine{l}, a); len(u) != 0 {
		t.Fatalf("audited Set flagged: %v", u)
	}
	l.Writer = "b"
	if u := unaudited([]setLine{l}, a); len(u) != 1 {
		t.Fatalf("a Set of b with a's intent only: %v", u)
	}
}

func TestParseSlog(t *testing.T) {
	l, ok := parseSlog(`time=2026-11-29T01:17:25.299Z level=INFO msg="fleet: switch taken over" target=leaf2 queues=0 open=0`)
	if !ok || l.Msg != "fleet: switch taken over" || l.Attrs["target"] != "leaf2" || l.At.Nanosecond() != 299e6 {
		t.Fatalf("%+v %v", l, ok)
	}
	if _, ok := parseSlog("simswitch: something"); ok {
		t.Fatal("not a slog line")
	}
}

// The proxy forwards, cuts every connection and refuses new ones, and
// forwards again once restored.
func TestProxyCuts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	p, err := NewProxy([]string{"127.0.0.1:1", ln.Addr().String()}) // the first refuses
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	echo := func(c net.Conn) error {
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		b := make([]byte, 4)
		_, err := io.ReadFull(c, b)
		return err
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil || echo(c) != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.Cut()
	if echo(c) == nil {
		t.Fatal("a connection survived the cut")
	}
	if c2, err := net.Dial("tcp", p.Addr()); err == nil && echo(c2) == nil {
		t.Fatal("a new connection went through a cut proxy")
	}
	p.Restore()
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil || echo(c3) != nil {
		t.Fatalf("after restore: %v", err)
	}
}

// A lease that ends in the next fault is that fault's, not the etcd
// leader stop's before it.
func TestLeaderFaultWindowEndsAtNextFault(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	h := &history{owners: map[string][]*ownerKey{"sw0": {
		{Switch: "sw0", Member: "a", Token: 10, Lease: 1, Created: at(0), Deleted: at(14)},
		{Switch: "sw0", Member: "b", Token: 20, Lease: 2, Created: at(15)},
	}}, leaseEnd: map[int64]time.Time{1: at(14)}}
	faults := []fault{{Kind: Leader, Victim: "etcd m0", At: at(1), Undone: at(5)}, {Kind: Kill, Victim: "a", At: at(9), Undone: at(20)}}
	fs, lost := failovers(faults, at(100), h, nil, nil)
	if len(fs) != 1 || fs[0].Kind != Kill || fs[0].Owner != 6*time.Second || len(lost) != 0 {
		t.Fatalf("%+v %v", fs, lost)
	}
}

// A change in two logs (its writer paused between its Set and its result,
// the new owner's copy reconciled meanwhile) ended at the first result:
// the new owner's tune 2.1 s after its reconcile keeps a min-hold of 2 s,
// although the paused writer recorded its result 2.5 s after that tune
// (the fleet soak flagged it as a hold violation of -2.5 s); a tune 1 s
// after the reconcile does not.
func TestGuardRulesTakeOverEndsAtFirstResult(t *testing.T) {
	k := env.QueueKey{Target: "leaf11", Port: "Ethernet0", Queue: 3}
	sec := int64(time.Second)
	t0 := int64(1000) * sec
	set := func(kmin int64) env.Setting { return env.Setting{KminBytes: kmin, KmaxBytes: 2 * kmin, Pmax: 0.1} }
	entry := func(seq uint64, at, result int64, state core.AuditState, old, new env.Setting) core.AuditEntry {
		return core.AuditEntry{Seq: seq, TimeNs: at, ResultNs: result, Target: k.Target, State: state,
			Change: core.Change{Key: k, Kind: core.KindTune, Old: old, New: new}}
	}
	intent := t0
	for _, c := range []struct {
		tuneAt int64
		bad    int
	}{{t0 + 7870*sec/1000, 0}, {t0 + 6760*sec/1000, 1}} {
		a := audit{
			"b": {entry(3433, intent, t0+10350*sec/1000, core.StateApplied, set(2400), set(2000))},
			"c": {entry(3111, intent, t0+5760*sec/1000, core.StateReconciled, set(2400), set(2000)),
				entry(3141, c.tuneAt, c.tuneAt+sec/20, core.StateApplied, set(2000), set(2400))},
		}
		r := guardRules(a, nil, 2*time.Second, 500*time.Millisecond)
		if len(r.HoldViolations) != c.bad {
			t.Errorf("tune %v after the reconcile: %d hold violations, want %d: %v",
				time.Duration(c.tuneAt-(t0+5760*sec/1000)), len(r.HoldViolations), c.bad, r.HoldViolations)
		}
	}
}
