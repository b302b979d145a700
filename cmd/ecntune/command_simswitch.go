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

func newSimswitchCmd() *cobra.Command {
	var (
		scenarioPath, listen, dialect, device, setLogPath, bufferModel, tlsCert, tlsKey, user, pass, step, statusEvery string
		timescale                                                                                                      float64
		perSwitch, nativeWrite, loop, sonicMux                                                                         bool
		sonicQueues                                                                                                    int
	)
	cmd := &cobra.Command{
		Use:   "simswitch --scenario FILE [--listen 127.0.0.1:57400]",
		Short: "Serve the switches of a simulated fabric over gNMI",
		Long: `Run the fabric simulator on a scenario, paced to the wall clock, and serve every switch
over gNMI (Capabilities, Get, Set, Subscribe ONCE/POLL/STREAM) in the openconfig or sonic dialect,
so that the agent or gnmic can talk to it as to real switches. --device imitates one kind of
switch (openconfig, arista-eos, nokia-srl, sonic, or ecntune's idealised switch): only the leaves
it serves, at its paths and origins, and only the writes it accepts; the fabric behind is the same.

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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if scenarioPath == "" {
				return fmt.Errorf("--scenario FILE is required (e.g. scenarios/star-incast.yaml)")
			}
			d, err := gnmipath.ParseDialect(dialect)
			if err != nil {
				return fmt.Errorf("--dialect: %v", err)
			}
			if device != "" {
				dev, err := gnmipath.LookupDevice(device)
				if err != nil {
					return fmt.Errorf("--device: %v", err)
				}
				if cmd.Flags().Changed("dialect") && dev.Dialect != d {
					return fmt.Errorf("--device %s speaks the %s dialect; drop --dialect %s", dev.Name, dev.Dialect, d)
				}
				d = dev.Dialect
			}
			if !(timescale > 0) {
				return fmt.Errorf("--timescale %g: must be > 0 (wall seconds per simulated second)", timescale)
			}
			st, err := units.ParseDuration(step)
			if err != nil || st <= 0 {
				return fmt.Errorf("--step %q: want a positive duration such as 5ms", step)
			}
			se, err := units.ParseDuration(statusEvery)
			if err != nil {
				return fmt.Errorf("--status-every: %v", err)
			}
			cfg, err := scenario.Load(scenarioPath)
			if err != nil {
				return err
			}
			warnAll(cmd.ErrOrStderr(), scenarioPath, scenario.Warnings(cfg))
			cfg.Loop = loop
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.ErrOrStderr()
			var setLog io.Writer
			if setLogPath != "" {
				f, err := os.OpenFile(setLogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
				if err != nil {
					return fmt.Errorf("--set-log: %v", err)
				}
				defer f.Close()
				setLog = f
			}
			srv, _, err := simswitch.Start(ctx, simswitch.Config{Sim: cfg, Dialect: d, Device: device, SetLog: setLog,
				SonicNativeWrite: nativeWrite, SonicBufferModel: bufferModel, SonicQueues: sonicQueues, SonicStreamMultiplexing: sonicMux,
				Listen: listen, PerSwitch: perSwitch,
				Timescale: timescale, Step: st, TLSCert: tlsCert, TLSKey: tlsKey, Username: user, Password: pass})
			if err != nil {
				return fmt.Errorf("%s: %w", scenarioPath, err)
			}
			defer srv.Close()
			printSimswitchBanner(out, srv, cfg.Name, d, timescale)
			fmt.Fprintf(out, "simswitch: device %s: %s\n", srv.Device().Name, srv.Device().Summary)
			return reportSimswitch(ctx, out, srv, se)
		},
	}
	f := cmd.Flags()
	f.StringVar(&scenarioPath, "scenario", "", "scenario YAML file")
	f.StringVar(&listen, "listen", "127.0.0.1:57400", "gNMI listen address (host:port)")
	f.StringVar(&dialect, "dialect", "openconfig", "gNMI dialect: openconfig or sonic")
	f.BoolVar(&nativeWrite, "sonic-native-write", false, "--device sonic: accept Sets (sonic-gnmi refuses writes unless started with native write)")
	f.StringVar(&bufferModel, "sonic-buffer-model", "static", "--device sonic: static (lossless PG profiles in CONFIG_DB) or dynamic (BUFFER_PG \"NULL\": computed by buffermgrd, headroom not writable)")
	f.IntVar(&sonicQueues, "sonic-queues", simswitch.DefaultSonicQueues, fmt.Sprintf("--device sonic: queues per port in COUNTERS_DB, 0-7 unicast and the rest idle multicast (%d to %d)", simenv.NumQueues, simswitch.MaxSonicQueues))
	f.BoolVar(&sonicMux, "sonic-stream-multiplexing", false, "--device sonic: serve many Subscribes per connection (sonic-gnmi's --enable_stream_multiplexing); by default a second Subscribe on a connection closes the first, as sonic-gnmi does")
	f.StringVar(&setLogPath, "set-log", "", "append a JSON line per lossless queue's setting at start and per change a Set makes (evidence for audits)")
	f.StringVar(&device, "device", "", "imitate this kind of switch: "+strings.Join(gnmipath.DeviceNames(), ", ")+
		" (what it serves and accepts; see gnmipath/PROFILES.md); default: ecntune's idealised switch, or sonic with --dialect sonic")
	f.Float64Var(&timescale, "timescale", 1000, "wall seconds per simulated second (1000: 1 s of telemetry = 1 ms of fabric time)")
	f.StringVar(&step, "step", "5ms", "wall time between simulation steps")
	f.BoolVar(&loop, "loop", false, "repeat the scenario's workloads every scenario duration: traffic that keeps going")
	f.BoolVar(&perSwitch, "per-switch-ports", false, "one listener per switch, on consecutive ports from --listen")
	f.StringVar(&tlsCert, "tls-cert", "", "TLS certificate (PEM); with --tls-key")
	f.StringVar(&tlsKey, "tls-key", "", "TLS private key (PEM)")
	f.StringVar(&user, "username", "", "require this username (gRPC metadata \"username\")")
	f.StringVar(&pass, "password", "", "require this password (gRPC metadata \"password\")")
	f.StringVar(&statusEvery, "status-every", "10s", "print simulated time and lag this often (0: never)")
	return cmd
}

// printSimswitchBanner says what is served: the fabric, each switch's
// fabric-ports (what faces another switch, as the agent's configuration
// wants them; fabric-ports: lldp finds the same from the LLDP state
// served) and the gNMI addresses.
func printSimswitchBanner(out io.Writer, srv *simswitch.Server, name string, d gnmipath.Dialect, timescale float64) {
	fmt.Fprintf(out, "simswitch: scenario %s, %d switches, dialect %s, timescale %g (1 s wall = %v simulated)\n",
		name, len(srv.Switches()), d, timescale, simenv.FromDuration(time.Second)/simenv.Time(timescale))
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
