package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/scenario"
	"github.com/ecntune/ecntune/simswitch"
)

// simswitchOpts are the flags of "ecntune simswitch".
type simswitchOpts struct {
	scenarioPath, listen, dialect, device, setLogPath, bufferModel, tlsCert, tlsKey, user, pass, step, statusEvery string
	timescale                                                                                                      float64
	perSwitch, nativeWrite, loop, sonicMux, fence                                                                  bool
	sonicQueues                                                                                                    int
}

// newSimswitchCmd builds the "simswitch" command (a fresh one per call, so
// tests get fresh flags).
func newSimswitchCmd() *cobra.Command {
	var o simswitchOpts
	cmd := &cobra.Command{
		Use:   "simswitch --scenario FILE [--listen 127.0.0.1:57400]",
		Short: "Serve the switches of a simulated fabric over gNMI",
		Long: `Run the fabric simulator on a scenario, paced to the wall clock, and serve every switch
over gNMI (Capabilities, Get, Set, Subscribe ONCE/POLL/STREAM) in the openconfig or sonic dialect,
so that the agent or gnmic can talk to it as to real switches. --device imitates one kind of
switch (openconfig, arista-eos, nokia-srl, sonic, or ecntune's idealised switch): only the leaves
it serves, at its paths and origins, and only the writes it accepts; the fabric behind is the same.
--device sonic serves STREAM and ONCE (not POLL) and, unlike sonic-gnmi, no openconfig-lldp under
OC-YANG; --dialect sonic alone serves ecntune-sonic, the idealised switch in SONiC's layout.

Each switch is a gNMI target named as the simulator names it (sw0, leaf0, spine0, ...), with
interfaces Ethernet0, Ethernet1, ... in port order. With --dialect sonic, prefix.target is the
database (CONFIG_DB, COUNTERS_DB) and the switch is the namespace element after it
(/leaf0/COUNTERS/...), or give --per-switch-ports for one listener per switch (ports from
--listen upward) so that no namespace is needed.

Every port also has its LLDP neighbour in the openconfig-lldp state (/lldp/interfaces/
interface[name=X]/neighbors/...: the peer's node name, MAC_BRIDGE and ROUTER for a switch,
STATION_ONLY for a host), which the agent reads for fabric-ports: lldp; with --dialect sonic it
is under prefix.target OC-YANG, as sonic-gnmi serves openconfig models, and needs
--per-switch-ports.

Notification timestamps are simulated time (2026-01-01T00:00:00Z + simulated ns): counters move
at simulated speed, so rates computed from timestamps are right at any --timescale. The
simulation keeps running past the scenario's duration until interrupted; when the scenario's traffic
ends there, simswitch says so once. With --loop the workloads repeat every scenario duration, so
that the traffic keeps going.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.addFlags(cmd)
	return cmd
}

// addFlags registers the flags of "ecntune simswitch" on cmd.
func (o *simswitchOpts) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.scenarioPath, "scenario", "", "scenario YAML file")
	f.StringVar(&o.listen, "listen", "127.0.0.1:57400", "gNMI listen address (host:port)")
	f.StringVar(&o.dialect, "dialect", "openconfig", "gNMI dialect: openconfig or sonic (alone: the ecntune and ecntune-sonic devices)")
	f.BoolVar(&o.nativeWrite, "sonic-native-write", false, "--device sonic: accept Sets (sonic-gnmi refuses writes unless started with native write)")
	f.StringVar(&o.bufferModel, "sonic-buffer-model", "static", "--device sonic: static (lossless PG profiles in CONFIG_DB) or dynamic (BUFFER_PG \"NULL\": computed by buffermgrd, headroom not writable)")
	f.IntVar(&o.sonicQueues, "sonic-queues", simswitch.DefaultSonicQueues, fmt.Sprintf("--device sonic: queues per port in COUNTERS_DB, 0-7 unicast and the rest idle multicast (%d to %d)", simenv.NumQueues, simswitch.MaxSonicQueues))
	f.BoolVar(&o.sonicMux, "sonic-stream-multiplexing", false, "--device sonic: serve many Subscribes per connection (sonic-gnmi's --enable_stream_multiplexing); by default a second Subscribe on a connection closes the first, as sonic-gnmi does")
	f.StringVar(&o.setLogPath, "set-log", "", "append a JSON line per lossless queue's setting at start and per change a Set makes (evidence for audits)")
	f.BoolVar(&o.fence, "fence", false, "refuse (FailedPrecondition) a Set whose fencing token (gRPC metadata "+gnmipath.FenceMetadata+", sent by a fleet's agents) is lower than one the switch has seen; without it such Sets are taken, counted and warned about")
	f.StringVar(&o.device, "device", "", "imitate this kind of switch: "+strings.Join(gnmipath.DeviceNames(), ", ")+
		" (what it serves and accepts; see gnmipath/PROFILES.md); default: ecntune's idealised switch, ecntune-sonic (the same in SONiC's database layout, not the sonic-gnmi imitation: --device sonic) with --dialect sonic")
	f.Float64Var(&o.timescale, "timescale", 1000, "wall seconds per simulated second, at least 0.01 (1000: 1 s of telemetry = 1 ms of fabric time)")
	f.StringVar(&o.step, "step", "5ms", "wall time between simulation steps")
	f.BoolVar(&o.loop, "loop", false, "repeat the scenario's workloads every scenario duration: traffic that keeps going")
	f.BoolVar(&o.perSwitch, "per-switch-ports", false, "one listener per switch, on consecutive ports from --listen")
	f.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate (PEM); with --tls-key")
	f.StringVar(&o.tlsKey, "tls-key", "", "TLS private key (PEM)")
	f.StringVar(&o.user, "username", "", "require this username (gRPC metadata \"username\")")
	f.StringVar(&o.pass, "password", "", "require this password (gRPC metadata \"password\")")
	f.StringVar(&o.statusEvery, "status-every", "10s", "print simulated time and lag this often (0: never)")
}

// run serves the scenario's switches over gNMI until interrupted.
func (o *simswitchOpts) run(cmd *cobra.Command) error {
	if o.scenarioPath == "" {
		return fmt.Errorf("--scenario FILE is required (e.g. scenarios/star-incast.yaml)")
	}
	d, err := o.resolveDialect(cmd)
	if err != nil {
		return err
	}
	st, se, err := o.pacing()
	if err != nil {
		return err
	}
	cfg, err := scenario.Load(o.scenarioPath)
	if err != nil {
		return err
	}
	warnAll(cmd.ErrOrStderr(), o.scenarioPath, scenario.Warnings(cfg))
	cfg.Loop = o.loop
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := cmd.ErrOrStderr()
	var setLog io.Writer
	if o.setLogPath != "" {
		f, err := os.OpenFile(o.setLogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("--set-log: %v", err)
		}
		defer f.Close()
		setLog = f
	}
	srv, _, err := simswitch.Start(ctx, simswitch.Config{Sim: cfg, Dialect: d, Device: o.device, SetLog: setLog, Fence: o.fence,
		Warnf:            func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) },
		SonicNativeWrite: o.nativeWrite, SonicBufferModel: o.bufferModel, SonicQueues: o.sonicQueues, SonicStreamMultiplexing: o.sonicMux,
		Listen: o.listen, PerSwitch: o.perSwitch,
		Timescale: o.timescale, Step: st, TLSCert: o.tlsCert, TLSKey: o.tlsKey, Username: o.user, Password: o.pass})
	if err != nil {
		return fmt.Errorf("simswitch: %w", err) // Start names the scenario where it is the cause
	}
	defer srv.Close()
	defer func() {
		if st := srv.FenceStats(); st.Stale > 0 {
			fmt.Fprintf(out, "simswitch: %d Sets came with a fencing token older than one their switch had seen (%d refused)\n", st.Stale, st.Refused)
		}
	}()
	printSimswitchBanner(out, srv, cfg.Name, d, o.timescale)
	if note := simswitch.PaceNote(o.timescale); note != "" {
		fmt.Fprintf(out, "simswitch: warning: --%s\n", note)
	}
	fmt.Fprintf(out, "simswitch: device %s: %s\n", srv.Device().Name, srv.Device().Summary)
	return reportSimswitch(ctx, out, srv, se)
}

// resolveDialect is the dialect served: --dialect's, or --device's, which
// an explicit --dialect must agree with.
func (o *simswitchOpts) resolveDialect(cmd *cobra.Command) (gnmipath.Dialect, error) {
	d, err := gnmipath.ParseDialect(o.dialect)
	if err != nil {
		return d, fmt.Errorf("--dialect: %v", err)
	}
	if o.device != "" {
		dev, err := gnmipath.LookupDevice(o.device)
		if err != nil {
			return d, fmt.Errorf("--device: %v", err)
		}
		if cmd.Flags().Changed("dialect") && dev.Dialect != d {
			return d, fmt.Errorf("--device %s speaks the %s dialect; drop --dialect %s", dev.Name, dev.Dialect, d)
		}
		d = dev.Dialect
	}
	dev := gnmipath.DefaultDevice(d)
	if o.device != "" {
		dev, _ = gnmipath.LookupDevice(o.device)
	}
	if !dev.RealSonic {
		// sonic-gnmi's flags mean nothing to another device: given, they
		// are a mistake, not a default
		for _, fl := range []string{"sonic-native-write", "sonic-buffer-model", "sonic-queues", "sonic-stream-multiplexing"} {
			if cmd.Flags().Changed(fl) {
				return d, fmt.Errorf("--%s is for --device sonic (this is device %s)", fl, dev.Name)
			}
		}
	}
	return d, nil
}

// pacing checks --timescale and reads --step and --status-every.
func (o *simswitchOpts) pacing() (step, statusEvery time.Duration, err error) {
	if err := simswitch.CheckTimescale(o.timescale); err != nil {
		// Inf: the simulation never advanced ("stopped at simulated 0s");
		// 1e-9: the simulated time of a wall second overflowed
		return 0, 0, fmt.Errorf("--timescale %g: %v", o.timescale, err)
	}
	st, err := units.ParseDuration(o.step)
	if err != nil || st <= 0 {
		return 0, 0, fmt.Errorf("--step %q: want a positive duration such as 5ms", o.step)
	}
	se, err := units.ParseDuration(o.statusEvery)
	if err != nil {
		return 0, 0, fmt.Errorf("--status-every: %v", err)
	}
	return st, se, nil
}

// printSimswitchBanner says what is served: the fabric, each switch's
// fabric-ports (what faces another switch, as the agent's configuration
// wants them; fabric-ports: lldp finds the same from the LLDP state
// served) and the gNMI addresses.
func printSimswitchBanner(out io.Writer, srv *simswitch.Server, name string, d gnmipath.Dialect, timescale float64) {
	fmt.Fprintf(out, "simswitch: scenario %s, %s, dialect %s, timescale %g (1 s wall = %v simulated)\n",
		name, units.Count(len(srv.Switches()), "switch"), d, timescale, simswitch.Simulated(time.Second, timescale))
	for _, sw := range srv.Switches() {
		fmt.Fprintf(out, "simswitch: %s fabric-ports: [%s]\n", sw.Name, strings.Join(simswitch.FabricPorts(sw), ", "))
	}
	addrs := srv.Addrs()
	names := make([]string, 0, len(addrs))
	for n := range addrs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		who := n
		if n == "" {
			who = "all switches"
		}
		fmt.Fprintf(out, "simswitch: gNMI for %s on %s\n", who, addrs[n])
	}
}

// reportSimswitch prints the simulated time and the lag every statusEvery
// (0: never) until ctx ends, then where the simulation stopped; it says
// once when the scenario's traffic has ended.
func reportSimswitch(ctx context.Context, out io.Writer, srv *simswitch.Server, statusEvery time.Duration) error {
	endCheck := time.NewTicker(100 * time.Millisecond)
	defer endCheck.Stop()
	ended := false
	var tick <-chan time.Time
	if statusEvery > 0 {
		t := time.NewTicker(statusEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			now, _ := srv.Status()
			fmt.Fprintf(out, "simswitch: stopped at simulated %v\n", now)
			return nil
		case <-endCheck.C:
			if !ended && srv.Ended() {
				ended = true
				fmt.Fprintf(out, "simswitch: the scenario's traffic ended at simulated %v; the fabric is idle from now on (--loop repeats it)\n", srv.End())
			}
		case <-tick:
			now, lag := srv.Status()
			fmt.Fprintf(out, "simswitch: simulated %v, behind pace by %v\n", now, lag)
		}
	}
}
