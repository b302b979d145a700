package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runSim(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	c := newSimCmd()
	var out, errOut bytes.Buffer
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&errOut)
	c.SilenceUsage = true
	c.SilenceErrors = true
	err := c.Execute()
	return out.String(), errOut.String(), err
}

// TestSimFlagErrors covers the errors raised before any simulation starts;
// each names the flag or file at fault.
func TestSimFlagErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("topology: {kind: star, hosts: 4}\nworkloads: [{kind: incast, fanin: 9, size: 1MB, every: 1ms}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{nil, "give --scenario FILE (YAML) or --hpcc-config FILE"},
		{[]string{"--scenario", "a.yaml", "--hpcc-config", "b.txt"}, "--scenario and --hpcc-config both given"},
		{[]string{"--scenario", filepath.Join(dir, "none.yaml")}, "none.yaml: cannot read scenario"},
		{[]string{"--hpcc-config", filepath.Join(dir, "none.txt")}, "none.txt: cannot read HPCC config"},
		{[]string{"--scenario", bad}, "workloads[0].fanin: 9 senders need 10 hosts"},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--duration", "5"}, "--duration: cannot parse duration \"5\""},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--duration", "0ms"}, "--duration: 0ms must be above 0"},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--fct-out", filepath.Join(dir, "no", "such", "dir.txt")}, "--fct-out: open"},
		{[]string{"--seed", "x", "--scenario", "../../scenarios/star-incast.yaml"}, "invalid argument \"x\" for \"--seed\""},
		{[]string{"extra"}, "unknown command \"extra\""},
	}
	for _, tc := range cases {
		_, _, err := runSim(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sim %v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
