package gnmiclient

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/internal/simtest"
	"github.com/ecntune/ecntune/simswitch"
)

// Against simswitch imitating sonic-gnmi, another client deletes a field
// of the queues' WRED profile (an HDEL of WRED_PROFILE|AZURE_LOSSLESS
// wred_yellow_enable): the server's ON_CHANGE says only {} for the entry,
// never which field went nor what is left, so the switch client drops
// what it knew of the entry and reads the switch afresh (a
// ConfigDeletedNote, a new session), whose dump gives the queue's setting
// back as the switch runs it. (A deleted QUEUE wred_profile, the case met
// on the real server, left the setting standing for good; simswitch keeps
// every queue bound, so the field of the profile stands in for it.)
func TestSonicDeletedFieldReadAfresh(t *testing.T) {
	_, addr := simtest.Start(t, simtest.Star(poorECN), gnmipath.Sonic, func(c *simswitch.Config) {
		c.Device, c.SonicNativeWrite, c.SonicBufferModel = "sonic", true, "static"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tc := target0(addr, "sonic")
	tc.Device = "sonic"
	_, out, errs := subscribed(t, ctx, tc)
	key := env.QueueKey{Target: "sw0", Port: "Ethernet1", Queue: 3}
	setting := func(s env.Snapshot) (env.Setting, bool) {
		for _, q := range s.Queues {
			if q.Key == key {
				return q.Setting, true
			}
		}
		return env.Setting{}, false
	}
	var note *ConfigDeletedNote
	deleted := false
	for {
		select {
		case s := <-out:
			got, ok := setting(s)
			if !deleted {
				if ok && got.KminBytes == poorECN.KminBytes {
					other, err := Dial(ctx, tc, 50*time.Millisecond)
					if err != nil {
						t.Fatal(err)
					}
					defer other.Close()
					del := &gnmi.SetRequest{Prefix: &gnmi.Path{Origin: "sonic-db", Elem: []*gnmi.PathElem{{Name: gnmipath.ConfigDB}, {Name: "localhost"}}},
						Delete: []*gnmi.Path{{Elem: []*gnmi.PathElem{{Name: "WRED_PROFILE"}, {Name: gnmipath.SonicSharedProfile}, {Name: "wred_yellow_enable"}}}}}
					if _, err := other.conn.Set(ctx, del); err != nil {
						t.Fatal(err)
					}
					deleted = true
				}
				continue
			}
			if note != nil && ok && got.KminBytes == poorECN.KminBytes {
				return // read afresh: the setting as the switch runs it
			}
		case err := <-errs:
			if errors.As(err, &note) {
				if len(note.Entries) != 1 || note.Entries[0] != "/WRED_PROFILE/"+gnmipath.SonicSharedProfile {
					t.Fatalf("note %v", note)
				}
			}
		case <-ctx.Done():
			t.Fatalf("deleted %v, note %v: no fresh read of the queue's setting after the delete", deleted, note)
		}
	}
}
