package scenario

import (
	"fmt"

	"github.com/ecntune/ecntune/internal/safeio"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/simenv"
)

// HPCC (ns-3) topology files
//
// Line 1 is "<nodes> <switches> <links>", then the ids of the switches,
// then one line per link: "<a> <b> <rate> <delay> <error rate>", with ns-3
// rates ("100Gbps") and times ("1000ns", "0.001ms"). Only the declared
// number of links is read; whatever follows is ignored, as ns-3 does.
//
// Node ids are the file's. Nodes are named by id: switches "sw<id>", hosts
// "host<id>" (so host ids in flow files and names in scenarios agree).

// LoadHPCCTopology reads an HPCC topology file.
func LoadHPCCTopology(path string) (simenv.Topology, error) {
	data, err := readFile(path, "topology file", safeio.MaxTopologyBytes)
	if err != nil {
		return simenv.Topology{}, err
	}
	return ParseHPCCTopology(data, path)
}

// maxNodes bounds node counts (ns-3 HPCC addresses nodes with 16 bits).
const maxNodes = 1 << 16

// ParseHPCCTopology parses the content of an HPCC topology file; name labels
// errors.
func ParseHPCCTopology(data []byte, name string) (simenv.Topology, error) {
	name = safeio.DisplayPath(name)
	ts := newTokenStream(data, name)
	nodes, _, err := ts.int("node count", maxNodes)
	if err != nil {
		return simenv.Topology{}, err
	}
	if nodes < 2 {
		return simenv.Topology{}, fmt.Errorf("%s: line 1: %d nodes; a topology needs at least 2", name, nodes)
	}
	switches, _, err := ts.int("switch count", nodes)
	if err != nil {
		return simenv.Topology{}, err
	}
	links, _, err := ts.int("link count", nodes*nodes)
	if err != nil {
		return simenv.Topology{}, err
	}
	isSwitch, err := readSwitchIDs(ts, nodes, switches)
	if err != nil {
		return simenv.Topology{}, err
	}
	topo := simenv.Topology{Kind: "hpcc", Nodes: make([]simenv.Node, nodes)}
	for id := range topo.Nodes {
		if isSwitch[id] {
			topo.Nodes[id] = simenv.Node{Name: fmt.Sprintf("sw%d", id), Switch: true}
		} else {
			topo.Nodes[id] = simenv.Node{Name: fmt.Sprintf("host%d", id)}
		}
	}
	seen := map[[2]int64]int{}
	for i := int64(0); i < links; i++ {
		l, err := readHPCCLink(ts, fmt.Sprintf("link %d of %d", i+1, links), nodes, seen)
		if err != nil {
			return simenv.Topology{}, err
		}
		topo.Links = append(topo.Links, l)
	}
	return topo, nil
}

// readSwitchIDs reads the ids of the switches among nodes, refusing one
// listed twice.
func readSwitchIDs(ts *tokenStream, nodes, switches int64) ([]bool, error) {
	isSwitch := make([]bool, nodes)
	for i := int64(0); i < switches; i++ {
		id, line, err := ts.int(fmt.Sprintf("switch id %d of %d", i+1, switches), nodes-1)
		if err != nil {
			return nil, err
		}
		if isSwitch[id] {
			return nil, fmt.Errorf("%s: line %d: switch id %d is listed twice", ts.name, line, id)
		}
		isSwitch[id] = true
	}
	return isSwitch, nil
}

// readHPCCLink reads link what: "a b rate delay error-rate", refusing a
// loop, a node pair already linked (seen: the line of each pair's link)
// and a nonzero error rate.
func readHPCCLink(ts *tokenStream, what string, nodes int64, seen map[[2]int64]int) (simenv.Link, error) {
	name := ts.name
	a, line, err := ts.int(what+": node a", nodes-1)
	if err != nil {
		return simenv.Link{}, err
	}
	b, _, err := ts.int(what+": node b", nodes-1)
	if err != nil {
		return simenv.Link{}, err
	}
	if a == b {
		return simenv.Link{}, fmt.Errorf("%s: line %d: %s connects node %d to itself", name, line, what, a)
	}
	key := [2]int64{min(a, b), max(a, b)}
	if prev, dup := seen[key]; dup {
		return simenv.Link{}, fmt.Errorf("%s: line %d: %s repeats the link %d-%d of line %d (one link per node pair)", name, line, what, a, b, prev)
	}
	seen[key] = line
	rt, err := ts.next(what + ": rate")
	if err != nil {
		return simenv.Link{}, err
	}
	rate, err := parseNS3Rate(rt.s)
	if err != nil {
		return simenv.Link{}, fmt.Errorf("%s: line %d: %s: %v", name, rt.line, what, err)
	}
	dt, err := ts.next(what + ": delay")
	if err != nil {
		return simenv.Link{}, err
	}
	delay, err := parseNS3Time(dt.s)
	if err != nil {
		return simenv.Link{}, fmt.Errorf("%s: line %d: %s: delay: %v", name, dt.line, what, err)
	}
	et, err := ts.next(what + ": error rate")
	if err != nil {
		return simenv.Link{}, err
	}
	if er, perr := parseFloat(et.s); perr != nil || er != 0 {
		return simenv.Link{}, fmt.Errorf("%s: line %d: %s: error rate %s: only 0 is supported (random link loss is not modelled)", name, et.line, what, quote(et.s))
	}
	return simenv.Link{A: int(a), B: int(b), RateBps: rate, Delay: delay}, nil
}

// HPCC flow files
//
// The first token is the number of flows, then one flow per line:
// "<src> <dst> <priority> <dport> <size bytes> <start seconds>". Start times
// must not decrease (ns-3 schedules the flows one after the other). Start
// times convert to simulated time as ns-3 converts them: the double, scaled
// to nanoseconds and truncated. Only the declared number of flows is read,
// as ns-3 does; lines after them are a warning in an HPCC config and an
// error in a scenario's trace workload.

// LoadFlowFile reads an HPCC flow file: its declared flows, whatever
// follows them ignored. Node ids are not checked against a topology here;
// LoadHPCCConfig and the scenario loader do that.
func LoadFlowFile(path string) ([]simenv.TraceFlow, error) {
	flows, _, _, err := loadFlowFile(path)
	return flows, err
}

// ParseFlowFile parses the content of an HPCC flow file; name labels errors.
func ParseFlowFile(data []byte, name string) ([]simenv.TraceFlow, error) {
	flows, _, _, err := parseFlowFile(data, name)
	return flows, err
}

func loadFlowFile(path string) ([]simenv.TraceFlow, []int, flowRest, error) {
	data, err := readFile(path, "flow file", safeio.MaxFlowFileBytes)
	if err != nil {
		return nil, nil, flowRest{}, err
	}
	return parseFlowFile(data, path)
}

// flowRest is what follows the flows a flow file declares, which ns-3
// never reads.
type flowRest struct {
	name      string
	lines     int   // lines with anything on them
	first     int   // the first of them
	declared  int64 // the flow count
	countLine int   // its line
}

// String says where the rest starts and how much there is ("" for
// nothing): "f.txt: line 3: 2 more lines after the 1 flow declared on
// line 1".
func (r flowRest) String() string {
	if r.lines == 0 {
		return ""
	}
	return fmt.Sprintf("%s: line %d: %d more %s after the %s declared on line %d", r.name, r.first,
		r.lines, units.Plural(r.lines, "line"), units.Count(int(r.declared), "flow"), r.countLine)
}

// them is "them", or "it" for one line.
func (r flowRest) them() string {
	if r.lines == 1 {
		return "it"
	}
	return "them"
}

// parseFlowFile also returns the line of each flow, for later checks, and
// what follows the declared flows.
func parseFlowFile(data []byte, name string) ([]simenv.TraceFlow, []int, flowRest, error) {
	name = safeio.DisplayPath(name)
	ts := newTokenStream(data, name)
	n, countLine, err := ts.int("flow count", 1<<31)
	if err != nil {
		return nil, nil, flowRest{}, err
	}
	flows := make([]simenv.TraceFlow, 0, min(n, 1<<20))
	lines := make([]int, 0, cap(flows))
	for i := int64(0); i < n; i++ {
		what := fmt.Sprintf("flow %d of %d", i+1, n)
		src, line, err := ts.int(what+": src", maxNodes-1)
		if err != nil {
			return nil, nil, flowRest{}, err
		}
		dst, _, err := ts.int(what+": dst", maxNodes-1)
		if err != nil {
			return nil, nil, flowRest{}, err
		}
		pg, pgLine, err := ts.int(what+": priority", simenv.NumQueues-1)
		if err != nil {
			return nil, nil, flowRest{}, err
		}
		if pg == simenv.ControlQueue {
			return nil, nil, flowRest{}, fmt.Errorf("%s: line %d: %s: priority %d is the control queue (ACK/CNP); use 0..%d", name, pgLine, what, pg, simenv.ControlQueue-1)
		}
		dport, _, err := ts.int(what+": dport", 65535)
		if err != nil {
			return nil, nil, flowRest{}, err
		}
		size, sizeLine, err := ts.int(what+": size", 1<<50)
		if err != nil {
			return nil, nil, flowRest{}, err
		}
		if size == 0 {
			return nil, nil, flowRest{}, fmt.Errorf("%s: line %d: %s: size is 0 bytes; flows must carry at least 1 byte", name, sizeLine, what)
		}
		if size > simenv.MaxFlowBytes {
			// said here, with the line (the simulator said "workloads[0]:
			// flow 1 size ..." with neither file nor line)
			return nil, nil, flowRest{}, fmt.Errorf("%s: line %d: %s: size %d bytes is above the %d a flow may carry", name, sizeLine, what, size, int64(simenv.MaxFlowBytes))
		}
		st, err := ts.next(what + ": start time")
		if err != nil {
			return nil, nil, flowRest{}, err
		}
		start, err := secondsTime(st.s)
		if err != nil {
			return nil, nil, flowRest{}, fmt.Errorf("%s: line %d: %s: start time %v", name, st.line, what, err)
		}
		if len(flows) > 0 && start < flows[len(flows)-1].Start {
			return nil, nil, flowRest{}, fmt.Errorf("%s: line %d: %s starts at %s s, before the previous flow (%g s); flows must be in start-time order",
				name, st.line, what, st.s, flows[len(flows)-1].Start.Seconds())
		}
		flows = append(flows, simenv.TraceFlow{Src: int(src), Dst: int(dst), Priority: int(pg), DPort: int(dport), SizeBytes: size, Start: start})
		lines = append(lines, line)
	}
	rest := flowRest{name: name, declared: n, countLine: countLine}
	for last := 0; ; {
		t, err := ts.next("")
		if err != nil { // the end of the file
			break
		}
		if t.line != last {
			rest.lines, last = rest.lines+1, t.line
			if rest.first == 0 {
				rest.first = t.line
			}
		}
	}
	return flows, lines, rest, nil
}

// checkFlowNodes checks that every flow runs between two distinct hosts of
// topo.
func checkFlowNodes(flows []simenv.TraceFlow, lines []int, topo simenv.Topology, name string) error {
	host := func(id int) error {
		if id >= len(topo.Nodes) {
			return fmt.Errorf("node %d does not exist (the topology has nodes 0..%d)", id, len(topo.Nodes)-1)
		}
		if topo.Nodes[id].Switch {
			return fmt.Errorf("node %d is a switch (%s), not a host", id, topo.Nodes[id].Name)
		}
		return nil
	}
	for i, f := range flows {
		if err := host(f.Src); err != nil {
			return fmt.Errorf("%s: line %d: flow %d: src: %v", name, lines[i], i+1, err)
		}
		if err := host(f.Dst); err != nil {
			return fmt.Errorf("%s: line %d: flow %d: dst: %v", name, lines[i], i+1, err)
		}
		if f.Src == f.Dst {
			return fmt.Errorf("%s: line %d: flow %d: src and dst are both node %d", name, lines[i], i+1, f.Src)
		}
	}
	return nil
}
