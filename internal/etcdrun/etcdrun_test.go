package etcdrun

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// A three-member cluster keeps serving with its leader stopped, elects
// another, and takes the old leader back with the data it missed.
func TestClusterSurvivesItsLeader(t *testing.T) {
	c, err := Start(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "1"); err != nil {
		t.Fatal(err)
	}
	old := c.Leader()
	if old < 0 {
		t.Fatal("no leader")
	}
	c.Stop(old)
	for c.Leader() < 0 || c.Leader() == old {
		if ctx.Err() != nil {
			t.Fatal("no new leader")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := cli.Put(ctx, "k", "2"); err != nil {
		t.Fatalf("put with the leader down: %v", err)
	}
	if err := c.Restart(old); err != nil {
		t.Fatal(err)
	}
	one, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints()[old : old+1], DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	r, err := one.Get(ctx, "k") // linearizable: through the new leader
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "2" {
		t.Fatalf("restarted member reads %v, %v", r, err)
	}
}
