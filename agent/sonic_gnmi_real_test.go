package agent

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/policy"
)

// The agent against the real sonic-gnmi server: ../shared/tools/sonic builds
// sonic-net/sonic-gnmi's telemetry server over a local Redis (its README
// says how; the build takes 12-14 minutes and root). Set SONIC_DIR to the
// built server's folder (and SONIC_TOOLS to the tool's folder when it is
// not ../shared/tools/sonic beside the repository); SONIC_SOAK sets how long
// each layout runs (default 20s). Without SONIC_DIR the test skips.
//
// Two layouts, each in shadow mode with the builtin model, as a new user
// would configure it (device sonic, four ports, queue 3): the tool's seed of
// a Broadcom-style switch (10 queues a port, 0-7 unicast and 8-9
// multicast, aliases etp1..etp4, no CABLE_LENGTH) and a Mellanox-style seed
// written here (8 queues, aliases Eth1/1.., ports Ethernet0/8/16/24, cable
// lengths). Each must give every controlled queue a recommendation within
// three sample intervals, log no malformed telemetry and no resubscription
// over the run, and the server must close no stream as a duplicate.
func TestE2ERealSonicGNMIServer(t *testing.T) {
	dir := os.Getenv("SONIC_DIR")
	if dir == "" {
		t.Skip("SONIC_DIR is not set: build the real sonic-gnmi server with ../shared/tools/sonic (see its README) and point SONIC_DIR at it to run the agent against it")
	}
	tools := os.Getenv("SONIC_TOOLS")
	if tools == "" {
		tools = filepath.Join("..", "..", "shared", "tools", "sonic")
	}
	script, err := filepath.Abs(filepath.Join(tools, "run-sonic-target.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(script); err != nil {
		t.Skipf("SONIC_DIR is set but the tool is not at %s (set SONIC_TOOLS): %v", script, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bin", "telemetry")); err != nil {
		t.Skipf("SONIC_DIR %s holds no built server (bin/telemetry): run the tool's build first: %v", dir, err)
	}
	soak := 20 * time.Second
	if s := os.Getenv("SONIC_SOAK"); s != "" {
		if soak, err = time.ParseDuration(s); err != nil {
			t.Fatalf("SONIC_SOAK: %v", err)
		}
	}
	mlx, err := json.MarshalIndent(mellanoxSeed(), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		seed  string // a seed file to load after start ("" keeps the tool's)
		ports []string
	}{
		{"broadcom-10q", "", []string{"Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"}},
		{"mellanox-8q", "mlx", []string{"Ethernet0", "Ethernet8", "Ethernet16", "Ethernet24"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			seed := filepath.Join(dir, "seed", "seed.json")
			if c.seed != "" {
				seed = filepath.Join(t.TempDir(), "seed.json")
				if err := os.WriteFile(seed, mlx, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			addr := startRealSonic(t, script, dir, seed, c.seed != "")
			tick := exec.Command("python3", filepath.Join(tools, "tick.py"), filepath.Join(dir, "run", "redis.sock"), seed,
				strconv.Itoa(int(soak.Seconds())+30))
			if err := tick.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tick.Process.Kill(); tick.Wait() })
			runAgainstRealSonic(t, addr, c.ports, soak, filepath.Join(dir, "run", "telemetry.log"))
		})
	}
}

// startRealSonic starts the tool's server on free loopback ports, loading
// seed into its Redis when custom, and stops it when the test ends.
func startRealSonic(t *testing.T, script, dir, seed string, custom bool) string {
	t.Helper()
	gport, rport := freePort(t), freePort(t)
	env := append(os.Environ(), "SONIC_DIR="+dir, "GNMI_PORT="+gport, "REDIS_PORT="+rport)
	out, err := os.Create(filepath.Join(t.TempDir(), "start.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	run := func(args ...string) {
		cmd := exec.Command("bash", append([]string{script}, args...)...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
		if err := cmd.Run(); err != nil {
			b, _ := os.ReadFile(out.Name())
			t.Fatalf("%s %v: %v\n%s", script, args, err, b)
		}
	}
	t.Cleanup(func() { run("stop") })
	run("start")
	if custom {
		// sonic-gnmi reads its port and queue maps once, at the first
		// request that needs them: load the seed before any.
		load := exec.Command("sh", "-c", "python3 \"$LOAD\" \"$SEED\" | redis-cli -s \"$SOCK\" --pipe")
		load.Env = append(env, "LOAD="+filepath.Join(filepath.Dir(script), "seed", "load_seed.py"), "SEED="+seed,
			"SOCK="+filepath.Join(dir, "run", "redis.sock"))
		if b, err := load.CombinedOutput(); err != nil {
			t.Fatalf("loading %s: %v\n%s", seed, err, b)
		}
	}
	return "127.0.0.1:" + gport
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// runAgainstRealSonic runs the agent in shadow mode on the server at addr
// for soak and checks what the closed issue asked of it.
func runAgainstRealSonic(t *testing.T, addr string, ports []string, soak time.Duration, serverLog string) {
	pol, err := policy.Lookup("builtin")
	if err != nil {
		t.Fatal(err)
	}
	tc := TargetConfig{Name: "sonic0", Address: addr, Insecure: true, Timeout: 5 * time.Second, RetryTimer: 2 * time.Second,
		Dialect: DialectSONiC, Device: "sonic", Ports: ports, Queues: []int{3}}
	var logs syncBuffer
	start := time.Now()
	e := runE2EFull(t, ModeShadow, pol, []TargetConfig{tc}, e2eGuard(), slog.New(slog.NewTextHandler(&logs, nil)), time.Second)
	var recs []Recommendation
	waitFor(t, 30*time.Second, "a recommendation for every controlled queue", func() bool {
		recs, _ = e.j.Recommendations("sonic0", 0, 0)
		return len(queuesOf(recs)) == len(ports)
	})
	first := time.Since(start)
	intervals := map[int64]bool{}
	for _, r := range recs {
		intervals[r.TimeNs] = true
	}
	if len(intervals) > 3 {
		t.Errorf("every queue had a recommendation only after %d sample intervals (want at most 3)", len(intervals))
	}
	time.Sleep(soak - time.Since(start))
	ti := e.a.Targets()
	all, _ := e.j.Recommendations("sonic0", 0, 0)
	e.stop(t)
	log := logs.String()
	for _, bad := range []string{"malformed telemetry", "resubscribing", "queue: disposed"} {
		if n := strings.Count(log, bad); n > 0 {
			t.Errorf("the agent's log has %d lines with %q over %s:\n%s", n, bad, soak, log)
		}
	}
	srv, _ := os.ReadFile(serverLog)
	if n := strings.Count(string(srv), "Delete duplicate client"); n > 0 {
		t.Errorf("the server closed %d subscriptions as duplicates of another on the same connection", n)
	}
	held := 0
	for _, r := range all {
		if strings.HasPrefix(r.Reason, "hold: counters over") {
			held++
		}
	}
	if held > 0 {
		t.Errorf("%d of %d recommendations held as outside the validated interval", held, len(all))
	}
	if len(ti) != 1 {
		t.Fatalf("targets %+v", ti)
	}
	b, _ := json.Marshal(ti[0])
	t.Logf("%s: every queue recommended after %s (%d sample intervals); %d recommendations over %s; /targets %s",
		addr, first.Round(10*time.Millisecond), len(intervals), len(all), soak, b)
}

// mellanoxSeed is a 4-port SONiC switch laid out as a Mellanox Spectrum
// one often is: 8 queues a port (no multicast queues in COUNTERS_DB), ports
// every 8 lanes, aliases of the form Eth1/N, the static buffer model with
// size = xon + xoff, cable lengths, in the tool's seed format (CONFIG_DB
// and COUNTERS_DB hashes by key).
func mellanoxSeed() map[string]map[string]map[string]string {
	cfg, cnt := map[string]map[string]string{}, map[string]map[string]string{}
	maps := []string{"COUNTERS_PORT_NAME_MAP", "COUNTERS_QUEUE_NAME_MAP", "COUNTERS_QUEUE_TYPE_MAP", "COUNTERS_QUEUE_INDEX_MAP",
		"COUNTERS_QUEUE_PORT_MAP", "COUNTERS_PG_NAME_MAP", "COUNTERS_PG_INDEX_MAP", "COUNTERS_PG_PORT_MAP"}
	for _, m := range maps {
		cnt[m] = map[string]string{}
	}
	cable := map[string]string{}
	for i := 0; i < 4; i++ {
		p := fmt.Sprintf("Ethernet%d", 8*i)
		cable[p] = "5m"
		cfg["PORT|"+p] = map[string]string{"admin_status": "up", "alias": fmt.Sprintf("Eth1/%d", i+1), "index": strconv.Itoa(i + 1),
			"lanes": fmt.Sprintf("%d,%d,%d,%d", 8*i, 8*i+1, 8*i+2, 8*i+3), "mtu": "9100", "speed": "100000"}
		cfg["PORT_QOS_MAP|"+p] = map[string]string{"pfc_enable": "3,4", "tc_to_queue_map": "AZURE", "tc_to_pg_map": "AZURE"}
		for q := 0; q < 8; q++ {
			e := map[string]string{"scheduler": "scheduler.0"}
			if q == 3 || q == 4 {
				e = map[string]string{"scheduler": "scheduler.1", "wred_profile": "AZURE_LOSSLESS"}
			}
			cfg[fmt.Sprintf("QUEUE|%s|%d", p, q)] = e
		}
		cfg["BUFFER_PG|"+p+"|0"] = map[string]string{"profile": "ingress_lossy_profile"}
		cfg["BUFFER_PG|"+p+"|3-4"] = map[string]string{"profile": "pg_lossless_100000_5m_profile"}
		poid := fmt.Sprintf("oid:0x10000000000%02x", i+1)
		cnt["COUNTERS_PORT_NAME_MAP"][p] = poid
		pc := map[string]string{"SAI_PORT_STAT_IF_IN_OCTETS": "0", "SAI_PORT_STAT_IF_OUT_OCTETS": "0"}
		for pr := 0; pr < 8; pr++ {
			for _, f := range []string{"RX_PKTS", "TX_PKTS", "RX_PAUSE_DURATION_US", "TX_PAUSE_DURATION_US"} {
				pc[fmt.Sprintf("SAI_PORT_STAT_PFC_%d_%s", pr, f)] = "0"
			}
		}
		cnt["COUNTERS:"+poid] = pc
		for q := 0; q < 8; q++ {
			qoid := fmt.Sprintf("oid:0x15000000000%03x", 0x100*(i+1)+q)
			cnt["COUNTERS_QUEUE_NAME_MAP"][fmt.Sprintf("%s:%d", p, q)] = qoid
			cnt["COUNTERS_QUEUE_TYPE_MAP"][qoid] = "SAI_QUEUE_TYPE_UNICAST"
			cnt["COUNTERS_QUEUE_INDEX_MAP"][qoid] = strconv.Itoa(q)
			cnt["COUNTERS_QUEUE_PORT_MAP"][qoid] = poid
			cnt["COUNTERS:"+qoid] = map[string]string{"SAI_QUEUE_STAT_PACKETS": "0", "SAI_QUEUE_STAT_BYTES": "0",
				"SAI_QUEUE_STAT_DROPPED_PACKETS": "0", "SAI_QUEUE_STAT_DROPPED_BYTES": "0",
				"SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": "0", "SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES": "0",
				"SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES": "0", "SAI_QUEUE_STAT_WATERMARK_BYTES": "0",
				"SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": "0"}
		}
		for pg := 0; pg < 8; pg++ {
			pgoid := fmt.Sprintf("oid:0x1a000000000%03x", 0x100*(i+1)+pg)
			cnt["COUNTERS_PG_NAME_MAP"][fmt.Sprintf("%s:%d", p, pg)] = pgoid
			cnt["COUNTERS_PG_INDEX_MAP"][pgoid] = strconv.Itoa(pg)
			cnt["COUNTERS_PG_PORT_MAP"][pgoid] = poid
			cnt["COUNTERS:"+pgoid] = map[string]string{"SAI_INGRESS_PRIORITY_GROUP_STAT_PACKETS": "0"}
		}
	}
	cfg["CABLE_LENGTH|AZURE"] = cable
	cfg["WRED_PROFILE|AZURE_LOSSLESS"] = map[string]string{"ecn": "ecn_all", "wred_green_enable": "true",
		"green_min_threshold": "1048576", "green_max_threshold": "2097152", "green_drop_probability": "5"}
	cfg["SCHEDULER|scheduler.0"] = map[string]string{"type": "DWRR", "weight": "14"}
	cfg["SCHEDULER|scheduler.1"] = map[string]string{"type": "DWRR", "weight": "15"}
	cfg["BUFFER_POOL|ingress_lossless_pool"] = map[string]string{"mode": "dynamic", "size": "12766208", "type": "ingress"}
	cfg["BUFFER_POOL|egress_lossless_pool"] = map[string]string{"mode": "dynamic", "size": "12766208", "type": "egress"}
	cfg["BUFFER_PROFILE|ingress_lossy_profile"] = map[string]string{"dynamic_th": "3", "pool": "ingress_lossless_pool", "size": "0"}
	cfg["BUFFER_PROFILE|pg_lossless_100000_5m_profile"] = map[string]string{"dynamic_th": "0", "pool": "ingress_lossless_pool",
		"size": "38912", "xon": "19456", "xoff": "19456"}
	cfg["TC_TO_QUEUE_MAP|AZURE"] = map[string]string{"0": "0", "1": "1", "2": "2", "3": "3", "4": "4", "5": "5", "6": "6", "7": "7"}
	cfg["DEVICE_METADATA|localhost"] = map[string]string{"hostname": "sonic-mlx", "hwsku": "ACS-MSN2700", "platform": "x86_64-mlnx_msn2700-r0",
		"type": "LeafRouter", "buffer_model": "traditional"}
	return map[string]map[string]map[string]string{"CONFIG_DB": cfg, "COUNTERS_DB": cnt}
}
