package config

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Fleet is the agent's membership of a fleet of agents on etcd (key
// fleet): many agents share the fabric's switches, exactly one writes
// each (agent/fleet). Nil: the agent writes every target it has.
type Fleet struct {
	Endpoints []string      // etcd client endpoints, host:port
	Name      string        // the fleet's name (its keys' prefix)
	Member    string        // this agent's member id (default: the host name)
	Zone      string        // this agent's zone: switches of its zone come to it first
	TTL       time.Duration // the member's lease (default 5 s)
	Takeover  time.Duration // a new owner's wait before its first write (default: the set timeout)
}

type fileFleet struct {
	Endpoints []string `yaml:"endpoints"`
	Name      string   `yaml:"name"`
	Member    string   `yaml:"member"`
	Zone      string   `yaml:"zone"`
	TTL       string   `yaml:"ttl"`
	Takeover  string   `yaml:"takeover"`
}

// parseFleet reads the fleet key (nil: none).
func parseFleet(f *fileFleet, mode Mode) (*Fleet, error) {
	if f == nil {
		return nil, nil
	}
	if mode != ModeClosedLoop {
		return nil, fmt.Errorf("fleet: only a closed loop writes switches; mode is %s (remove fleet, or set mode: closed-loop)", mode)
	}
	fl := &Fleet{Endpoints: f.Endpoints, Name: f.Name, Member: f.Member, Zone: f.Zone}
	if len(fl.Endpoints) == 0 {
		return nil, fmt.Errorf("fleet.endpoints: required (the etcd cluster's client addresses, host:port)")
	}
	for _, e := range fl.Endpoints {
		if !strings.Contains(e, ":") {
			return nil, fmt.Errorf("fleet.endpoints: %q has no port (want host:port)", e)
		}
	}
	if fl.Name == "" || strings.ContainsAny(fl.Name, "/ \t\n") {
		return nil, fmt.Errorf("fleet.name: %q: want a name without '/' or blanks", fl.Name)
	}
	if fl.Member == "" {
		fl.Member, _ = os.Hostname()
	}
	if fl.Member == "" || strings.ContainsAny(fl.Member, "/ \t\n") {
		return nil, fmt.Errorf("fleet.member: %q: want an id without '/' or blanks, unique in the fleet", fl.Member)
	}
	var err error
	if fl.TTL, err = optDuration("fleet.ttl", f.TTL, 5*time.Second); err != nil {
		return nil, err
	}
	if fl.TTL < 2*time.Second || fl.TTL > time.Hour {
		return nil, fmt.Errorf("fleet.ttl: %v is outside 2s..1h (etcd leases are whole seconds)", fl.TTL)
	}
	if fl.Takeover, err = optDuration("fleet.takeover", f.Takeover, 0); err != nil {
		return nil, err
	}
	return fl, nil
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
