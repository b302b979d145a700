package fleet

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// write is one simulated Set on a switch: by whom, under which token, and
// when it was on the wire.
type write struct {
	member     string
	token      int64
	start, end time.Time
}

// writers are members that write every switch they may, every few
// milliseconds, each write fenced in etcd first and then "on the wire"
// for setTime, recorded per switch.
type writers struct {
	mu  sync.Mutex
	log map[string][]write
}

func (w *writers) run(ctx context.Context, n *Node, setTime time.Duration) {
	for ctx.Err() == nil {
		for _, o := range n.Owned() {
			tok, ok := n.Writable(o.Switch, time.Now())
			if !ok {
				continue
			}
			fctx, cancel := context.WithTimeout(ctx, time.Second)
			err := n.Fence(fctx, o.Switch, tok, nil)
			cancel()
			if err != nil {
				continue
			}
			// on the wire until setTime has passed or the member's
			// write deadline ends it, as the agent's write contexts do
			start, end := time.Now(), time.Now().Add(setTime)
			if d := n.Deadline(); d.Before(end) {
				end = d
			}
			w.mu.Lock()
			w.log[o.Switch] = append(w.log[o.Switch], write{n.cfg.Member.ID, tok, start, end})
			w.mu.Unlock()
		}
		sleep(ctx, 20*time.Millisecond)
	}
}

// check finds writes of two members on one switch that overlap, and
// tokens that go down.
func (w *writers) check() (writes int, bad []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for sw, ws := range w.log {
		sort.Slice(ws, func(i, j int) bool { return ws[i].start.Before(ws[j].start) })
		writes += len(ws)
		for i := 1; i < len(ws); i++ {
			p, c := ws[i-1], ws[i]
			if c.token < p.token {
				bad = append(bad, fmt.Sprintf("%s: token %d after %d", sw, c.token, p.token))
			}
			if c.member != p.member && c.start.Before(p.end) {
				bad = append(bad, fmt.Sprintf("%s: %s wrote at %v while %s's write (until %v) was on the wire", sw, c.member, c.start, p.member, p.end))
			}
		}
	}
	return writes, bad
}

// The fleet under fault cycles: three members write 30 switches; each
// cycle kills one (its client closed: no renewal, nothing revoked) or
// pauses one past its lease and resumes it (it finds its lease gone), and
// a new member joins in its place. Over all cycles: no two members' writes
// of one switch overlap, fencing tokens only rise per switch, and each
// failover (a member's death to its switches writable elsewhere) is timed.
// ECNTUNE_FLEET_CYCLES sets the cycles (default 3), ECNTUNE_FLEET_TTL the
// lease (default 2s).
func TestFleetFaultCycles(t *testing.T) {
	cycles, ttl := 3, 2*time.Second
	if s := os.Getenv("ECNTUNE_FLEET_CYCLES"); s != "" {
		cycles, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("ECNTUNE_FLEET_TTL"); s != "" {
		ttl, _ = time.ParseDuration(s)
	}
	ep := startEtcd(t)
	w := &writers{log: map[string][]write{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type member struct {
		n      *Node
		cli    *clientv3.Client
		cancel context.CancelFunc
	}
	seq := 0
	add := func() *member {
		seq++
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(fmt.Sprintf("m%d", seq), 30)
		cfg.TTL, cfg.Takeover, cfg.WriteTimeout = ttl, 50*time.Millisecond, 300*time.Millisecond
		n, err := Join(ctx, cli, cfg)
		if err != nil {
			t.Fatal(err)
		}
		mctx, mcancel := context.WithCancel(ctx)
		go w.run(mctx, n, 300*time.Millisecond)
		return &member{n, cli, mcancel}
	}
	ms := []*member{add(), add(), add()}
	owned := func() map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			for _, o := range m.n.Owned() {
				out[o.Switch] = m.n.cfg.Member.ID
			}
		}
		return out
	}
	waitUntil(t, 30*time.Second, "every switch owned", func() bool { return len(owned()) == 30 })
	rng := rand.New(rand.NewSource(1))
	var failovers []time.Duration
	for c := 0; c < cycles; c++ {
		i := rng.Intn(len(ms))
		victim := ms[i]
		theirs := victim.n.Owned()
		died := time.Now()
		if c%2 == 0 { // kill
			victim.cancel()
			victim.n.Stop()
			victim.cli.Close()
		} else { // pause past the lease; resumed, it must find itself gone
			victim.cancel()
			victim.n.Stop()
			victim.n.sess.Orphan()
		}
		ms = append(ms[:i:i], ms[i+1:]...)
		for _, o := range theirs {
			waitUntil(t, 6*ttl+10*time.Second, "a failover", func() bool {
				for _, m := range ms {
					if _, ok := m.n.Writable(o.Switch, time.Now()); ok {
						return true
					}
				}
				return false
			})
			failovers = append(failovers, time.Since(died))
		}
		if c%2 == 1 { // resume the paused one once its lease is gone
			waitUntil(t, 3*ttl, "the paused member's lease expired", func() bool {
				r, err := victim.cli.TimeToLive(ctx, victim.n.lease)
				return err == nil && r.TTL == -1
			})
			go victim.n.renew(ctx)
			select {
			case <-victim.n.Done():
			case <-time.After(3 * ttl):
				t.Fatalf("cycle %d: a resumed member did not notice its lease is gone", c)
			}
			victim.cli.Close()
		}
		ms = append(ms, add())
		waitUntil(t, 30*time.Second, "every switch owned again", func() bool { return len(owned()) == 30 })
	}
	cancel()
	writes, bad := w.check()
	sort.Slice(failovers, func(i, j int) bool { return failovers[i] < failovers[j] })
	p := func(q float64) time.Duration {
		return failovers[int(q*float64(len(failovers)-1))].Round(time.Millisecond)
	}
	t.Logf("%d cycles, ttl %v: %d fenced writes, %d violations; failover of %d switches p50 %v p99 %v max %v",
		cycles, ttl, writes, len(bad), len(failovers), p(0.5), p(0.99), p(1))
	for _, b := range bad {
		t.Error(b)
	}
	if writes == 0 {
		t.Fatal("nothing was written")
	}
}
