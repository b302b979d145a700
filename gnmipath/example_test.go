package gnmipath_test

import (
	"fmt"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/gnmipath"
)

// A Decoder turns notifications, as a switch's Subscribe sends them, into
// an env.Snapshot: here two samples of a SONiC switch through sonic-gnmi
// (queue 3 of a 10-queue port keyed by its alias, the port's PFC counters,
// and the CONFIG_DB tables that name the alias and bind the queue's WRED
// profile). Queues other than the configured ones are read and left out.
func ExampleDecoder() {
	note := func(ts int64, target, path, json string) *gnmi.Notification {
		_, el, err := gnmipath.ParsePath(path)
		if err != nil {
			panic(err)
		}
		return &gnmi.Notification{Timestamp: ts, Prefix: &gnmi.Path{Target: target}, Update: []*gnmi.Update{{
			Path: &gnmi.Path{Elem: el}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(json)}}}}}
	}
	d := gnmipath.NewDecoder(gnmipath.Target{Name: "leaf0", Dialect: gnmipath.Sonic, Device: gnmipath.Devices["sonic"]}, 3)
	config := []*gnmi.Notification{
		note(1, "CONFIG_DB", "/PORT", `{"Ethernet0": {"alias": "etp1", "speed": "100000", "mtu": "9100"}}`),
		note(1, "CONFIG_DB", "/QUEUE", `{"Ethernet0|3": {"wred_profile": "AZURE_LOSSLESS"}}`),
		note(1, "CONFIG_DB", "/WRED_PROFILE/AZURE_LOSSLESS", `{"green_min_threshold": "1048576",
			"green_max_threshold": "2097152", "green_drop_probability": "5", "ecn": "ecn_all", "wred_green_enable": "true"}`),
	}
	for _, n := range config {
		if err := d.Apply(n); err != nil {
			panic(err)
		}
	}
	for i, tx := range []string{"1000", "3000"} {
		ts := int64(i+1) * 1_000_000_000
		q := `{"SAI_QUEUE_STAT_PACKETS": "` + tx + `", "SAI_QUEUE_STAT_BYTES": "` + tx + `000", "SAI_QUEUE_STAT_DROPPED_PACKETS": "0",
			"SAI_QUEUE_STAT_DROPPED_BYTES": "0", "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": "12"}`
		for _, n := range []*gnmi.Notification{
			note(ts, "COUNTERS_DB", "/COUNTERS/Ethernet*/Queues", `{"etp1:3": `+q+`, "etp1:9": `+q+`}`),
			note(ts, "COUNTERS_DB", "/COUNTERS/Ethernet*", `{"etp1": {"SAI_PORT_STAT_PFC_3_RX_PKTS": "4"}}`),
		} {
			if err := d.Apply(n); err != nil {
				panic(err)
			}
		}
	}
	s, incomplete := d.Snapshot()
	for _, q := range s.Queues {
		fmt.Printf("%s at %d ns: %d packets, %d marked, %d PFC frames received, %.0f Gb/s, Kmin %d B, Kmax %d B, Pmax %g\n",
			q.Key, s.TimeNs, q.TxPkts, q.MarkedPkts, q.PauseRx, q.RateBps/1e9, q.Setting.KminBytes, q.Setting.KmaxBytes, q.Setting.Pmax)
	}
	fmt.Println("incomplete:", len(incomplete))
	// Output:
	// leaf0/Ethernet0/q3 at 2000000000 ns: 3000 packets, 12 marked, 4 PFC frames received, 100 Gb/s, Kmin 1048576 B, Kmax 2097152 B, Pmax 0.05
	// incomplete: 0
}
