package fleet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// keysRead is a client of ep that notes every key its reads return.
func keysRead(t *testing.T, ep string) (*clientv3.Client, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var keys []string
	note := func(kvs []*mvccpb.KeyValue) {
		mu.Lock()
		defer mu.Unlock()
		for _, kv := range kvs {
			keys = append(keys, string(kv.Key))
		}
	}
	rec := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		switch r := reply.(type) {
		case *pb.RangeResponse:
			note(r.Kvs)
		case *pb.TxnResponse:
			for _, op := range r.Responses {
				note(op.GetResponseRange().GetKvs())
			}
		}
		return err
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(rec)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), keys...) }
}

// A status read (fleet status, GET /fleet and the dashboard's fleet panel,
// approve's owner lookup) reads the members, placement, owners and leader
// only: before, it read the fleet's whole prefix, every audit entry and
// the guard's memory with it (223 MB on 1,000 switches, past GET /fleet's
// 2 s every other read, said as etcd not answering).
func TestStatusReadsOnlyTheKeysItShows(t *testing.T) {
	ep := startEtcd(t)
	a := join(t, ep, "a", 4)
	defer a.Close()
	waitUntil(t, 20*time.Second, "a owns its 4 switches", func() bool { return len(a.Owned()) == 4 })
	cli := client(t, ep)
	ctx := context.Background()
	p := prefixOf("test")
	for s := 0; s < 4; s++ {
		sw := fmt.Sprintf("leaf%02d", s)
		var es []core.AuditEntry
		var mems []core.QueueMemory
		for i := 0; i < 10; i++ {
			k := env.QueueKey{Target: sw, Port: fmt.Sprintf("Ethernet%d", i), Queue: 3}
			es = append(es, core.AuditEntry{Seq: uint64(i), TimeNs: int64(i), Target: sw, Writer: "a", State: core.StateApplied,
				Change: core.Change{Key: k, Kind: core.KindTune}})
			mems = append(mems, core.QueueMemory{Key: k})
		}
		ops, err := auditOps(p, es)
		if err != nil {
			t.Fatal(err)
		}
		mops, err := memoryOps(p, sw, mems)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Txn(ctx).Then(append(ops, mops...)...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	rc, read := keysRead(t, ep)
	st, err := ReadStatus(ctx, rc, "test")
	if err != nil {
		t.Fatal(err)
	}
	if st.Leader != "a" || len(st.Members) != 1 || st.Members[0].Owns != 4 || st.Members[0].Assigned != 4 || !st.Members[0].Leader || len(st.Switches) != 4 {
		t.Fatalf("status: %+v", st)
	}
	var extra []string
	for _, k := range read() {
		if !strings.HasPrefix(k, p+"members/") && !strings.HasPrefix(k, p+"assign/") && !strings.HasPrefix(k, p+"owner/") && !strings.HasPrefix(k, p+"leader/") {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		t.Errorf("a status read read %d keys it does not show, e.g. %s", len(extra), extra[0])
	}
}

// A status read that runs out of time on an etcd that is connected says
// so, and does not send the operator to check that etcd runs (a large or
// slow read).
func TestStatusTimeoutOfAConnectedEtcd(t *testing.T) {
	ep := startEtcd(t)
	cli := client(t, ep)
	if _, err := ReadStatus(context.Background(), cli, "test"); err != nil {
		t.Fatal(err) // connected
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, err := ReadStatus(ctx, cli, "test")
	if err == nil {
		t.Fatal("no error past the deadline")
	}
	if strings.Contains(err.Error(), "is it running there") || !strings.Contains(err.Error(), "connected") {
		t.Errorf("a timeout of a connected etcd: %v", err)
	}
}
