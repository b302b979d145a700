package demo

// The demo's fleet (Config.Fleet): an embedded etcd, and the agents as
// members a, b, c… of the fleet "demo" on it, every one with the same
// targets (every switch), its own db, owner name and HTTP endpoints. The
// fleet's leader places the switches; an agent writes only those it owns.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ecntune/ecntune/agent/fleet"
	"github.com/ecntune/ecntune/internal/etcdrun"
)

const (
	// FleetName is the demo fleet's name (its etcd keys' prefix).
	FleetName = "demo"
	// maxFleet: members are named a to z.
	maxFleet = 26
	// etcdMembers is the size of the demo's etcd: one member. A cluster
	// of three in one process survives nothing more (the process is the
	// failure domain) and costs two more Raft peers' CPU and start-up
	// (an election) on the machine that also runs the fabric and every
	// agent; the fleet's code is the same against one member or three.
	etcdMembers = 1
	// placementPoll is how often the demo reads the placement; a
	// placement is reported once two reads in a row agree.
	placementPoll = 500 * time.Millisecond
)

// fleetMember is what a fleet member's configuration adds to the demo
// agent's: its id, db and the fleet key.
type fleetMember struct {
	id, db    string
	endpoints []string
}

// yaml is the fleet key (the default ttl and takeover, written out).
func (fm *fleetMember) yaml() string {
	eps := make([]string, len(fm.endpoints))
	for i, e := range fm.endpoints {
		eps[i] = fmt.Sprintf("%q", e)
	}
	return fmt.Sprintf("fleet:\n  endpoints: [%s]\n  name: %s\n  member: %s\n  ttl: 5s\n",
		strings.Join(eps, ", "), FleetName, fm.id)
}

// memberID is the i-th member's id: a, b, c…
func memberID(i int) string { return string(rune('a' + i)) }

// memberDB is member id's db: in the temporary directory, or after the
// pattern db (x.db: x-a.db).
func memberDB(db, tmpDir, id string) string {
	if db == "" {
		return filepath.Join(tmpDir, "agent-"+id+".db")
	}
	ext := filepath.Ext(db)
	return strings.TrimSuffix(db, ext) + "-" + id + ext
}

// startFleet starts the embedded etcd and opens the fleet's agents, all at
// once so that they join together and the first placement spreads the
// switches (a new owner waits its takeover delay before it writes, so
// that the moves of the first second write nothing). Each member's
// configuration is also written to the temporary directory, for
// `ecntune fleet status --config` from another terminal.
func (d *Demo) startFleet(ctx context.Context) (err error) {
	if d.etcd, err = etcdrun.Start(filepath.Join(d.tmpDir, "etcd"), etcdMembers); err != nil {
		return fmt.Errorf("embedded etcd: %w", err)
	}
	eps := d.etcd.Endpoints()
	if d.etcdC, err = clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}); err != nil {
		return fmt.Errorf("embedded etcd: %w", err)
	}
	ymls := make([]string, d.cfg.Fleet)
	for i := range d.cfg.Fleet {
		m := &member{id: memberID(i)}
		ymls[i] = agentYAML(d.srv, d.gnmi, d.cfg, &fleetMember{id: m.id, db: memberDB(d.cfg.DB, d.tmpDir, m.id), endpoints: eps})
		m.cfgPath = filepath.Join(d.tmpDir, "agent-"+m.id+".yaml")
		if err := os.WriteFile(m.cfgPath, []byte(ymls[i]), 0o600); err != nil {
			return err
		}
		d.agents = append(d.agents, m)
	}
	errs := make([]error, len(d.agents))
	var wg sync.WaitGroup
	for i, m := range d.agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = d.open(ctx, m, ymls[i]); errs[i] != nil {
				errs[i] = fmt.Errorf("agent %s: %w", m.id, errs[i])
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runFleet starts, with a fleet, the placement's reports and the stop of
// an agent after FleetKillAfter, on wg, until ctx ends.
func (d *Demo) runFleet(ctx context.Context, wg *sync.WaitGroup) {
	if d.cfg.Fleet < 2 {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.watchPlacement(ctx)
	}()
	if d.cfg.FleetKillAfter <= 0 {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTimer(d.cfg.FleetKillAfter)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m := d.agents[len(d.agents)-1]
		d.event(fmt.Sprintf("stopping agent %s after %v: it leaves the fleet, its switches go to the others", m.id, d.cfg.FleetKillAfter))
		m.killed.Store(true)
		m.cancel()
	}()
}

// retire closes an agent stopped on purpose once its Run has returned:
// its endpoints, and the agent, which leaves the fleet (its lease
// revoked, its switches free at once).
func (d *Demo) retire(m *member, err error) {
	m.http.Close()
	cerr := m.agent.Close()
	msg := fmt.Sprintf("agent %s stopped and left the fleet (%s no longer answers)", m.id, m.url)
	if e := errors.Join(err, cerr); e != nil {
		msg += ": " + e.Error()
	}
	d.event(msg)
}

func (d *Demo) event(line string) {
	if d.cfg.Events != nil {
		d.cfg.Events(line)
	}
}

// Placement reads the fleet's status from its etcd (a fleet only).
func (d *Demo) Placement(ctx context.Context) (fleet.Status, error) {
	if d.etcdC == nil {
		return fleet.Status{}, errors.New("demo: no fleet")
	}
	return fleet.ReadStatus(ctx, d.etcdC, FleetName)
}

// watchPlacement reports the placement (who owns which switch) at start
// and whenever it changes, once two reads in a row agree.
func (d *Demo) watchPlacement(ctx context.Context) {
	t := time.NewTicker(placementPoll)
	defer t.Stop()
	var reported, seen string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := d.Placement(rctx)
		cancel()
		if err != nil {
			continue
		}
		s := DescribePlacement(st)
		if s == seen && s != reported {
			reported = s
			d.event("placement: " + s)
		}
		seen = s
	}
}

// DescribePlacement says in one line which member owns which switches,
// which leads, and which switches no member holds (a move under way).
func DescribePlacement(st fleet.Status) string {
	owns := map[string][]string{}
	var free []string
	for _, s := range st.Switches {
		if s.Owner == "" {
			free = append(free, s.Switch)
			continue
		}
		owns[s.Owner] = append(owns[s.Owner], s.Switch)
	}
	ids := []string{}
	for _, m := range st.Members {
		ids = append(ids, m.ID)
	}
	for id := range owns {
		if !slices.Contains(ids, id) {
			ids = append(ids, id) // an owner whose member key is gone
		}
	}
	sort.Strings(ids)
	var parts []string
	for _, id := range ids {
		p := fmt.Sprintf("%s owns %d", id, len(owns[id]))
		if len(owns[id]) > 0 {
			p += " (" + strings.Join(owns[id], " ") + ")"
		}
		if id == st.Leader {
			p += ", leads"
		}
		parts = append(parts, p)
	}
	if len(free) > 0 {
		parts = append(parts, fmt.Sprintf("no owner yet: %s", strings.Join(free, " ")))
	}
	return strings.Join(parts, "; ")
}

// describeFleet is Describe's lines for a fleet: the etcd, then every
// agent's endpoints, db and configuration.
func (d *Demo) describeFleet(mode string) []string {
	lines := []string{
		fmt.Sprintf("embedded etcd: %d member, client %s (data in the demo's temporary directory)", etcdMembers, strings.Join(d.etcd.Endpoints(), ",")),
		fmt.Sprintf("fleet %s: %d agents in %s, policy %s, every %s; each writes only the switches it owns", FleetName, len(d.agents), mode, d.cfg.Policy, d.cfg.Interval),
	}
	for _, m := range d.agents {
		lines = append(lines, fmt.Sprintf("agent %s: open %s  (dashboard; also /fleet, /changes, /metrics, /healthz, /demo); db %s", m.id, m.url, m.cfg.DB))
	}
	lines = append(lines, fmt.Sprintf("from another terminal: ecntune fleet status --config %s", d.agents[0].cfgPath))
	if d.cfg.FleetKillAfter > 0 {
		lines = append(lines, fmt.Sprintf("agent %s stops after %v, to show a failover", d.agents[len(d.agents)-1].id, d.cfg.FleetKillAfter))
	}
	return lines
}
