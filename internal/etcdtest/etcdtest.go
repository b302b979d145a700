// Package etcdtest runs a real etcd inside a test (go.etcd.io/etcd's
// embed), one member on 127.0.0.1 ports chosen by the kernel, removed when
// the test ends: Start in plain text, StartTLS over TLS.
package etcdtest

import (
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/ecntune/ecntune/internal/etcdrun"
)

// Start runs a one-member etcd for t and returns its client endpoint
// (host:port).
func Start(t testing.TB) string {
	t.Helper()
	return start(t, "http", nil)
}

// start runs a one-member etcd whose client URL has scheme; tlsInfo (nil:
// none) fills its client TLS.
func start(t testing.TB, scheme string, tlsInfo func(*transport.TLSInfo)) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cu, _ := url.Parse(scheme + "://127.0.0.1:0")
	pu, _ := url.Parse("http://127.0.0.1:0")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.LogLevel = "panic"
	if tlsInfo != nil {
		tlsInfo(&cfg.ClientTLSInfo)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("etcd not ready in 30 s")
	}
	return e.Clients[0].Addr().String()
}

// Cluster runs an n-member etcd (internal/etcdrun) for t, stopped when the
// test ends.
func Cluster(t testing.TB, n int) *etcdrun.Cluster {
	t.Helper()
	c, err := etcdrun.Start(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
