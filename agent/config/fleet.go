package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ecntune/ecntune/internal/safeio"
)

// Fleet is the agent's membership of a fleet of agents on etcd (key
// fleet): many agents share the fabric's switches, exactly one writes
// each (agent/fleet). Nil: the agent writes every target it has.
type Fleet struct {
	Endpoints []string      // etcd client endpoints, host:port
	Name      string        // the fleet's name (its keys' prefix)
	Member    string        // this agent's member id (default: the host name)
	Zone      string        // this agent's zone: switches of its zone come to it first
	TTL       time.Duration // the member's lease (default 4 s: failover in under 5 s at p99)
	Takeover  time.Duration // a new owner's wait before its first write (default 250 ms, agent/fleet DefaultTakeover)
	TLS       *FleetTLS     // nil: etcd in plain text
}

// FleetTLS is how the agent reaches etcd over TLS (key fleet.tls): the CA
// that signed etcd's certificate (none: the system's), a client
// certificate and key when etcd asks for one, and the name etcd's
// certificate is for when it is not the endpoints' host.
type FleetTLS struct {
	CA, Cert, Key string
	ServerName    string
}

type fileFleet struct {
	Endpoints []string      `yaml:"endpoints"`
	Name      string        `yaml:"name"`
	Member    string        `yaml:"member"`
	Zone      string        `yaml:"zone"`
	TTL       string        `yaml:"ttl"`
	Takeover  string        `yaml:"takeover"`
	TLS       *fileFleetTLS `yaml:"tls"`
}

type fileFleetTLS struct {
	CA         string `yaml:"ca"`
	Cert       string `yaml:"cert"`
	Key        string `yaml:"key"`
	ServerName string `yaml:"server-name"`
}

// resolvePaths makes the TLS files of f relative to the configuration's
// folder (rel), as the targets' are.
func (f *fileFleet) resolvePaths(rel func(*string)) {
	if f == nil || f.TLS == nil {
		return
	}
	rel(&f.TLS.CA)
	rel(&f.TLS.Cert)
	rel(&f.TLS.Key)
}

// parseFleet reads the fleet key (nil: none). A fleet serves shadow mode
// and the closed loop alike: each member subscribes to, and records or
// tunes, the switches it owns.
func parseFleet(f *fileFleet) (*Fleet, error) {
	if f == nil {
		return nil, nil
	}
	// a zone is trimmed as a target's is: "row1 " would match no switch
	fl := &Fleet{Endpoints: f.Endpoints, Name: f.Name, Member: f.Member, Zone: strings.TrimSpace(f.Zone)}
	if len(fl.Endpoints) == 0 {
		return nil, fmt.Errorf("fleet.endpoints: required (the etcd cluster's client addresses, host:port)")
	}
	for i, e := range fl.Endpoints {
		if err := checkEndpoint(e); err != nil {
			return nil, fmt.Errorf("fleet.endpoints[%d]: %q: %v", i, e, err)
		}
	}
	if fl.Name == "" || strings.ContainsAny(fl.Name, "/ \t\n") || fl.Name == "." || fl.Name == ".." {
		return nil, fmt.Errorf("fleet.name: %q: want a name without '/' or blanks, not . or .. (the fleet's etcd keys are under /ecntune/fleet/NAME/: . and .. would be another fleet's, or every fleet's)", fl.Name)
	}
	if fl.Member == "" {
		fl.Member, _ = os.Hostname()
	}
	if fl.Member == "" || strings.ContainsAny(fl.Member, "/ \t\n") || fl.Member == "." || fl.Member == ".." {
		return nil, fmt.Errorf("fleet.member: %q: want an id without '/' or blanks, not . or .., unique in the fleet", fl.Member)
	}
	var err error
	if fl.TTL, err = optDuration("fleet.ttl", f.TTL, 4*time.Second); err != nil {
		return nil, err
	}
	if fl.TTL < 2*time.Second || fl.TTL > time.Hour || fl.TTL%time.Second != 0 {
		return nil, fmt.Errorf("fleet.ttl: %v: want whole seconds in 2s..1h (etcd leases are whole seconds)", fl.TTL)
	}
	if fl.Takeover, err = optDuration("fleet.takeover", f.Takeover, 0); err != nil {
		return nil, err
	}
	// 0 is the default's mark (agent/fleet DefaultTakeover): written out,
	// it would silently be 250ms
	if f.Takeover != "" && (fl.Takeover < time.Millisecond || fl.Takeover > MaxTakeover) {
		return nil, fmt.Errorf("fleet.takeover: %v: want at least 1ms (left out: %v) and at most %v (above the longest target commit-confirmed, %v): a new owner waits it before its first write to a switch, so every switch a failover moves goes untuned that long",
			fl.Takeover, DefaultFleetTakeover, MaxTakeover, MaxCommitConfirmed)
	}
	if f.TLS != nil {
		fl.TLS = &FleetTLS{CA: f.TLS.CA, Cert: f.TLS.Cert, Key: f.TLS.Key, ServerName: f.TLS.ServerName}
		if (fl.TLS.Cert == "") != (fl.TLS.Key == "") {
			return nil, fmt.Errorf("fleet.tls.cert/fleet.tls.key: give both or neither (a client certificate and its key)")
		}
		if _, err := fl.TLS.Config(); err != nil {
			return nil, err
		}
	}
	return fl, nil
}

// checkEndpoint says what is wrong with an etcd endpoint, which must be
// host:port (the agent dials it as such; TLS is fleet.tls, not a scheme):
// a wrong one would be tried for the join's whole timeout, then said to
// be an etcd that does not answer.
func checkEndpoint(e string) error {
	if strings.Contains(e, ",") {
		return fmt.Errorf("one endpoint a list item, not several in one string (endpoints: [10.0.0.5:2379, 10.0.0.6:2379])")
	}
	if strings.Contains(e, "://") {
		return fmt.Errorf("want host:port without a scheme (TLS is fleet.tls)")
	}
	host, port, err := net.SplitHostPort(e)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			return fmt.Errorf("no port (want host:port, etcd's client port is usually 2379)")
		}
		return fmt.Errorf("want host:port: %v", err)
	}
	if host == "" || strings.ContainsAny(host, " /") {
		return fmt.Errorf("no host (want host:port)")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a port number (1-65535)", port)
	}
	return nil
}

// Config reads the files of t into a client TLS configuration (TLS 1.2 at
// least); a nil t gives nil (plain text). Errors name the key and the
// file. The agent and the ecntune fleet commands dial etcd with it; the
// files are read again at each dial, so a renewed certificate is used at
// the next start.
func (t *FleetTLS) Config() (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CA != "" {
		b, err := safeio.ReadRegularFile(t.CA, safeio.MaxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("fleet.tls.ca: %v", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("fleet.tls.ca: %s: no PEM certificate in it", safeio.DisplayPath(t.CA))
		}
	}
	if t.Cert == "" && t.Key == "" {
		return c, nil
	}
	cert, err := safeio.ReadRegularFile(t.Cert, safeio.MaxPEMBytes)
	if err != nil {
		return nil, fmt.Errorf("fleet.tls.cert: %v", err)
	}
	key, err := safeio.ReadRegularFile(t.Key, safeio.MaxPEMBytes)
	if err != nil {
		return nil, fmt.Errorf("fleet.tls.key: %v", err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("fleet.tls.cert/fleet.tls.key: %s, %s: %v", safeio.DisplayPath(t.Cert), safeio.DisplayPath(t.Key), err)
	}
	c.Certificates = []tls.Certificate{pair}
	return c, nil
}

// DefaultFleetTakeover is what fleet.takeover left out is: agent/fleet's
// DefaultTakeover (a test of package agent holds them equal).
const DefaultFleetTakeover = 250 * time.Millisecond

// MaxTakeover bounds fleet.takeover: the longest wait it is for is a
// target's confirmed commit to settle (keep takeover above its
// commit-confirmed, at most MaxCommitConfirmed).
const MaxTakeover = MaxCommitConfirmed + time.Minute

// warnings are what looks wrong in f beside the targets without being
// invalid: a takeover longer than the ttl and every target's
// commit-confirmed (the waits it is for), and a zone no target has.
func (fl *Fleet) warnings(targets []Target) []string {
	var out []string
	var longest time.Duration
	zones := map[string]bool{}
	for _, t := range targets {
		longest = max(longest, t.CommitConfirmed)
		if t.Zone != "" {
			zones[t.Zone] = true
		}
	}
	if fl.Takeover > fl.TTL && fl.Takeover > longest {
		out = append(out, fmt.Sprintf("fleet.takeover: %v is longer than the ttl (%v) and every target's commit-confirmed: a new owner waits it before its first write to a switch, so every switch a failover moves goes untuned that long (left out: %v)",
			fl.Takeover, fl.TTL, DefaultFleetTakeover))
	}
	if fl.Zone != "" && !zones[fl.Zone] {
		have := "none has one"
		if len(zones) > 0 {
			have = "targets' zones: " + strings.Join(slices.Sorted(maps.Keys(zones)), ", ")
		}
		out = append(out, fmt.Sprintf("fleet.zone: %q is no target's zone (%s): no switch comes to this agent first for its zone", fl.Zone, have))
	}
	return out
}

// optDuration parses an optional duration key (def when empty).
func optDuration(key, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s: %q is not a duration (e.g. 5s)", key, s)
	}
	return d, nil
}

// FleetWriteShare is the share of fleet.ttl a write is sure to get: a
// member's writes end at its lease deadline (its newest renewal + ttl less
// 1%) and it renews every ttl/3, so a write that starts just before a
// renewal has ttl less a third less 1% left.
const FleetWriteShare = 1 - 1.0/3 - 1.0/100

// checkSetTimeouts refuses a fleet whose ttl is too short for a target's
// set-timeout (set, or sonic-gnmi's 60 s default): in a fleet every Set
// ends at its member's lease deadline, so a Set that takes its set-timeout
// would be cut every time (ttl 4 s and sonic's 60 s: no Set of 4.5 s ever
// completed, the queue never tuned). The agent's own default set timeout
// (5 s, no set-timeout key) is not held to it: it bounds Sets that take
// milliseconds, and ttl 4 s is the fleet's default.
func (fl *Fleet) checkSetTimeouts(targets []Target) error {
	var worst *Target
	for i, t := range targets {
		if t.SetTimeout > 0 && (worst == nil || t.SetTimeout > worst.SetTimeout) {
			worst = &targets[i]
		}
	}
	if worst == nil {
		return nil
	}
	budget := time.Duration(float64(fl.TTL) * FleetWriteShare)
	if worst.SetTimeout <= budget {
		return nil
	}
	need := time.Duration(math.Ceil(float64(worst.SetTimeout)/FleetWriteShare/float64(time.Second))) * time.Second
	what := "set-timeout"
	if worst.Dialect == DialectSONiC {
		what = "set-timeout (sonic-gnmi's default when not set)"
	}
	fit := budget.Truncate(time.Second)
	alt := fmt.Sprintf("or %s.set-timeout: %v or less if its Sets are that quick", worst.Name, fit)
	if fit < time.Second {
		alt = "set-timeout cannot be that short (1s at least)"
	}
	return fmt.Errorf("fleet.ttl: %v is too short for target %s's %s %v: in a fleet a Set ends at its member's lease deadline, "+
		"which leaves a write %v at least (the ttl less a third, the renewal period, less 1%%), so slower Sets would be cut every time: "+
		"set fleet.ttl: %v or more (a stopped member's switches then wait that long for a new owner), %s",
		fl.TTL, worst.Name, what, worst.SetTimeout, budget.Round(100*time.Millisecond), need, alt)
}
