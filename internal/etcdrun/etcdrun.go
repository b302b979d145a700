// Package etcdrun runs a real etcd cluster inside this process (go.etcd.io/
// etcd's embed): n members on 127.0.0.1, each with its own data directory,
// that can be stopped and started again one by one (a member down, the
// Raft leader killed). Tests (internal/etcdtest), the fleet fault harness
// and `ecntune demo --fleet` use it; nothing here listens beyond loopback.
package etcdrun

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Cluster is a running embedded etcd cluster.
type Cluster struct {
	mu      sync.Mutex
	dir     string
	names   []string
	client  []url.URL
	peer    []url.URL
	members []*embed.Etcd // nil: stopped
	initial string
}

// Start runs an n-member cluster with its data under dir, and waits until
// every member is ready (at most 30 s).
func Start(dir string, n int) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("etcdrun: %d members", n)
	}
	c := &Cluster{dir: dir, members: make([]*embed.Etcd, n)}
	var parts []string
	for i := range n {
		cu, err := freeURL()
		if err != nil {
			return nil, err
		}
		pu, err := freeURL()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("m%d", i)
		c.names, c.client, c.peer = append(c.names, name), append(c.client, cu), append(c.peer, pu)
		parts = append(parts, name+"="+pu.String())
	}
	c.initial = strings.Join(parts, ",")
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- c.start(i, "new") }()
	}
	var err error
	for range n {
		err = errors.Join(err, <-errs)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// freeURL is an http URL on 127.0.0.1 with a port free a moment ago.
func freeURL() (url.URL, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, fmt.Errorf("etcdrun: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return url.URL{Scheme: "http", Host: addr}, nil
}

func (c *Cluster) start(i int, state string) error {
	cfg := embed.NewConfig()
	cfg.Name = c.names[i]
	cfg.Dir = filepath.Join(c.dir, c.names[i])
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{c.client[i]}, []url.URL{c.client[i]}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{c.peer[i]}, []url.URL{c.peer[i]}
	cfg.InitialCluster, cfg.ClusterState = c.initial, state
	cfg.InitialClusterToken = "ecntune-etcdrun"
	cfg.LogLevel = "panic"
	// The fleet writes a revision per fenced record: keep five minutes
	// of history, as a production cluster is told to (README).
	cfg.AutoCompactionMode, cfg.AutoCompactionRetention = "periodic", "5m"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("etcdrun: member %s: %w", c.names[i], err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return fmt.Errorf("etcdrun: member %s not ready in 30 s", c.names[i])
	}
	c.mu.Lock()
	c.members[i] = e
	c.mu.Unlock()
	return nil
}

// Endpoints are the members' client addresses (host:port), stopped ones
// included (a client fails over among them).
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.client))
	for i, u := range c.client {
		out[i] = u.Host
	}
	return out
}

// Leader is the index of the member that is the Raft leader now, as a
// running member sees it (-1: none known).
func (c *Cluster) Leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.members {
		if e == nil {
			continue
		}
		lead := e.Server.Leader()
		for j, m := range c.members {
			if m != nil && m.Server.MemberID() == lead {
				return j
			}
		}
	}
	return -1
}

// Stop stops member i (its data stays for Restart).
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	e := c.members[i]
	c.members[i] = nil
	c.mu.Unlock()
	if e != nil {
		e.Close()
	}
}

// Restart starts member i again on its data directory.
func (c *Cluster) Restart(i int) error {
	c.mu.Lock()
	running := c.members[i] != nil
	c.mu.Unlock()
	if running {
		return nil
	}
	return c.start(i, "existing")
}

// Close stops every member.
func (c *Cluster) Close() {
	for i := range c.members {
		c.Stop(i)
	}
}
