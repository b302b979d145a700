package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/cmd/ecntune/internal/bench"
	"github.com/ecntune/ecntune/cmd/ecntune/internal/demo"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/scenario"
	"github.com/ecntune/ecntune/simswitch"
)

// demoDefaultScenario is the demo's scenario when --scenario is not
// given and the file exists (run from the repository); else the embedded
// training scenario.
const demoDefaultScenario = "scenarios/websearch-50.yaml"

func newDemoCmd() *cobra.Command {
	var (
		scenarioPath, listen, gnmiListen, interval, pol, db, logFormat, logLevel, killAfter string
		timescale                                                                           float64
		closedLoop, once                                                                    bool
		fleetN                                                                              int
	)
	cmd := &cobra.Command{
		Use:   "demo [--closed-loop | --fleet 3] [--listen 127.0.0.1:9273] [--scenario FILE] [--timescale 1000]",
		Short: "Run a simulated fabric, its gNMI switches and the agent in one process; open the printed URL",
		Long: `Start in one process: the fabric simulator on a scenario, served as gNMI switches on loopback
(its traffic repeating every scenario duration, so that the fabric never goes quiet), and the agent
on those switches in shadow mode, with its HTTP endpoints on --listen: the dashboard at /,
/recommendations, /changes, /metrics, /healthz, and /demo (the simulated fabric's state as JSON).
--closed-loop lets the agent apply its recommendations through the guardrails, so that tuning
shows live. Ctrl-C (SIGINT or SIGTERM) stops everything.

The scenario defaults to scenarios/websearch-50.yaml when run from the repository, else the
embedded web-search training scenario. --timescale is wall seconds per simulated second (at least
0.00039; below 1 a loaded fabric falls behind): at the default 1000, one second on the dashboard is one simulated millisecond. --once runs the scenario's
traffic once: after its duration the fabric is idle and /healthz says so. The agent's database is
a temporary file removed at exit unless --db names one. The simulated switches start at their
defaults on every start: with a kept --db the agent is told they restarted, and takes their
defaults as the baseline (its hold times stay), not as another writer's changes.

--fleet N (2 or more) runs N agents in closed loop as a fleet instead: an embedded one-member etcd
on loopback, and agents a, b, c... of the fleet "demo" on it, each with its own db and its own
endpoints (the first on --listen, the others on the ports after it, or free ones; /fleet shows the
fleet). The fleet's elected leader spreads the switches over the agents; each agent writes only
the switches it owns. The demo prints the placement at start and whenever it changes.
--fleet-kill-after 30s stops the last agent after 30 s: its switches fail over to the others.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			log, err := newLogger(cmd.ErrOrStderr(), logFormat, logLevel)
			if err != nil {
				return err
			}
			iv, err := units.ParseDuration(interval)
			if err != nil {
				return fmt.Errorf("--interval: %v", err)
			}
			if iv <= 0 { // 0 was read as the default, 1 s; the floor is checked with the config
				return fmt.Errorf("--interval %s: the agent's control interval is at least %s", interval, config.MinInterval)
			}
			if err := simswitch.CheckTimescale(timescale); err != nil {
				return fmt.Errorf("--timescale %g: %w", timescale, err)
			}
			kill, err := demoFleetFlags(fleetN, killAfter)
			if err != nil {
				return err
			}
			sc, name, err := demoScenario(scenarioPath)
			if err != nil {
				return err
			}
			warnAll(cmd.ErrOrStderr(), name, scenario.Warnings(sc))
			warnAll(cmd.ErrOrStderr(), "--policy "+pol, policy.SpecWarnings(pol))
			return runDemo(cmd, name, demo.Config{Scenario: sc, Once: once, Listen: listen, GNMIListen: gnmiListen,
				Timescale: timescale, Interval: iv, ClosedLoop: closedLoop, Policy: pol, Resolver: policyResolver(""), DB: db, Logger: log,
				Fleet: fleetN, FleetKillAfter: kill, Events: func(l string) { fmt.Fprintln(out, "demo: "+l) }})
		},
	}
	f := cmd.Flags()
	f.StringVar(&scenarioPath, "scenario", "", "scenario YAML file (default "+demoDefaultScenario+" if present, else the embedded web-search scenario)")
	f.StringVar(&listen, "listen", "127.0.0.1:9273", "HTTP address of the dashboard and the agent's endpoints (port 0: any free port)")
	f.StringVar(&gnmiListen, "gnmi-listen", "127.0.0.1:0", "gNMI address of the simulated switches")
	f.Float64Var(&timescale, "timescale", 1000, "wall seconds per simulated second, at least 0.01 (1000: 1 s on screen = 1 ms of fabric time)")
	f.StringVar(&interval, "interval", "1s", "the agent's control interval (at least 100ms)")
	f.BoolVar(&closedLoop, "closed-loop", false, "apply the recommendations through the guardrails (tuning live) instead of only recording them")
	f.BoolVar(&once, "once", false, "run the scenario's traffic once instead of repeating it")
	f.StringVar(&pol, "policy", policy.DefaultSpec, "the agent's policy (as in the agent's policy: key)")
	f.StringVar(&db, "db", "", "keep the agent's database in this file (default: a temporary file removed at exit; with --fleet, x.db keeps x-a.db, x-b.db...)")
	f.IntVar(&fleetN, "fleet", 0, "run this many agents (2 or more) in closed loop as a fleet on an embedded etcd, each writing the switches it owns")
	f.StringVar(&killAfter, "fleet-kill-after", "", "with --fleet: stop the last agent after this long (e.g. 30s), to show its switches failing over")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&logLevel, "log-level", "warn", "log level of the agent and the switches: debug, info, warn or error")
	return cmd
}

// runDemo starts the demo of scenario name, says what runs where, and runs
// it until Ctrl-C (SIGINT or SIGTERM) or the command's context ends.
func runDemo(cmd *cobra.Command, name string, cfg demo.Config) error {
	out := cmd.OutOrStdout()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d, err := demo.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("demo (%s): %w", name, err)
	}
	for _, l := range d.Describe() {
		fmt.Fprintln(out, "demo: "+l)
	}
	fmt.Fprintln(out, "demo: Ctrl-C stops everything")
	err = d.Run(ctx, func(f demo.FirstRecommendation) {
		fmt.Fprintf(out, "demo: first recommendations for %s after %v (simulated %v): on the dashboard at %s (JSON: %srecommendations)\n",
			units.Count(f.Queues, "queue"), f.Wall.Round(time.Millisecond), f.Simulated, d.URL(), d.URL())
	})
	now, _ := d.Switches().Status()
	fmt.Fprintf(out, "demo: stopped at simulated %v\n", now)
	return err
}

// demoFleetFlags checks --fleet and --fleet-kill-after.
func demoFleetFlags(n int, killAfter string) (time.Duration, error) {
	if n == 1 || n < 0 {
		return 0, fmt.Errorf("--fleet %d: a fleet is 2 agents or more (without --fleet the demo runs one agent)", n)
	}
	if killAfter == "" {
		return 0, nil
	}
	if n == 0 {
		return 0, errors.New("--fleet-kill-after: only with --fleet N")
	}
	d, err := units.ParseDuration(killAfter)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--fleet-kill-after %q: want a positive duration such as 30s", killAfter)
	}
	return d, nil
}

// demoScenario loads the scenario named by the flag, or the default.
func demoScenario(flag string) (simenv.Config, string, error) {
	path := flag
	if path == "" {
		if _, err := os.Stat(demoDefaultScenario); errors.Is(err, fs.ErrNotExist) {
			n, err := bench.LoadBuiltinScenario()
			return n.Config, n.Path, err
		}
		path = demoDefaultScenario
	}
	cfg, err := scenario.Load(path)
	return cfg, path, err
}
