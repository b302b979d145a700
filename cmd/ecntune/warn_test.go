package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// simswitch and demo warn, as sim, eval and train do, about an ECN
// threshold below one MTU in the scenario (and demo in its --policy),
// before they fail or serve.
func TestSimswitchAndDemoWarnBelowMTU(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tiny.yaml")
	if err := os.WriteFile(p, []byte(tinyTrainScenario+"ecn: {kmin: 400B, kmax: 1600KB, pmax: 20%}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		run  func(args ...string) (string, error)
		args []string
		want []string
	}{
		{"simswitch", func(args ...string) (string, error) {
			cmd := newSimswitchCmd()
			var out syncBuf
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(args)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			return out.String(), err
		}, []string{"--scenario", p, "--listen", "256.0.0.1:1"},
			[]string{"warning: " + p + ": ecn: kmin 400B is below one MTU"}},
		{"demo", func(args ...string) (string, error) {
			cmd := newDemoCmd()
			var out syncBuf
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(args)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			return out.String(), err
		}, []string{"--scenario", p, "--listen", "256.0.0.1:1", "--policy", "schedule:sonic-default,1ms=1KB/400KB/1%"},
			[]string{"warning: " + p + ": ecn: kmin 400B is below one MTU",
				"warning: --policy schedule:sonic-default,1ms=1KB/400KB/1%: entry 2 (at 1ms): kmin 1KB is below one MTU"}},
	} {
		out, err := c.run(c.args...)
		if err == nil {
			t.Errorf("%s: listening on 256.0.0.1 succeeded", c.name)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q in\n%s", c.name, w, out)
			}
		}
	}
}
