package simswitch

import (
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"google.golang.org/grpc/codes"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// The commit confirmed extension as its specification says: a commit
// applies and blocks other Sets until confirmed; a wrong id, or nothing
// to confirm, is refused; a cancel reverts at once; an unconfirmed commit
// reverts when its rollback duration ends, logged as a rollback.
func TestCommitConfirmed(t *testing.T) {
	var log lockedBuffer
	s, addr := start(t, gnmipath.OpenConfig, func(c *Config) { c.SetLog = &log })
	tg := dial(t, addr)
	tt := gnmipath.Target{Name: "sw0", Dialect: gnmipath.OpenConfig}
	_, dec := onceSnapshot(t, tg, tt)
	key := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
	kmin := func() int64 {
		tel, _ := s.Telemetry("sw0")
		return tel.Ports[0].Queues[3].ECN.KminBytes
	}
	orig := kmin()
	set := func(kmin int64, ext *gnmi_ext.Extension) error {
		req, err := gnmipath.SetRequest(tt, key, env.Setting{KminBytes: kmin, KmaxBytes: 3 * kmin, Pmax: 0.5}, dec.Binding("Ethernet0", 3))
		if err != nil {
			t.Fatal(err)
		}
		if ext != nil {
			req.Extension = append(req.Extension, ext)
		}
		_, err = tg.Set(ctx5(t), req)
		return err
	}
	action := func(id string, a gnmipath.CommitAction) error {
		_, err := tg.Set(ctx5(t), &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "sw0"}, Extension: []*gnmi_ext.Extension{gnmipath.CommitExtension(id, a, 0)}})
		return err
	}
	wantCode(t, action("c0", gnmipath.CommitConfirm), codes.FailedPrecondition, "no commit is waiting")

	if err := set(100_000, gnmipath.CommitExtension("c1", gnmipath.CommitStart, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if kmin() != 100_000 {
		t.Fatalf("commit not applied: kmin %d", kmin())
	}
	wantCode(t, set(110_000, nil), codes.FailedPrecondition, `commit "c1" is waiting`)
	wantCode(t, set(110_000, gnmipath.CommitExtension("c2", gnmipath.CommitStart, time.Minute)), codes.FailedPrecondition, `commit "c1" is waiting`)
	wantCode(t, action("other", gnmipath.CommitConfirm), codes.InvalidArgument, "not the commit under way")
	if err := action("c1", gnmipath.CommitConfirm); err != nil {
		t.Fatal(err)
	}
	if err := set(120_000, nil); err != nil || kmin() != 120_000 {
		t.Fatalf("a plain Set after the confirm: %v, kmin %d", err, kmin())
	}

	if err := set(130_000, gnmipath.CommitExtension("c3", gnmipath.CommitStart, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := action("c3", gnmipath.CommitCancel); err != nil || kmin() != 120_000 {
		t.Fatalf("cancel: %v, kmin %d (want 120000 back)", err, kmin())
	}

	if err := set(140_000, gnmipath.CommitExtension("c4", gnmipath.CommitStart, 200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for kmin() != 120_000 {
		if time.Now().After(deadline) {
			t.Fatalf("unconfirmed commit not rolled back: kmin %d", kmin())
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantCode(t, action("c4", gnmipath.CommitConfirm), codes.FailedPrecondition, "no commit is waiting")
	if l := strings.Join(log.lines(), "\n"); !strings.Contains(l, `"why":"cancel"`) || !strings.Contains(l, `"why":"rollback"`) {
		t.Fatalf("set log lacks the cancel and the rollback:\n%s", l)
	}
	if orig == 120_000 {
		t.Fatal("test needs another starting kmin")
	}
}

// A device without the extension refuses a commit and changes nothing.
func TestCommitConfirmedUnimplemented(t *testing.T) {
	s, addr := start(t, gnmipath.OpenConfig, func(c *Config) { c.Device = "openconfig" })
	tg := dial(t, addr)
	tt := gnmipath.Target{Name: "sw0", Dialect: gnmipath.OpenConfig, Device: gnmipath.Devices["openconfig"]}
	_, dec := onceSnapshot(t, tg, tt)
	key := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
	req, err := gnmipath.SetRequest(tt, key, env.Setting{KminBytes: 100_000, KmaxBytes: 300_000, Pmax: 0.5}, dec.Binding("Ethernet0", 3))
	if err != nil {
		t.Fatal(err)
	}
	req.Extension = []*gnmi_ext.Extension{gnmipath.CommitExtension("c1", gnmipath.CommitStart, time.Minute)}
	_, err = tg.Set(ctx5(t), req)
	wantCode(t, err, codes.Unimplemented, "commit confirmed")
	if tel, _ := s.Telemetry("sw0"); tel.Ports[0].Queues[3].ECN.KminBytes == 100_000 {
		t.Fatal("refused commit applied")
	}
}
