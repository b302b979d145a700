package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmic/pkg/api"

	"github.com/ecntune/ecntune/gnmipath"
)

// syncBuf is a bytes.Buffer safe for the command's goroutine and the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestSimswitchFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "--scenario FILE is required"},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--dialect", "junos"}, `--dialect: dialect "junos" is unknown (allowed: openconfig, sonic)`},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--timescale", "0"}, "--timescale 0: must be a finite number > 0"},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--timescale", "Inf"}, "--timescale +Inf: must be a finite number > 0"},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--timescale", "1e-9"}, "--timescale 1e-09: below the smallest timescale 0.00039"},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--tls-cert", "x.pem"}, "tls: give both a certificate and a key file"},
		{[]string{"--scenario", "nope.yaml"}, "nope.yaml"},
		// sonic-gnmi's flags without sonic: a mistake, said, not ignored
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--sonic-buffer-model", "nosuch"}, "--sonic-buffer-model is for --device sonic (this is device ecntune)"},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--device", "arista-eos", "--sonic-native-write"}, "--sonic-native-write is for --device sonic (this is device arista-eos)"},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--dialect", "sonic", "--sonic-queues", "9"}, "--sonic-queues is for --device sonic (this is device ecntune-sonic)"},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--device", "sonic", "--sonic-buffer-model", "nosuch"}, `sonic buffer model "nosuch"`},
	}
	for _, c := range cases {
		cmd := newSimswitchCmd()
		cmd.SetArgs(c.args)
		var out syncBuf
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
		if err != nil && strings.Contains(c.want, "tls") && strings.Contains(err.Error(), "star-incast.yaml") {
			t.Errorf("%v: a flag's error is put on the scenario file: %v", c.args, err)
		}
	}
}

// The command serves the scenario's switch until its context ends.
func TestSimswitchServes(t *testing.T) {
	cmd := newSimswitchCmd()
	cmd.SetArgs([]string{"--scenario", "../../scenarios/star-incast.yaml", "--listen", "127.0.0.1:0", "--dialect", "sonic", "--status-every", "0"})
	var out syncBuf
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	re := regexp.MustCompile(`gNMI for all switches on (127\.0\.0\.1:\d+)`)
	var addr string
	for addr == "" {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("command ended early: %v\n%s", err, out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	// Printed before the address: what to put in the agent's fabric-ports
	// (a star has none).
	if !strings.Contains(out.String(), "simswitch: sw0 fabric-ports: []") {
		t.Errorf("no fabric-ports line for sw0 in\n%s", out.String())
	}
	tg, err := api.NewTarget(api.Address(addr), api.Insecure(true), api.Timeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.CreateGNMIClient(ctx); err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	resp, err := tg.Get(ctx, &gnmi.GetRequest{Prefix: &gnmi.Path{Target: gnmipath.ConfigDB},
		Path: []*gnmi.Path{{Elem: []*gnmi.PathElem{{Name: "PORT"}}}}, Encoding: gnmi.Encoding_JSON_IETF})
	if err != nil {
		t.Fatal(err)
	}
	// star-incast: 16 hosts at 100 Gb/s on sw0
	ups := resp.GetNotification()[0].GetUpdate()
	if len(ups) != 16 || string(ups[0].GetVal().GetJsonIetfVal()) != `"100000"` {
		t.Fatalf("PORT table: %v", resp)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "stopped at simulated") || !strings.Contains(out.String(), "scenario star-incast, 1 switch, dialect sonic") {
		t.Fatalf("output:\n%s", out.String())
	}
}
