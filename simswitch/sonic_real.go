package simswitch

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
)

// This file imitates sonic-gnmi (github.com/sonic-net/sonic-gnmi,
// sonic_data_client: virtual_db.go, db_client.go, mixed_db_client.go) in
// front of the simulator, for device sonic:
//
//   - reads name the database in prefix.target, the namespace after a "/"
//     ("COUNTERS_DB/leaf0": here the namespace picks the switch);
//   - COUNTERS_DB is keyed by SAI object id (COUNTERS:oid:0x...), mapped by
//     COUNTERS_PORT_NAME_MAP and COUNTERS_QUEUE_NAME_MAP; the virtual paths
//     COUNTERS/Ethernet*/Queues and COUNTERS/Ethernet* answer one update
//     each, a JSON object keyed by the port's alias (by its name when the
//     path names one port), with "<alias>:<q>:periodic" entries carrying
//     SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES; every value is a string;
//   - STREAM subscriptions are SAMPLE (at least 1 s) or ON_CHANGE (on
//     COUNTERS_DB too, where counters change every sample); TARGET_DEFINED is
//     refused; each subscription path is a notification of its own, and so
//     is each path of a Get;
//   - one Subscribe per connection (its clients are keyed by the peer's
//     address): a second on a connection ends the first, InvalidArgument
//     "queue: disposed" (Config.SonicStreamMultiplexing lifts it);
//   - a table with no keys reads as an empty object (an older server
//     refused it NotFound: Config.SonicNoCableLength); an unknown database is
//     NotFound;
//   - 10 queues a port by default (Config.SonicQueues), 8 and up multicast
//     and idle, in the name, type and index maps;
//   - writes need origin sonic-db and paths /CONFIG_DB/<namespace>/TABLE/
//     KEY[/FIELD], and native write enabled; a Set is applied as the config
//     updater's JSON patch: writing an entry replaces it whole (fields not
//     given are gone), writing a field patches it; the result must hold to
//     SONiC's YANG (a BUFFER_PROFILE has a pool, references resolve,
//     WRED min <= max) or nothing changes;
//   - a lossless PG's BUFFER_PROFILE carries dynamic_th = log2 of the
//     simulator's alpha for that PG; a written dynamic_th (an integer
//     string, -8..8) sets the alpha of every PG bound to the profile;
//   - under the dynamic buffer model BUFFER_PG binds "NULL" and the lossless
//     profiles are not in CONFIG_DB.

// sonicDB is one switch's CONFIG_DB: table, key, field, value.
type sonicDB map[string]map[string]map[string]string

func (db sonicDB) clone() sonicDB {
	out := make(sonicDB, len(db))
	for t, es := range db {
		m := make(map[string]map[string]string, len(es))
		for k, f := range es {
			c := make(map[string]string, len(f))
			for n, v := range f {
				c[n] = v
			}
			m[k] = c
		}
		out[t] = m
	}
	return out
}

func (db sonicDB) set(table, key, field, v string) {
	if db[table] == nil {
		db[table] = map[string]map[string]string{}
	}
	if db[table][key] == nil {
		db[table][key] = map[string]string{}
	}
	db[table][key][field] = v
}

// portAlias is the vendor alias simswitch gives port i (as SONiC's
// port_config.ini does, e.g. etp1).
func portAlias(i int) string { return "etp" + strconv.Itoa(i+1) }

// newSonicDB lays switch info's starting configuration t out as CONFIG_DB,
// with the fields SONiC has that ecntune does not read (a port's alias and
// lanes, a queue's scheduler, WRED's yellow and red colours), for ports of
// queues queues.
func newSonicDB(info simenv.SwitchInfo, t gnmipath.Tree, dynamic bool, queues int) sonicDB {
	db := sonicDB{}
	for l, v := range t {
		d, el := gnmipath.LeafPath(gnmipath.Sonic, l)
		if d != gnmipath.ConfigDB || len(el) != 3 {
			continue
		}
		db.set(el[0].GetName(), el[1].GetName(), el[2].GetName(), gnmipath.EncodeVal(gnmipath.Sonic, l, v).GetStringVal())
	}
	for i, p := range info.Ports {
		db.set("PORT", p.Name, "speed", strconv.FormatInt(int64(math.Round(p.RateBps/1e6)), 10))
		db.set("PORT", p.Name, "alias", portAlias(i))
		db.set("PORT", p.Name, "lanes", strconv.Itoa(4*i)+","+strconv.Itoa(4*i+1)+","+strconv.Itoa(4*i+2)+","+strconv.Itoa(4*i+3))
		// The port MTU (an IP packet) of the simulator's frames, as the
		// decoder's floor adds the Ethernet header and FCS back.
		db.set("PORT", p.Name, "mtu", strconv.Itoa(info.FrameBytes-gnmipath.EthernetOverhead))
		db.set("PORT", p.Name, "admin_status", "up")
		// SONiC's one CABLE_LENGTH entry, one field per port in whole
		// metres (sonic-cable-length.yang: [0-9]+m), rounded up so that
		// the floor computed from it is never below the simulator's.
		db.set("CABLE_LENGTH", "AZURE", p.Name, strconv.FormatFloat(math.Ceil(p.CableMeters-1e-9), 'f', 0, 64)+"m")
	}
	for k := range db["QUEUE"] {
		db.set("QUEUE", k, "scheduler", "scheduler.1")
	}
	// Every other queue of the port (the multicast ones above the
	// simulator's 0..7 too) has a QUEUE entry with a scheduler and no
	// WRED profile, as SONiC's QoS templates write them.
	for _, p := range info.Ports {
		for q := 0; q < queues; q++ {
			k := p.Name + "|" + strconv.Itoa(q)
			if _, ok := db["QUEUE"][k]; !ok {
				db.set("QUEUE", k, "scheduler", "scheduler.0")
			}
		}
	}
	for k := range db["WRED_PROFILE"] {
		db.set("WRED_PROFILE", k, "wred_yellow_enable", "true")
		db.set("WRED_PROFILE", k, "wred_red_enable", "true")
	}
	if info.BufferBytes > 0 {
		db.set("BUFFER_POOL", gnmipath.LosslessPool, "size", strconv.FormatInt(info.BufferBytes, 10))
	}
	db.set("BUFFER_POOL", gnmipath.LosslessPool, "type", "ingress")
	db.set("BUFFER_POOL", gnmipath.LosslessPool, "mode", "dynamic")
	if dynamic {
		for k := range db["BUFFER_PG"] {
			db["BUFFER_PG"][k] = map[string]string{"profile": "NULL"}
		}
		delete(db, "BUFFER_PROFILE")
	}
	return db
}

// tree reads the configuration ecntune knows from db; a value SONiC's
// schema would refuse is an error naming it.
func (db sonicDB) tree() (gnmipath.Tree, error) {
	t := gnmipath.Tree{}
	for table, es := range db {
		for key, fs := range es {
			for f, v := range fs {
				el := []*gnmi.PathElem{{Name: table}, {Name: key}, {Name: f}}
				l, err := gnmipath.ParseLeaf(gnmipath.Sonic, gnmipath.ConfigDB, el)
				if err != nil {
					continue // a field ecntune does not read
				}
				if l.Field == gnmipath.PGProfile && strings.EqualFold(v, "NULL") {
					continue
				}
				val, err := gnmipath.DecodeVal(gnmipath.Sonic, l, &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: v}})
				if err != nil {
					return nil, fmt.Errorf("%s|%s %s: %v", table, key, f, err)
				}
				t[l] = val
			}
		}
	}
	return t, nil
}

// validate holds db to what SONiC's YANG models require of the tables
// ecntune writes.
func (db sonicDB) validate() error {
	for _, k := range sortedKeys(db["BUFFER_PROFILE"]) {
		e := db["BUFFER_PROFILE"][k]
		pool, ok := e["pool"]
		if !ok {
			return fmt.Errorf("BUFFER_PROFILE|%s: pool is mandatory", k)
		}
		if _, ok := db["BUFFER_POOL"][strings.Trim(strings.TrimPrefix(pool, "[BUFFER_POOL|"), "]")]; !ok {
			return fmt.Errorf("BUFFER_PROFILE|%s: pool %q does not exist", k, pool)
		}
	}
	for _, k := range sortedKeys(db["WRED_PROFILE"]) {
		e := db["WRED_PROFILE"][k]
		lo, errA := strconv.ParseUint(e["green_min_threshold"], 10, 64)
		hi, errB := strconv.ParseUint(e["green_max_threshold"], 10, 64)
		if errA == nil && errB == nil && lo > hi {
			return fmt.Errorf("WRED_PROFILE|%s: green_min_threshold %d is above green_max_threshold %d", k, lo, hi)
		}
	}
	for _, k := range sortedKeys(db["QUEUE"]) {
		if p, ok := db["QUEUE"][k]["wred_profile"]; ok {
			if _, ok := db["WRED_PROFILE"][unref(p)]; !ok {
				return fmt.Errorf("QUEUE|%s: wred_profile %q does not exist", k, p)
			}
		}
	}
	for _, k := range sortedKeys(db["BUFFER_PG"]) {
		p := db["BUFFER_PG"][k]["profile"]
		if strings.EqualFold(p, "NULL") {
			continue
		}
		if _, ok := db["BUFFER_PROFILE"][unref(p)]; !ok {
			return fmt.Errorf("BUFFER_PG|%s: profile %q does not exist", k, p)
		}
	}
	return nil
}

func unref(s string) string {
	if i := strings.IndexByte(s, '|'); strings.HasPrefix(s, "[") && i > 0 {
		return strings.TrimSuffix(s[i+1:], "]")
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sonicTarget splits a sonic-gnmi prefix.target into database and
// namespace and picks the switch the namespace names (or the listener's
// one switch).
func (v *service) sonicTarget(target string) (db string, sw int, err error) {
	db, ns, _ := strings.Cut(target, "/")
	if db != gnmipath.ConfigDB && db != gnmipath.CountersDB {
		return "", 0, status.Errorf(codes.NotFound, "Invalid target dbName %s", db)
	}
	if ns == "" || ns == "localhost" {
		sw, err = v.defaultSwitch()
		return db, sw, err
	}
	sw, err = v.switchNamed(ns)
	return db, sw, err
}

// sonicRead answers one read path: the update sonic-gnmi would send.
func (v *service) sonicRead(db string, sw int, p *gnmi.Path, consume bool) (*gnmi.Update, error) {
	n := make([]string, len(p.GetElem()))
	for i, e := range p.GetElem() {
		n[i] = e.GetName()
	}
	var val any
	var err error
	if db == gnmipath.CountersDB {
		val, err = v.sonicCounters(sw, n, consume)
	} else {
		v.s.r.mu.Lock()
		cfg := v.s.r.sonic[sw]
		v.s.r.mu.Unlock()
		val, err = sonicConfigValue(cfg, n, v.s.cfg.SonicNoCableLength)
	}
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(val)
	return &gnmi.Update{Path: p, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: b}}}, nil
}

func sonicConfigValue(db sonicDB, n []string, refuseAbsent bool) (any, error) {
	switch len(n) {
	case 1:
		if es, ok := db[n[0]]; ok {
			return es, nil
		}
		if !refuseAbsent {
			// sonic-gnmi answers a table with no keys with an empty
			// object (an older one refused it: Config.SonicNoCableLength).
			return map[string]any{}, nil
		}
	case 2:
		if e, ok := db[n[0]][n[1]]; ok {
			return e, nil
		}
	case 3:
		if f, ok := db[n[0]][n[1]][n[2]]; ok {
			return f, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "Failed to find %s in CONFIG_DB", strings.Join(n, "|"))
}

// oid is the SAI object id simswitch gives a port (q < 0) or queue.
func oid(port, q int) string {
	if q < 0 {
		return fmt.Sprintf("oid:0x1000000%09x", port+1)
	}
	return fmt.Sprintf("oid:0x15000000%08x", port*MaxSonicQueues+q+1)
}

// pgOid is the SAI object id simswitch gives a port's priority group.
func pgOid(port, pg int) string {
	return fmt.Sprintf("oid:0x1a000000%08x", port*simenv.NumQueues+pg+1)
}

// queueType is COUNTERS_QUEUE_TYPE_MAP's word for queue q: the
// simulator's queues 0..7 are unicast, the ones above multicast.
func queueType(q int) string {
	if q < simenv.NumQueues {
		return "SAI_QUEUE_TYPE_UNICAST"
	}
	return "SAI_QUEUE_TYPE_MULTICAST"
}

// sonicCounters answers a COUNTERS_DB path from switch sw's telemetry.
func (v *service) sonicCounters(sw int, n []string, consume bool) (any, error) {
	c := v.readCounters(sw, consume)
	switch {
	case len(n) == 1 && n[0] == "COUNTERS_PORT_NAME_MAP":
		return c.portNameMap(), nil
	case len(n) == 1 && (n[0] == "COUNTERS_QUEUE_NAME_MAP" || n[0] == "COUNTERS_QUEUE_TYPE_MAP" || n[0] == "COUNTERS_QUEUE_INDEX_MAP"):
		return c.queueMap(n[0]), nil
	case len(n) == 1 && n[0] == "COUNTERS_PG_NAME_MAP":
		return c.pgNameMap(), nil
	case len(n) == 1 && n[0] == "COUNTERS":
		return c.counters(), nil
	case len(n) == 3 && n[0] == "COUNTERS" && n[2] == "Queues":
		return c.portQueues(n[1])
	case len(n) == 2 && n[0] == "COUNTERS":
		return c.portCounters(n[1])
	}
	return nil, status.Errorf(codes.NotFound, "%s is not a COUNTERS_DB path served here", strings.Join(n, "/"))
}

// counterView is one switch's telemetry as COUNTERS_DB lays it out.
type counterView struct {
	info   simenv.SwitchInfo
	nq     int                           // queues a port
	byPort map[string][]*env.QueueSample // by port name, queues 0..nq-1
}

// readCounters reads switch sw's telemetry (consuming its window when
// consume) into a counterView, with the multicast queues above the
// simulator's idle.
func (v *service) readCounters(sw int, consume bool) *counterView {
	tel, _, _ := v.s.r.telemetry(sw, consume)
	info := v.s.r.infos[sw]
	all := make([]int, simenv.NumQueues)
	for q := range all {
		all[q] = q
	}
	snap := snapshot(info, &tel, all)
	byPort := map[string][]*env.QueueSample{}
	for i := range snap.Queues {
		q := &snap.Queues[i]
		byPort[q.Key.Port] = append(byPort[q.Key.Port], q)
	}
	// The multicast queues above the simulator's: idle, zero counters.
	nq := v.s.cfg.SonicQueues
	for _, p := range info.Ports {
		for q := simenv.NumQueues; q < nq; q++ {
			byPort[p.Name] = append(byPort[p.Name], &env.QueueSample{Key: env.QueueKey{Target: info.Name, Port: p.Name, Queue: q}})
		}
	}
	return &counterView{info: info, nq: nq, byPort: byPort}
}

// queueCounterFields are a queue's COUNTERS_DB fields.
func queueCounterFields(q *env.QueueSample) map[string]string {
	u := func(x uint64) string { return strconv.FormatUint(x, 10) }
	return map[string]string{"SAI_QUEUE_STAT_PACKETS": u(q.TxPkts), "SAI_QUEUE_STAT_BYTES": u(q.TxBytes),
		"SAI_QUEUE_STAT_DROPPED_PACKETS": u(q.DropPkts), "SAI_QUEUE_STAT_DROPPED_BYTES": u(q.DropBytes),
		"SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": u(q.MarkedPkts), "SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES": u(q.MarkedBytes),
		"SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES": strconv.FormatInt(q.CurQueueBytes, 10)}
}

// portCounterFields are a port's COUNTERS_DB fields, from its queues qs.
func portCounterFields(qs []*env.QueueSample) map[string]string {
	m := map[string]string{}
	var in, out uint64
	for _, q := range qs {
		if q.Key.Queue >= simenv.NumQueues {
			continue // PFC has priorities 0..7
		}
		i := strconv.Itoa(q.Key.Queue)
		m["SAI_PORT_STAT_PFC_"+i+"_RX_PKTS"] = strconv.FormatUint(q.PauseRx, 10)
		m["SAI_PORT_STAT_PFC_"+i+"_TX_PKTS"] = strconv.FormatUint(q.PauseTx, 10)
		m["SAI_PORT_STAT_PFC_"+i+"_RX_PAUSE_DURATION_US"] = strconv.FormatUint(q.PausedNs/1000, 10)
		out += q.TxBytes
	}
	m["SAI_PORT_STAT_IF_OUT_OCTETS"] = strconv.FormatUint(out, 10)
	m["SAI_PORT_STAT_IF_IN_OCTETS"] = strconv.FormatUint(in, 10)
	return m
}

// ports picks the ports pat names: those whose name starts with it when it
// ends in "*" (wild), else the one of that name or alias.
func (c *counterView) ports(pat string) (idx []int, wild bool, err error) {
	if strings.HasSuffix(pat, "*") {
		var out []int
		for i, p := range c.info.Ports {
			if strings.HasPrefix(p.Name, strings.TrimSuffix(pat, "*")) {
				out = append(out, i)
			}
		}
		return out, true, nil
	}
	for i, p := range c.info.Ports {
		if p.Name == pat || portAlias(i) == pat {
			return []int{i}, false, nil
		}
	}
	return nil, false, status.Errorf(codes.NotFound, "%v not a valid sonic interface", pat)
}

// portNameMap is COUNTERS_PORT_NAME_MAP: port name to oid.
func (c *counterView) portNameMap() map[string]string {
	m := map[string]string{}
	for i, p := range c.info.Ports {
		m[p.Name] = oid(i, -1)
	}
	return m
}

// queueMap is the queue map named table: COUNTERS_QUEUE_NAME_MAP
// ("<port>:<q>" to oid), COUNTERS_QUEUE_TYPE_MAP (oid to type) or
// COUNTERS_QUEUE_INDEX_MAP (oid to index).
func (c *counterView) queueMap(table string) map[string]string {
	m := map[string]string{}
	for i, p := range c.info.Ports {
		for q := 0; q < c.nq; q++ {
			switch table {
			case "COUNTERS_QUEUE_NAME_MAP":
				m[p.Name+":"+strconv.Itoa(q)] = oid(i, q)
			case "COUNTERS_QUEUE_TYPE_MAP":
				m[oid(i, q)] = queueType(q)
			default:
				m[oid(i, q)] = strconv.Itoa(q)
			}
		}
	}
	return m
}

// pgNameMap is COUNTERS_PG_NAME_MAP: "<port>:<pg>" to oid.
func (c *counterView) pgNameMap() map[string]string {
	m := map[string]string{}
	for i, p := range c.info.Ports {
		for pg := 0; pg < simenv.NumQueues; pg++ {
			m[p.Name+":"+strconv.Itoa(pg)] = pgOid(i, pg)
		}
	}
	return m
}

// counters is the COUNTERS table: every port's and queue's fields by oid.
func (c *counterView) counters() map[string]map[string]string {
	m := map[string]map[string]string{}
	for i, p := range c.info.Ports {
		m[oid(i, -1)] = portCounterFields(c.byPort[p.Name])
		for _, q := range c.byPort[p.Name] {
			m[oid(i, q.Key.Queue)] = queueCounterFields(q)
		}
	}
	return m
}

// portQueues answers COUNTERS/<pat>/Queues: the queues of the ports pat
// names, keyed "<port>:<q>" (by alias when pat is wild), each with its
// ":periodic" watermark entry.
func (c *counterView) portQueues(pat string) (any, error) {
	idx, wild, err := c.ports(pat)
	if err != nil {
		return nil, err
	}
	m := map[string]map[string]string{}
	for _, i := range idx {
		name := c.info.Ports[i].Name
		if wild {
			name = portAlias(i)
		}
		for _, q := range c.byPort[c.info.Ports[i].Name] {
			k := name + ":" + strconv.Itoa(q.Key.Queue)
			m[k] = queueCounterFields(q)
			m[k+":periodic"] = map[string]string{"SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": strconv.FormatInt(q.MaxQueueBytes, 10)}
		}
	}
	return m, nil
}

// portCounters answers COUNTERS/<pat>: one port's fields, or every
// matching port's keyed by alias when pat is wild.
func (c *counterView) portCounters(pat string) (any, error) {
	idx, wild, err := c.ports(pat)
	if err != nil {
		return nil, err
	}
	if !wild {
		return portCounterFields(c.byPort[c.info.Ports[idx[0]].Name]), nil
	}
	m := map[string]map[string]string{}
	for _, i := range idx {
		m[portAlias(i)] = portCounterFields(c.byPort[c.info.Ports[i].Name])
	}
	return m, nil
}

// sonicGet answers a Get.
func (v *service) sonicGet(req *gnmi.GetRequest) (*gnmi.GetResponse, error) {
	db, sw, err := v.sonicTarget(req.GetPrefix().GetTarget())
	if err != nil {
		return nil, err
	}
	tel, _, _ := v.s.r.telemetry(sw, false)
	resp := &gnmi.GetResponse{}
	for _, p := range req.GetPath() {
		// One notification per path, as sonic-gnmi answers.
		u, err := v.sonicRead(db, sw, p, false)
		if err != nil {
			return nil, err
		}
		resp.Notification = append(resp.Notification, &gnmi.Notification{Timestamp: SimTimestamp(tel.Time), Prefix: req.GetPrefix(), Update: []*gnmi.Update{u}})
	}
	return resp, nil
}

// sonicSubscribe serves one Subscribe RPC.
func (v *service) sonicSubscribe(ctx context.Context, list *gnmi.SubscriptionList, send sendFunc, recvDone <-chan error) error {
	db, sw, err := v.sonicTarget(list.GetPrefix().GetTarget())
	if err != nil {
		return err
	}
	interval, err := v.sonicInterval(db, list)
	if err != nil {
		return err
	}
	read := func(consume bool) error { return v.sonicSend(db, sw, list, send, consume) }
	cfgCh := v.s.r.configs.wait()
	if err := read(true); err != nil {
		return err
	}
	// ON_CHANGE on CONFIG_DB sends what changed, as sonic-gnmi does: the
	// keys changed, each with its fields, and {} for a key deleted or
	// whose fields shrank (it never says which field went)
	var last map[string]sonicConfigState
	if db == gnmipath.ConfigDB && interval == 0 {
		last = v.sonicConfigStates(sw, list)
	}
	if err := sendSync(send); err != nil {
		return err
	}
	if list.GetMode() != gnmi.SubscriptionList_STREAM {
		return nil
	}
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-recvDone:
			return err
		case <-cfgCh:
			cfgCh = v.s.r.configs.wait()
			if db == gnmipath.ConfigDB && interval == 0 {
				if err := v.sonicSendChanges(sw, list, last, send); err != nil {
					return err
				}
			}
		case <-tick:
			if err := read(true); err != nil {
				return err
			}
		}
	}
}

// sonicConfigState is what one CONFIG_DB subscription path held when last
// sent: a table's entries (path TABLE), an entry's fields (TABLE/KEY), or
// a field's value (TABLE/KEY/FIELD).
type sonicConfigState struct {
	entries map[string]map[string]string
	fields  map[string]string
	value   *string
}

// sonicConfigStates reads what each CONFIG_DB path of list holds now.
func (v *service) sonicConfigStates(sw int, list *gnmi.SubscriptionList) map[string]sonicConfigState {
	v.s.r.mu.Lock()
	db := v.s.r.sonic[sw]
	v.s.r.mu.Unlock()
	out := map[string]sonicConfigState{}
	for _, sub := range list.GetSubscription() {
		el := sub.GetPath().GetElem()
		key := gnmipath.PathString(el)
		var st sonicConfigState
		switch len(el) {
		case 1:
			st.entries = map[string]map[string]string{}
			for k, e := range db[el[0].GetName()] {
				st.entries[k] = maps.Clone(e)
			}
		case 2:
			st.fields = maps.Clone(db[el[0].GetName()][el[1].GetName()])
		case 3:
			if f, ok := db[el[0].GetName()][el[1].GetName()][el[2].GetName()]; ok {
				st.value = &f
			}
		}
		out[key] = st
	}
	return out
}

// sonicSendChanges sends, per CONFIG_DB path of list, what changed since
// last (updated to now): a changed or new entry with all its fields, {}
// for an entry deleted or one that lost a field; nothing for a path where
// nothing changed.
func (v *service) sonicSendChanges(sw int, list *gnmi.SubscriptionList, last map[string]sonicConfigState, send sendFunc) error {
	now := v.sonicConfigStates(sw, list)
	tel, _, _ := v.s.r.telemetry(sw, false)
	shrank := func(old, cur map[string]string) bool {
		for f := range old {
			if _, ok := cur[f]; !ok {
				return true
			}
		}
		return false
	}
	for _, sub := range list.GetSubscription() {
		key := gnmipath.PathString(sub.GetPath().GetElem())
		old, cur := last[key], now[key]
		var val any
		switch {
		case cur.entries != nil || old.entries != nil:
			diff := map[string]any{}
			for k, e := range old.entries {
				if c, ok := cur.entries[k]; !ok || shrank(e, c) {
					diff[k] = map[string]string{}
				}
			}
			for k, e := range cur.entries {
				if _, done := diff[k]; !done && !maps.Equal(old.entries[k], e) {
					diff[k] = e
				}
			}
			if len(diff) > 0 {
				val = diff
			}
		case len(sub.GetPath().GetElem()) == 2:
			switch {
			case shrank(old.fields, cur.fields):
				val = map[string]string{}
			case !maps.Equal(old.fields, cur.fields):
				val = cur.fields
			}
		case cur.value != nil && (old.value == nil || *old.value != *cur.value):
			val = *cur.value
		}
		if val == nil {
			continue
		}
		b, _ := json.Marshal(val)
		n := &gnmi.Notification{Timestamp: SimTimestamp(tel.Time), Prefix: list.GetPrefix(), Update: []*gnmi.Update{{Path: sub.GetPath(),
			Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: b}}}}}
		if err := send(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}}); err != nil {
			return err
		}
	}
	maps.Copy(last, now)
	return nil
}

// sonicInterval is how often a device sonic subscription list on database
// db is read: its shortest SAMPLE interval (or the default sample for
// ON_CHANGE on COUNTERS_DB), 0 for none; it refuses what sonic-gnmi does.
func (v *service) sonicInterval(db string, list *gnmi.SubscriptionList) (time.Duration, error) {
	interval := time.Duration(0)
	for _, s := range list.GetSubscription() {
		switch s.GetMode() {
		case gnmi.SubscriptionMode_SAMPLE:
			iv := time.Duration(s.GetSampleInterval())
			if iv == 0 {
				iv = v.s.cfg.DefaultSample
			}
			if list.GetMode() == gnmi.SubscriptionList_STREAM && iv < time.Second {
				return 0, status.Errorf(codes.InvalidArgument, "invalid interval %v: the minimum is 1s", iv)
			}
			if interval == 0 || iv < interval {
				interval = iv
			}
		case gnmi.SubscriptionMode_ON_CHANGE:
			// sonic-gnmi takes ON_CHANGE on COUNTERS_DB too (Redis
			// keyspace events); counters change every sample.
			if db != gnmipath.ConfigDB && list.GetMode() == gnmi.SubscriptionList_STREAM && (interval == 0 || v.s.cfg.DefaultSample < interval) {
				interval = v.s.cfg.DefaultSample
			}
		default:
			if list.GetMode() != gnmi.SubscriptionList_STREAM {
				// a subscription's mode matters in STREAM only: real
				// sonic-gnmi serves ONCE and POLL with TARGET_DEFINED (the
				// mode's zero value), seen in TestRealSonicImitationMatchesServer
				continue
			}
			return 0, status.Errorf(codes.InvalidArgument, "subscription mode %v is not supported (use SAMPLE)", s.GetMode())
		}
	}
	return interval, nil
}

// sonicPathStagger is how much later each path of a sonic subscription
// list is stamped than the one before it in a sample (sonic-gnmi stamps a
// notification with the time its path's reader read Redis: 125-127 ms
// apart for a port table after the queues of four ports, the real server
// on a loaded 2-core machine; TestRealSonicServerStaggersStamps).
const sonicPathStagger = 50 * time.Microsecond

// sonicSend reads every path of list on switch sw and sends it (consuming
// the telemetry window when consume).
func (v *service) sonicSend(db string, sw int, list *gnmi.SubscriptionList, send sendFunc, consume bool) error {
	tel, _, _ := v.s.r.telemetry(sw, false)
	// One notification per subscription path, as sonic-gnmi sends
	// them (each path has its own reader there), each stamped when its
	// reader read it: sonicPathStagger after the path before, so that a
	// sample is not one timestamp, as it is not on a real switch (the
	// agent once took each stamp for a new sample).
	for i, s := range list.GetSubscription() {
		u, err := v.sonicRead(db, sw, s.GetPath(), consume)
		if err != nil {
			return err
		}
		n := &gnmi.Notification{Timestamp: SimTimestamp(tel.Time) + int64(i)*sonicPathStagger.Nanoseconds(), Prefix: list.GetPrefix(), Update: []*gnmi.Update{u}}
		if err := send(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}}); err != nil {
			return err
		}
	}
	return nil
}

// sonicSet applies a Set as sonic-gnmi's config updater would.
func (v *service) sonicSet(ctx context.Context, req *gnmi.SetRequest) (*gnmi.SetResponse, error) {
	if !v.s.cfg.SonicNativeWrite {
		return nil, status.Error(codes.Unimplemented, "Set is not supported: native write is disabled on this server (sonic-gnmi: start it with native write enabled)")
	}
	pl := &sonicPlan{v: v, prefix: req.GetPrefix(), sw: -1}
	for _, p := range req.GetDelete() {
		if err := pl.add(true, p, nil, gnmi.UpdateResult_DELETE); err != nil {
			return nil, err
		}
	}
	for _, u := range append(append([]*gnmi.Update(nil), req.GetReplace()...), req.GetUpdate()...) {
		if err := pl.add(false, u.GetPath(), u.GetVal(), gnmi.UpdateResult_UPDATE); err != nil {
			return nil, err
		}
	}
	if pl.sw < 0 {
		return nil, status.Error(codes.InvalidArgument, "Set has no operations")
	}
	f, fenced := v.s.fenceOf(ctx)
	var setErr error
	var ts int64
	err := v.s.r.do(ctx, func() {
		defer func() { v.s.r.writing = gnmipath.Fence{} }()
		if setErr = v.s.admit(pl.sw, f, fenced); setErr != nil {
			return
		}
		ts = SimTimestamp(v.s.r.eng.Now())
		setErr = v.s.r.commitSonic(pl.sw, pl.ops)
	})
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "simulation not running: %v", err)
	}
	if setErr != nil {
		return nil, setErr
	}
	return &gnmi.SetResponse{Prefix: req.GetPrefix(), Response: pl.results, Timestamp: ts}, nil
}

// sonicOp is one operation of a device sonic Set: a delete or write of a
// CONFIG_DB table, entry (TABLE/KEY) or field (TABLE/KEY/FIELD).
type sonicOp struct {
	del      bool
	t, k, f  string
	val      *gnmi.TypedValue
	describe string
}

// sonicPlan collects a device sonic Set's operations, all on one switch.
type sonicPlan struct {
	v       *service
	prefix  *gnmi.Path
	sw      int // -1 until the first operation
	ops     []sonicOp
	results []*gnmi.UpdateResult
}

// add checks the path of one operation (a delete when del) and records it
// with its result o.
func (pl *sonicPlan) add(del bool, p *gnmi.Path, val *gnmi.TypedValue, o gnmi.UpdateResult_Operation) error {
	origin := p.GetOrigin()
	if origin == "" {
		origin = pl.prefix.GetOrigin()
	}
	el := gnmipath.FullElems(pl.prefix, p)
	d := gnmipath.Describe(pl.prefix, p)
	if origin != "sonic-db" {
		return status.Errorf(codes.Unimplemented, "%s: writes need origin sonic-db (translib has no model for it)", d)
	}
	if len(el) < 3 || el[0].GetName() != gnmipath.ConfigDB {
		return status.Errorf(codes.InvalidArgument, "%s: want /CONFIG_DB/<namespace>/TABLE/KEY[/FIELD]", d)
	}
	s, err := pl.v.sonicNamespace(el[1].GetName())
	if err != nil {
		return err
	}
	if pl.sw >= 0 && s != pl.sw {
		return status.Errorf(codes.InvalidArgument, "one Set must address one switch")
	}
	pl.sw = s
	rest := el[2:]
	op := sonicOp{del: del, val: val, describe: d, t: rest[0].GetName()}
	if len(rest) > 1 {
		op.k = rest[1].GetName()
	}
	if len(rest) > 2 {
		op.f = rest[2].GetName()
	}
	if len(rest) > 3 || (op.k == "" && !del) {
		return status.Errorf(codes.InvalidArgument, "%s: want TABLE/KEY[/FIELD]", d)
	}
	pl.ops = append(pl.ops, op)
	pl.results = append(pl.results, &gnmi.UpdateResult{Path: p, Op: o})
	return nil
}

// sonicNamespace picks the switch a write's namespace element names
// ("localhost": the listener's one switch).
func (v *service) sonicNamespace(ns string) (int, error) {
	if ns == "localhost" {
		return v.defaultSwitch()
	}
	return v.switchNamed(ns)
}

// commitSonic applies ops to a copy of switch sw's CONFIG_DB and, when the
// result validates, commits its configuration and keeps the copy; else
// nothing changes (runner goroutine).
func (r *runner) commitSonic(sw int, ops []sonicOp) error {
	r.mu.Lock()
	db, old, ver := r.sonic[sw].clone(), r.pub[sw].tree, r.pub[sw].ver
	r.mu.Unlock()
	if err := db.apply(ops); err != nil {
		return err
	}
	if err := db.validate(); err != nil {
		return status.Errorf(codes.InvalidArgument, "config validation failed: %v; nothing changed", err)
	}
	t, err := db.tree()
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "config validation failed: %v; nothing changed", err)
	}
	p, err := r.prepareTree(sw, old, ver, t)
	if err != nil {
		return err
	}
	if err := r.commitSet(sw, p, nil); err != nil {
		return err
	}
	r.mu.Lock()
	r.sonic[sw] = db
	r.mu.Unlock()
	return nil
}

// apply carries out ops in order as the config updater's JSON patch
// (RFC 6902, as sonic-gnmi sends a Set: "remove" per delete, "add" per
// update): adding an entry creates or replaces it whole, adding a field
// patches its entry, which must exist, as must what a remove removes.
func (db sonicDB) apply(ops []sonicOp) error {
	missing := func(o sonicOp, what string) error {
		return status.Errorf(codes.InvalidArgument, "%s: config updater: JSON patch %s: member %q not found; nothing changed", o.describe, what, o.k)
	}
	for _, o := range ops {
		_, hasTable := db[o.t]
		_, hasEntry := db[o.t][o.k]
		switch {
		case o.del && o.k == "":
			if !hasTable {
				return status.Errorf(codes.InvalidArgument, "%s: config updater: JSON patch remove: member %q not found; nothing changed", o.describe, o.t)
			}
			delete(db, o.t)
		case o.del && o.f == "":
			if !hasEntry {
				return missing(o, "remove")
			}
			delete(db[o.t], o.k)
		case o.del:
			if _, ok := db[o.t][o.k][o.f]; !ok {
				return status.Errorf(codes.InvalidArgument, "%s: config updater: JSON patch remove: member %q not found; nothing changed", o.describe, o.f)
			}
			delete(db[o.t][o.k], o.f)
		case o.f != "":
			if !hasEntry {
				return missing(o, "add of field "+o.f)
			}
			var s string
			if err := decodeJSONString(o.val, &s); err != nil {
				return status.Errorf(codes.InvalidArgument, "%s: %v; nothing changed", o.describe, err)
			}
			db.set(o.t, o.k, o.f, s)
		default:
			// a whole entry: the JSON patch replaces it
			var fields map[string]string
			if err := decodeJSONString(o.val, &fields); err != nil {
				return status.Errorf(codes.InvalidArgument, "%s: want a JSON object of string fields: %v; nothing changed", o.describe, err)
			}
			if db[o.t] == nil {
				db[o.t] = map[string]map[string]string{}
			}
			db[o.t][o.k] = fields
		}
	}
	return nil
}

// decodeJSONString reads a JSON or JSON_IETF value (or a plain string)
// into x.
func decodeJSONString(tv *gnmi.TypedValue, x any) error {
	var b []byte
	switch v := tv.GetValue().(type) {
	case *gnmi.TypedValue_JsonIetfVal:
		b = v.JsonIetfVal
	case *gnmi.TypedValue_JsonVal:
		b = v.JsonVal
	case *gnmi.TypedValue_StringVal:
		if s, ok := x.(*string); ok {
			*s = v.StringVal
			return nil
		}
		return fmt.Errorf("a string where a JSON object is wanted")
	default:
		return fmt.Errorf("value type %T is not supported (use JSON_IETF)", v)
	}
	return json.Unmarshal(b, x)
}
