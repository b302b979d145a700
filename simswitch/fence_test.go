package simswitch

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// lockedBuffer is a set log tests read while the server writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return splitLines(l.b.String())
}

func splitLines(s string) []string {
	var out []string
	for _, l := range bytes.Split([]byte(s), []byte{'\n'}) {
		if len(l) > 0 {
			out = append(out, string(l))
		}
	}
	return out
}

// Every Set's writer and fencing token go to the set log; a token lower
// than one the switch has seen is counted, and refused with --fence.
func TestSetLogRecordsFence(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		var log lockedBuffer
		s, addr := start(t, gnmipath.OpenConfig, func(c *Config) { c.SetLog = &log; c.Fence = refuse })
		tg := dial(t, addr)
		tt := gnmipath.Target{Name: "sw0", Dialect: gnmipath.OpenConfig}
		key := env.QueueKey{Target: "sw0", Port: "Ethernet1", Queue: 3}
		_, dec := onceSnapshot(t, tg, tt)
		set := func(kmin int64, f *gnmipath.Fence) error {
			req, err := gnmipath.SetRequest(tt, key, env.Setting{KminBytes: kmin, KmaxBytes: 3_000_000, Pmax: 0.07}, dec.Binding(key.Port, key.Queue))
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctx5(t)
			if f != nil {
				ctx = metadata.AppendToOutgoingContext(ctx, gnmipath.FenceMetadata, f.String())
			}
			_, err = tg.Set(ctx, req)
			return err
		}
		for i, f := range []*gnmipath.Fence{{Writer: "a", Token: 7}, {Writer: "b", Token: 9}, nil} {
			if err := set(int64(100_000+i*1000), f); err != nil {
				t.Fatalf("fence %v: %v", f, err)
			}
		}
		err := set(200_000, &gnmipath.Fence{Writer: "a", Token: 7}) // a deposed writer
		if refuse {
			wantCode(t, err, codes.FailedPrecondition, "fencing token 7 of a is older than token 9")
		} else if err != nil {
			t.Fatalf("stale Set without --fence: %v", err)
		}
		if st := s.FenceStats(); st.Stale != 1 || st.Refused != map[bool]int64{true: 1}[refuse] {
			t.Fatalf("fence %v: stats %+v", refuse, st)
		}
		var got []string
		for _, l := range log.lines() {
			var e SetLogEntry
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatal(err)
			}
			if e.Why != "start" {
				got = append(got, e.Why+" "+e.Writer+" "+strconv.FormatInt(e.Token, 10)+" "+strconv.FormatInt(e.Kmin, 10))
			}
		}
		want := []string{"set a 7 100000", "set b 9 101000", "set  0 102000", "set a 7 200000"}
		if refuse {
			want[3] = "refused a 7 0"
		}
		if len(got) != len(want) {
			t.Fatalf("fence %v: set log %q, want %q", refuse, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("fence %v: set log %q, want %q", refuse, got, want)
			}
		}
	}
}
