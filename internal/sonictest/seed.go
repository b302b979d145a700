package sonictest

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// MellanoxSeed is a 4-port SONiC switch laid out as a Mellanox Spectrum
// one often is: 8 queues a port (no multicast queues in COUNTERS_DB), ports
// every 8 lanes, aliases of the form Eth1/N, the static buffer model with
// size = xon + xoff, cable lengths, in the tool's seed format (CONFIG_DB
// and COUNTERS_DB hashes by key).
func MellanoxSeed() []byte {
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
	b, err := json.MarshalIndent(map[string]map[string]map[string]string{"CONFIG_DB": cfg, "COUNTERS_DB": cnt}, "", " ")
	if err != nil {
		panic(err)
	}
	return b
}
