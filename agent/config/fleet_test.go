package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fleet.tls: files relative to the configuration's folder, read at load;
// a missing file, a cert without its key or a file without PEM is an
// error naming the key and the file.
func TestFleetTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeTLSFiles(t, dir)
	load := func(tls string) (*Config, error) {
		doc := fmt.Sprintf("mode: closed-loop\ntargets:\n  leaf0: {address: 127.0.0.1:1, insecure: true}\nfleet: {endpoints: [127.0.0.1:2379], name: dc1, member: a, tls: %s}\n", tls)
		p := filepath.Join(dir, "agent.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return Load(p)
	}
	c, err := load(fmt.Sprintf("{ca: %s, cert: %s, key: %s, server-name: etcd.dc1}", filepath.Base(cert), cert, filepath.Base(key)))
	if err != nil {
		t.Fatal(err)
	}
	tl := c.Fleet.TLS
	if tl == nil || tl.CA != cert || tl.Key != key || tl.ServerName != "etcd.dc1" {
		t.Fatalf("fleet.tls: %+v", tl)
	}
	tc, err := tl.Config()
	if err != nil || tc.RootCAs == nil || len(tc.Certificates) != 1 || tc.ServerName != "etcd.dc1" {
		t.Fatalf("tls config: %v %+v", err, tc)
	}
	if c, err = load("{}"); err != nil || c.Fleet.TLS == nil {
		t.Fatalf("tls: {} (the system's CAs): %v", err)
	}
	if tc, err := c.Fleet.TLS.Config(); err != nil || tc.RootCAs != nil {
		t.Fatalf("tls: {}: %v %+v", err, tc)
	}
	if c, err = load("null"); err != nil || c.Fleet.TLS != nil {
		t.Fatalf("no tls: %v", err)
	}
	for _, bad := range []struct{ tls, want string }{
		{"{ca: missing.pem}", "fleet.tls.ca: open " + filepath.Join(dir, "missing.pem")},
		{"{cert: " + cert + "}", "fleet.tls.cert/fleet.tls.key: give both or neither"},
		{"{ca: " + filepath.Base(key) + "}", "fleet.tls.ca: " + key + ": no PEM certificate"},
		{fmt.Sprintf("{cert: %s, key: %s}", key, cert), "fleet.tls.cert/fleet.tls.key: " + key},
		{"{ca: " + cert + ", sni: x}", "sni"},
	} {
		if _, err := load(bad.tls); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("tls: %s: %v, want %q", bad.tls, err, bad.want)
		}
	}
}

// fleet.ttl is whole seconds in 2s..1h: etcd grants a lease of whole
// seconds, and a fractional TTL (granted as the seconds below it) would
// let a member's deadlines run past its lease.
func TestFleetTTLWholeSeconds(t *testing.T) {
	dir := t.TempDir()
	for ttl, ok := range map[string]bool{"4s": true, "2s": true, "1h": true, "4.9s": false, "2500ms": false, "1s": false, "61m": false} {
		doc := fmt.Sprintf("mode: closed-loop\ntargets:\n  leaf0: {address: 127.0.0.1:1, insecure: true}\nfleet: {endpoints: [127.0.0.1:2379], name: dc1, member: a, ttl: %s}\n", ttl)
		p := filepath.Join(dir, "agent.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "fleet.ttl")) {
			t.Errorf("ttl %s: %v", ttl, err)
		}
	}
}

// A fleet whose ttl leaves a Set less time than a target's set-timeout is
// refused, naming both and what to set: every Set in a fleet ends at the
// member's lease deadline (ttl 4 s beside sonic-gnmi's 60 s: no Set of
// 4.5 s ever completed). The agent's default set timeout is not held to
// it (ttl 4 s is the fleet's default).
func TestFleetTTLTooShortForASetTimeout(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ target, ttl, want string }{
		{"{address: 127.0.0.1:1, insecure: true}", "4s", ""},
		{"{address: 127.0.0.1:1, insecure: true, set-timeout: 2s}", "4s", ""},
		{"{address: 127.0.0.1:1, insecure: true, set-timeout: 3s}", "4s",
			"fleet.ttl: 4s is too short for target leaf0's set-timeout 3s: in a fleet a Set ends at its member's lease deadline, which leaves a write 2.6s at least " +
				"(the ttl less a third, the renewal period, less 1%), so slower Sets would be cut every time: set fleet.ttl: 5s or more (a stopped member's switches then wait that long for a new owner), " +
				"or leaf0.set-timeout: 2s or less if its Sets are that quick"},
		{"{address: 127.0.0.1:1, insecure: true, device: sonic}", "4s", "target leaf0's set-timeout (sonic-gnmi's default when not set) 1m0s"},
		{"{address: 127.0.0.1:1, insecure: true, device: sonic}", "4s", "set fleet.ttl: 1m32s or more"},
		{"{address: 127.0.0.1:1, insecure: true, device: sonic}", "92s", ""},
		{"{address: 127.0.0.1:1, insecure: true, device: sonic, set-timeout: 2s}", "4s", ""},
	} {
		doc := fmt.Sprintf("mode: closed-loop\ntargets:\n  leaf0: %s\nfleet: {endpoints: [127.0.0.1:2379], name: dc1, member: a, ttl: %s}\n", c.target, c.ttl)
		p := filepath.Join(dir, "agent.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s, ttl %s: %v (want %q)", c.target, c.ttl, err, c.want)
		}
	}
}

// fleetDoc is a configuration of one target (zone row1) with the fleet
// key fl (YAML flow).
func fleetDoc(fl string) string {
	return "mode: closed-loop\ntargets:\n  leaf0: {address: 127.0.0.1:57400, insecure: true, zone: row1}\nfleet: " + fl + "\n"
}

// A fleet name or member id of "." or ".." is refused, naming the key:
// the fleet's key prefix is path.Join("/ecntune/fleet", name), which
// cleans them away ("." read every fleet's keys, ".." all of ecntune's).
func TestFleetNameAndMemberNotDots(t *testing.T) {
	for _, bad := range []struct{ fl, want string }{
		{`{endpoints: ["127.0.0.1:2379"], name: ".", member: a}`, `fleet.name: "."`},
		{`{endpoints: ["127.0.0.1:2379"], name: "..", member: a}`, `fleet.name: ".."`},
		{`{endpoints: ["127.0.0.1:2379"], name: dc1, member: "."}`, `fleet.member: "."`},
		{`{endpoints: ["127.0.0.1:2379"], name: dc1, member: ".."}`, `fleet.member: ".."`},
	} {
		if _, err := Parse([]byte(fleetDoc(bad.fl))); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.fl, err, bad.want)
		}
	}
	if c, err := Parse([]byte(fleetDoc(`{endpoints: ["127.0.0.1:2379"], name: dc1.row1, member: agent..a}`))); err != nil || c.Fleet.Name != "dc1.row1" {
		t.Errorf("dots within a name: %v", err)
	}
}

// Each of fleet.endpoints is host:port with a port of 1-65535, refused at
// load naming the endpoint and what is wrong: before, a list written as
// one string, a URL without a port and a port that is not a number were
// accepted, then failed 10-30 s later as etcd not answering.
func TestFleetEndpointsChecked(t *testing.T) {
	for _, bad := range []struct{ eps, want string }{
		{`["10.0.0.5:2379,10.0.0.6:2379"]`, `fleet.endpoints[0]: "10.0.0.5:2379,10.0.0.6:2379": one endpoint a list item`},
		{`["10.0.0.5:2379", "http://10.0.0.6"]`, `fleet.endpoints[1]: "http://10.0.0.6": want host:port without a scheme`},
		{`["https://10.0.0.6:2379"]`, `fleet.endpoints[0]: "https://10.0.0.6:2379": want host:port without a scheme`},
		{`["10.0.0.5:abc"]`, `fleet.endpoints[0]: "10.0.0.5:abc": port "abc" is not a port number (1-65535)`},
		{`["10.0.0.5:0"]`, `port "0" is not a port number`},
		{`["10.0.0.5:70000"]`, `port "70000" is not a port number`},
		{`["10.0.0.5"]`, `fleet.endpoints[0]: "10.0.0.5": no port (want host:port`},
		{`[":2379"]`, `fleet.endpoints[0]: ":2379": no host (want host:port)`},
	} {
		if _, err := Parse([]byte(fleetDoc(`{endpoints: ` + bad.eps + `, name: dc1, member: a}`))); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.eps, err, bad.want)
		}
	}
	c, err := Parse([]byte(fleetDoc(`{endpoints: ["10.0.0.5:2379", "etcd-2.dc1:2379", "[fd00::7]:2379"], name: dc1, member: a}`)))
	if err != nil || len(c.Fleet.Endpoints) != 3 {
		t.Errorf("good endpoints: %v", err)
	}
}

// fleet.takeover: 0s is refused, saying what takes its place when left
// out (before, it was taken as "not set" and became 250 ms without a
// word), and so is one longer than any wait it is for (a target's
// commit-confirmed, at most MaxCommitConfirmed): before, 1h was accepted,
// every switch a failover moved then untuned for an hour. One longer than
// both the ttl and every target's commit-confirmed is said in Warnings.
func TestFleetTakeoverBounds(t *testing.T) {
	for _, bad := range []struct{ takeover, want string }{
		{"0s", "fleet.takeover: 0s: want at least 1ms (left out: 250ms)"},
		{"1h", "fleet.takeover: 1h0m0s: want at least 1ms (left out: 250ms) and at most 11m0s"},
	} {
		if _, err := Parse([]byte(fleetDoc(`{endpoints: ["127.0.0.1:2379"], name: dc1, member: a, takeover: ` + bad.takeover + `}`))); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("takeover %s: %v, want %q", bad.takeover, err, bad.want)
		}
	}
	c, err := Parse([]byte(fleetDoc(`{endpoints: ["127.0.0.1:2379"], name: dc1, member: a, takeover: 5m}`)))
	if err != nil || c.Fleet.Takeover != 5*time.Minute || !strings.Contains(strings.Join(c.Warnings, "\n"), "fleet.takeover: 5m0s is longer than the ttl (4s)") {
		t.Errorf("takeover 5m: %v %v", err, c.Warnings)
	}
	for _, ok := range []string{`takeover: 1ms`, `takeover: 3s`, ``} {
		c, err := Parse([]byte(fleetDoc(`{endpoints: ["127.0.0.1:2379"], name: dc1, member: a, ` + ok + `}`)))
		if err != nil || strings.Contains(strings.Join(c.Warnings, "\n"), "fleet.takeover") {
			t.Errorf("%q: %v %v", ok, err, c.Warnings)
		}
	}
}

// fleet.zone is trimmed as a target's zone is ("row1 " matched no target
// of zone row1, without a word), and one that no target has is warned of.
func TestFleetZoneTrimmedAndChecked(t *testing.T) {
	c, err := Parse([]byte(fleetDoc(`{endpoints: ["127.0.0.1:2379"], name: dc1, member: a, zone: "row1 "}`)))
	if err != nil || c.Fleet.Zone != "row1" || strings.Contains(strings.Join(c.Warnings, "\n"), "fleet.zone") {
		t.Errorf("zone \"row1 \": %v %q %v", err, c.Fleet.Zone, c.Warnings)
	}
	c, err = Parse([]byte(fleetDoc(`{endpoints: ["127.0.0.1:2379"], name: dc1, member: a, zone: Row1}`)))
	if err != nil || !strings.Contains(strings.Join(c.Warnings, "\n"), `fleet.zone: "Row1" is no target's zone (targets' zones: row1)`) {
		t.Errorf("zone Row1: %v %v", err, c.Warnings)
	}
}
