package report

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ecntune/ecntune/simenv"
)

// The ns-3 HPCC fct format: one line per finished flow, in the order flows
// finished:
//
//	sip dip sport dport size start_ns fct_ns standalone_ns
//
// with IPs as 8 hex digits. ns-3 gives node n the address 0x0b000001 +
// n × 0x100 (node 8 is 0b000801), so node ids up to 65535 round-trip.

// NodeIP is the IPv4 address ns-3 HPCC gives node id.
func NodeIP(id int) uint32 { return 0x0b000001 + uint32(id)<<8 }

// IPNode is the node id of an ns-3 HPCC address.
func IPNode(ip uint32) int { return int(ip>>8) & 0xffff }

// WriteFCT writes the finished flows in ns-3's fct format, ordered by finish
// time (flows finishing at the same instant keep their order in flows).
// Unfinished flows are left out, as ns-3 leaves them out.
func WriteFCT(w io.Writer, flows []simenv.FlowRecord) error {
	// Sort indices, not 80-byte records; the index breaks ties.
	done := make([]int, 0, len(flows))
	for i, f := range flows {
		if f.Finish != 0 {
			done = append(done, i)
		}
	}
	slices.SortFunc(done, func(a, b int) int {
		if c := cmp.Compare(flows[a].Finish, flows[b].Finish); c != 0 {
			return c
		}
		return a - b
	})
	bw := bufio.NewWriter(w)
	var line []byte
	for _, i := range done {
		f := &flows[i]
		line = appendHex8(line[:0], NodeIP(f.Src))
		line = append(line, ' ')
		line = appendHex8(line, NodeIP(f.Dst))
		for _, v := range [...]int64{int64(f.SPort), int64(f.DPort), f.SizeBytes, f.Start.Ns(), f.FCT().Ns(), f.Standalone.Ns()} {
			line = append(line, ' ')
			line = strconv.AppendInt(line, v, 10)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// appendHex8 appends v as 8 lower-case hex digits (printf's %08x).
func appendHex8(b []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	for shift := 28; shift >= 0; shift -= 4 {
		b = append(b, digits[v>>uint(shift)&0xf])
	}
	return b
}

// ReadFCT parses an fct file into flow records: Src and Dst from the
// addresses, Start, Finish = Start + fct and Standalone from the times (ns).
// ID is the line's index (0-based); fields the format lacks (Priority,
// Workload) are 0. Errors name the line.
func ReadFCT(r io.Reader) ([]simenv.FlowRecord, error) {
	var out []simenv.FlowRecord
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 8 {
			return nil, fmt.Errorf("fct line %d: want 8 fields \"sip dip sport dport size start_ns fct_ns standalone_ns\", got %d", line, len(f))
		}
		var ips [2]int
		for i := 0; i < 2; i++ {
			ip, err := strconv.ParseUint(f[i], 16, 32)
			if err != nil || len(f[i]) != 8 || ip&0xff != 0x01 || ip>>24 != 0x0b {
				return nil, fmt.Errorf("fct line %d: address %q is not an ns-3 HPCC node address (0b<node id as 4 hex digits>01)", line, f[i])
			}
			ips[i] = IPNode(uint32(ip))
		}
		var nums [6]int64
		names := [6]string{"sport", "dport", "size", "start_ns", "fct_ns", "standalone_ns"}
		for i := range nums {
			v, err := strconv.ParseInt(f[2+i], 10, 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("fct line %d: %s %q is not a non-negative integer", line, names[i], f[2+i])
			}
			nums[i] = v
		}
		if nums[4] == 0 {
			return nil, fmt.Errorf("fct line %d: fct_ns is 0; a finished flow takes time", line)
		}
		if nums[3] > int64(maxNs) || nums[4] > int64(maxNs) || nums[5] > int64(maxNs) {
			return nil, fmt.Errorf("fct line %d: times beyond %d ns", line, int64(maxNs))
		}
		start := simenv.Time(nums[3]) * simenv.Nanosecond
		out = append(out, simenv.FlowRecord{
			ID: len(out), Src: ips[0], Dst: ips[1], SPort: int(nums[0]), DPort: int(nums[1]), SizeBytes: nums[2],
			Start: start, Finish: start + simenv.Time(nums[4])*simenv.Nanosecond,
			Standalone: simenv.Time(nums[5]) * simenv.Nanosecond,
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("fct line %d: %w", line+1, err)
	}
	return out, nil
}

// maxNs keeps start + fct inside int64 picoseconds.
const maxNs = (1 << 62) / int64(simenv.Nanosecond) / 2
