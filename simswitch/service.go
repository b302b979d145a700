package simswitch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
)

// service implements gnmi.GNMIServer for one listener.
type service struct {
	gnmi.UnimplementedGNMIServer
	s    *Server
	only int // switch served by this listener, -1 for all
}

// route is where a request path points: switch, database (sonic), the
// namespace element used (echoed back) and the elements under it.
type route struct {
	sw    int
	db    string
	ns    string
	elems []*gnmi.PathElem
}

func (v *service) defaultSwitch() (int, error) {
	if v.only >= 0 {
		return v.only, nil
	}
	if len(v.s.r.infos) == 1 {
		return 0, nil
	}
	return 0, status.Errorf(codes.InvalidArgument, "no switch named: this listener serves %s; name one as the target (openconfig) or as the namespace element after the database (sonic)", v.s.names())
}

func (v *service) switchNamed(name string) (int, error) {
	i, ok := v.s.byName[name]
	if !ok || (v.only >= 0 && i != v.only) {
		have := v.s.names()
		if v.only >= 0 {
			have = v.s.r.infos[v.only].Name
		}
		return 0, status.Errorf(codes.NotFound, "target %q is not a switch served here (have %s)", name, have)
	}
	return i, nil
}

func (v *service) route(prefix, p *gnmi.Path) (route, error) {
	target := prefix.GetTarget()
	if p.GetTarget() != "" {
		target = p.GetTarget()
	}
	origin := prefix.GetOrigin()
	if p.GetOrigin() != "" {
		origin = p.GetOrigin()
	}
	//lint:ignore SA1019 the deprecated field is read to refuse it
	if len(prefix.GetElement()) > 0 || len(p.GetElement()) > 0 { //nolint:staticcheck
		// gNMI 0.4 deprecated element for elem; read as no path at all it
		// selected the whole tree
		return route{}, status.Errorf(codes.InvalidArgument, "path given in the deprecated element field (%v): give it as elem", append(prefix.GetElement(), p.GetElement()...)) //nolint:staticcheck
	}
	el := gnmipath.FullElems(prefix, p)
	if v.s.d != gnmipath.Sonic {
		return v.routeOpenConfig(target, origin, el)
	}
	return v.routeSonic(prefix, p, target, origin, el)
}

// routeOpenConfig routes a path of the openconfig dialect: the target
// names the switch, the origin the schema.
func (v *service) routeOpenConfig(target, origin string, el []*gnmi.PathElem) (route, error) {
	// The origin selects the schema: openconfig ("" means openconfig,
	// gNMI §2.7.1) or a vendor-native one, whose leaves carry their
	// origin as their database.
	db := origin
	if db == "openconfig" {
		db = ""
	}
	if db != "" && db != v.s.dev.NativeOrigin {
		return route{}, status.Errorf(codes.Unimplemented, "origin %q is not served by this %s switch (have openconfig%s)", origin, v.s.dev.Name, nativeNote(v.s.dev))
	}
	if target == "" {
		sw, err := v.defaultSwitch()
		return route{sw: sw, db: db, elems: el}, err
	}
	sw, err := v.switchNamed(target)
	return route{sw: sw, db: db, elems: el}, err
}

// routeSonic routes a path of the sonic dialect: the database is the
// target or the first element, the switch the target or the namespace
// element after the database.
func (v *service) routeSonic(prefix, p *gnmi.Path, target, origin string, el []*gnmi.PathElem) (route, error) {
	rt := route{sw: -1}
	db := target
	if db == gnmipath.OCYang {
		// openconfig models (LLDP), as sonic-gnmi serves them through
		// translib: no database, no namespace element.
		sw, err := v.defaultSwitch()
		if err != nil {
			return rt, status.Errorf(codes.InvalidArgument, "%s paths name no switch: this listener serves %s; serve one switch per listener (PerSwitch) to use them",
				gnmipath.OCYang, v.s.names())
		}
		return route{sw: sw, db: db, elems: gnmipath.StripModules(el)}, nil
	}
	if _, isSwitch := v.s.byName[target]; isSwitch {
		sw, err := v.switchNamed(target)
		if err != nil {
			return rt, err
		}
		rt.sw, db = sw, ""
	}
	if db == "" || origin == "sonic-db" {
		if len(el) == 0 {
			return rt, status.Errorf(codes.InvalidArgument, "path %s names no database: use prefix.target %s or %s", gnmipath.Describe(prefix, p), gnmipath.ConfigDB, gnmipath.CountersDB)
		}
		db, el = el[0].GetName(), el[1:]
	}
	if db != gnmipath.ConfigDB && db != gnmipath.CountersDB {
		return rt, status.Errorf(codes.NotFound, "database %q does not exist (have %s, %s)", db, gnmipath.ConfigDB, gnmipath.CountersDB)
	}
	rt.db = db
	el, err := v.takeNamespace(&rt, target, el)
	if err != nil {
		return rt, err
	}
	if rt.sw < 0 {
		sw, err := v.defaultSwitch()
		if err != nil {
			return rt, err
		}
		rt.sw = sw
	}
	rt.elems = el
	return rt, nil
}

// takeNamespace takes a namespace element (a switch's name or "localhost")
// off the front of el into rt, checking it agrees with the switch target
// named, and returns the elements after it.
func (v *service) takeNamespace(rt *route, target string, el []*gnmi.PathElem) ([]*gnmi.PathElem, error) {
	if len(el) == 0 {
		return el, nil
	}
	n := el[0].GetName()
	if _, ok := v.s.byName[n]; ok {
		sw, err := v.switchNamed(n)
		if err != nil {
			return el, err
		}
		if rt.sw >= 0 && rt.sw != sw {
			return el, status.Errorf(codes.InvalidArgument, "target %q and namespace %q name different switches", target, n)
		}
		rt.sw, rt.ns = sw, n
		return el[1:], nil
	}
	if n == "localhost" {
		rt.ns = n
		return el[1:], nil
	}
	return el, nil
}

func nativeNote(d *gnmipath.Device) string {
	if d.NativeOrigin == "" {
		return ""
	}
	return " and " + d.NativeOrigin
}

func (v *service) Capabilities(ctx context.Context, _ *gnmi.CapabilityRequest) (*gnmi.CapabilityResponse, error) {
	return &gnmi.CapabilityResponse{SupportedModels: deviceModels(v.s.dev),
		SupportedEncodings: []gnmi.Encoding{gnmi.Encoding_JSON, gnmi.Encoding_JSON_IETF, gnmi.Encoding_PROTO},
		GNMIVersion:        "0.10.0"}, nil
}

// deviceModels are the models a server of device d lists in Capabilities:
// the openconfig models, and the vendor's own (by which a client infers
// the device, gnmipath.InferDevice).
func deviceModels(d *gnmipath.Device) []*gnmi.ModelData {
	oc := func(name, ver string) *gnmi.ModelData {
		return &gnmi.ModelData{Name: name, Organization: "OpenConfig working group", Version: ver}
	}
	lldp := oc("openconfig-lldp", "0.2.1")
	if d.RealSonic {
		return []*gnmi.ModelData{{Name: "sonic-db", Organization: "SONiC", Version: "0.1.0"}, lldp}
	}
	if d.Dialect == gnmipath.Sonic {
		return []*gnmi.ModelData{{Name: "sonic-db", Organization: "SONiC", Version: "0.1.0"}, lldp,
			{Name: gnmipath.ExtensionModel, Organization: "ecntune", Version: "1.0.0"}}
	}
	models := []*gnmi.ModelData{oc("openconfig-qos", "0.11.2"), oc("openconfig-interfaces", "3.7.1"),
		oc("openconfig-if-ethernet", "2.14.0"), lldp}
	switch d.Name {
	case "ecntune":
		models = append(models, &gnmi.ModelData{Name: gnmipath.ExtensionModel, Organization: "ecntune", Version: "1.0.0"})
	case "arista-eos":
		models = append(models, &gnmi.ModelData{Name: "arista-intf-augments", Organization: "Arista Networks, Inc."},
			&gnmi.ModelData{Name: "arista-pfc-history-counters-augment", Organization: "Arista Networks, Inc."})
	case "nokia-srl":
		models = append(models, &gnmi.ModelData{Name: "srl_nokia-qos", Organization: "Nokia"},
			&gnmi.ModelData{Name: "srl_nokia-interfaces", Organization: "Nokia"})
	}
	return models
}

func checkEncoding(e gnmi.Encoding) error {
	switch e {
	case gnmi.Encoding_JSON, gnmi.Encoding_JSON_IETF, gnmi.Encoding_PROTO:
		return nil
	}
	return status.Errorf(codes.Unimplemented, "encoding %v is not supported (use JSON, JSON_IETF or PROTO)", e)
}

// lldpItems are switch sw's LLDP neighbour leaves (none while the NoLLDP
// fault is on).
func (v *service) lldpItems(sw int) []gnmipath.Item {
	if v.s.getFaults().NoLLDP {
		return nil
	}
	return v.s.r.lldp[sw]
}

// items returns every leaf of switch sw: state from the telemetry
// (consuming the max/avg window when consume) and config from the tree.
func (v *service) items(sw int, consume bool) (int64, []gnmipath.Item) {
	return v.itemsInto(nil, sw, consume)
}

// itemsInto is items appending to dst.
func (v *service) itemsInto(dst []gnmipath.Item, sw int, consume bool) (int64, []gnmipath.Item) {
	tel, _, cfg := v.s.r.telemetry(sw, consume)
	if dst == nil {
		dst = make([]gnmipath.Item, 0, v.s.r.encoders[sw].Len()+len(cfg))
	}
	snap := snapshot(v.s.r.infos[sw], &tel, v.s.r.lossless)
	out := v.s.r.encoders[sw].Encode(dst, &snap)
	out = append(out, cfg...)
	return SimTimestamp(tel.Time), out
}

func matching(items []gnmipath.Item, db string, pat []*gnmi.PathElem, keep func(gnmipath.Item) bool) []gnmipath.Item {
	var out []gnmipath.Item
	for _, it := range items {
		if it.DB == db && gnmipath.Match(pat, it.Path.GetElem()) && (keep == nil || keep(it)) {
			out = append(out, it)
		}
	}
	return out
}

func (v *service) Get(ctx context.Context, req *gnmi.GetRequest) (*gnmi.GetResponse, error) {
	if err := checkEncoding(req.GetEncoding()); err != nil {
		return nil, err
	}
	if v.s.dev.RealSonic {
		return v.sonicGet(req)
	}
	keep := getFilter(req.GetType())
	paths := req.GetPath()
	if len(paths) == 0 {
		paths = []*gnmi.Path{{}}
	}
	if n, lim := len(paths), v.s.cfg.MaxPaths; n > lim {
		return nil, status.Errorf(codes.ResourceExhausted, "Get has %d paths, more than the limit of %d per request", n, lim)
	}
	rts, kept, err := v.routeAll(req.GetPrefix(), paths)
	if err != nil {
		return nil, err
	}
	resp := &gnmi.GetResponse{}
	size := responseSize{limit: v.s.cfg.MaxMsgBytes}
	cache := map[int][]gnmipath.Item{}
	for i, rt := range rts {
		its, ok := cache[rt.sw]
		var ts int64
		if !ok {
			ts, its = v.items(rt.sw, false)
			its = append(its, v.lldpItems(rt.sw)...)
			cache[rt.sw] = its
		}
		m := matching(its, rt.db, rt.elems, keep)
		if len(m) == 0 {
			return nil, status.Errorf(codes.NotFound, "path %s matches no data on %s", gnmipath.Describe(req.GetPrefix(), kept[i]), v.s.r.infos[rt.sw].Name)
		}
		if ts == 0 {
			tel, _, _ := v.s.r.telemetry(rt.sw, false)
			ts = SimTimestamp(tel.Time)
		}
		ns := gnmipath.Notifications(v.s.d, v.s.r.infos[rt.sw].Name, rt.ns, m, ts, req.GetEncoding())
		resp.Notification = append(resp.Notification, ns...)
		if size.add(resp.Notification, ns) {
			return nil, status.Errorf(codes.ResourceExhausted,
				"Get response would exceed the message limit of %d bytes (%d bytes with %d of its %d paths); ask for fewer or narrower paths",
				size.limit, size.exact, i+1, len(rts))
		}
	}
	return resp, nil
}

// getFilter is what leaves a Get of type t keeps (nil: all).
func getFilter(t gnmi.GetRequest_DataType) func(gnmipath.Item) bool {
	switch t {
	case gnmi.GetRequest_CONFIG:
		return func(it gnmipath.Item) bool { return it.Leaf.Field.IsConfig() || it.DB == gnmipath.ConfigDB }
	case gnmi.GetRequest_STATE, gnmi.GetRequest_OPERATIONAL:
		return func(it gnmipath.Item) bool { return !it.Leaf.Field.IsConfig() && it.DB != gnmipath.ConfigDB }
	}
	return nil
}

// routeAll routes every path first (errors before any work), collapsing
// duplicates: the same switch, database, namespace and elements. kept are
// the paths of the routes.
func (v *service) routeAll(prefix *gnmi.Path, paths []*gnmi.Path) (rts []route, kept []*gnmi.Path, err error) {
	rts = make([]route, 0, len(paths))
	seen := make(map[string]bool, len(paths))
	for _, p := range paths {
		rt, err := v.route(prefix, p)
		if err != nil {
			return nil, nil, err
		}
		k := strconv.Itoa(rt.sw) + "\x00" + rt.db + "\x00" + rt.ns + "\x00" + gnmipath.PathString(rt.elems)
		if seen[k] {
			continue
		}
		seen[k] = true
		rts = append(rts, rt)
		kept = append(kept, p)
	}
	return rts, kept, nil
}

// responseSize follows a response's size as notifications are appended:
// exact for the first measured, bounded (sizeBound) for the rest; measured
// only when the bound passes the limit.
type responseSize struct {
	exact, pending, measured, limit int
}

// add counts ns, just appended to all, and reports whether the response's
// exact size is now above the limit.
func (z *responseSize) add(all, ns []*gnmi.Notification) bool {
	for _, n := range ns {
		z.pending += sizeBound(n)
	}
	if z.exact+z.pending <= z.limit {
		return false
	}
	for _, n := range all[z.measured:] {
		z.exact += fieldSize(proto.Size(n))
	}
	z.measured, z.pending = len(all), 0
	return z.exact > z.limit
}

func (v *service) Set(ctx context.Context, req *gnmi.SetRequest) (*gnmi.SetResponse, error) {
	if v.s.getFaults().RejectSets {
		// a refusal the switch answers: FailedPrecondition (Unavailable
		// is what a connection lost on the way gives too, which leaves the
		// outcome unknown to the client)
		return nil, status.Error(codes.FailedPrecondition, "Set rejected by fault injection; nothing changed")
	}
	c := gnmipath.CommitOf(req)
	if c != nil && !v.s.dev.CommitConfirmed {
		return nil, status.Errorf(codes.Unimplemented, "this %s switch does not implement the commit confirmed extension; nothing changed", v.s.dev.Name)
	}
	if c != nil && c.GetCommit() == nil {
		return v.commitAction(ctx, req, c) // confirm, cancel, rollback duration: no operations
	}
	if v.s.dev.RealSonic {
		return v.sonicSet(ctx, req)
	}
	if len(req.GetUnionReplace()) > 0 {
		return nil, status.Error(codes.Unimplemented, "union_replace is not supported; nothing changed")
	}
	if n, lim := len(req.GetDelete())+len(req.GetReplace())+len(req.GetUpdate()), v.s.cfg.MaxSetOps; n > lim {
		return nil, status.Errorf(codes.ResourceExhausted, "Set has %d operations, more than the limit of %d per request; nothing changed", n, lim)
	}
	sw, ops, results, err := v.setOps(req)
	if err != nil {
		return nil, err
	}
	resp := &gnmi.SetResponse{Prefix: req.GetPrefix(), Response: results}
	if n, lim := proto.Size(resp)+16, v.s.cfg.MaxMsgBytes; n > lim {
		// refuse before applying rather than apply and fail to answer
		return nil, status.Errorf(codes.ResourceExhausted, "Set response would be %d bytes, more than the message limit of %d; nothing changed", n, lim)
	}
	p, err := v.prepareOne(ctx, sw, ops)
	if err != nil {
		return nil, err
	}
	f, fenced := v.s.fenceOf(ctx)
	var setErr error
	var ts int64
	err = v.s.r.do(ctx, func() {
		defer func() { v.s.r.writing = gnmipath.Fence{} }()
		if setErr = v.s.admit(sw, f, fenced); setErr != nil {
			return
		}
		if setErr = v.s.r.commitAllows(sw); setErr != nil {
			return
		}
		before := v.s.r.treeOf(sw)
		if setErr = v.s.r.commitSet(sw, p, ops); setErr == nil && c != nil {
			v.s.r.startCommit(sw, c, before)
		}
		ts = SimTimestamp(v.s.r.eng.Now())
	})
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "simulation not running: %v", err)
	}
	if setErr != nil {
		return nil, setErr
	}
	resp.Timestamp = ts
	return resp, nil
}

// setOps routes req's deletes, replaces and updates, in that order, to the
// one switch sw they must all address, with the result of each.
func (v *service) setOps(req *gnmi.SetRequest) (sw int, ops []gnmipath.SetOp, results []*gnmi.UpdateResult, err error) {
	sw = -1
	add := func(op string, o gnmi.UpdateResult_Operation, p *gnmi.Path, val *gnmi.TypedValue) error {
		rt, err := v.route(req.GetPrefix(), p)
		if err != nil {
			return err
		}
		if sw >= 0 && rt.sw != sw {
			return status.Errorf(codes.InvalidArgument, "one Set must address one switch: %s is on %s, earlier paths on %s; nothing changed",
				gnmipath.Describe(req.GetPrefix(), p), v.s.r.infos[rt.sw].Name, v.s.r.infos[sw].Name)
		}
		if op != "delete" && val == nil {
			return status.Errorf(codes.InvalidArgument, "%s %s has no value; nothing changed", op, gnmipath.Describe(req.GetPrefix(), p))
		}
		sw = rt.sw
		ops = append(ops, gnmipath.SetOp{Op: op, DB: rt.db, Elems: rt.elems, Val: val})
		results = append(results, &gnmi.UpdateResult{Path: p, Op: o})
		return nil
	}
	for _, p := range req.GetDelete() {
		if err := add("delete", gnmi.UpdateResult_DELETE, p, nil); err != nil {
			return 0, nil, nil, err
		}
	}
	for _, u := range req.GetReplace() {
		if err := add("replace", gnmi.UpdateResult_REPLACE, u.GetPath(), u.GetVal()); err != nil {
			return 0, nil, nil, err
		}
	}
	for _, u := range req.GetUpdate() {
		if err := add("update", gnmi.UpdateResult_UPDATE, u.GetPath(), u.GetVal()); err != nil {
			return 0, nil, nil, err
		}
	}
	if sw < 0 {
		return 0, nil, nil, status.Error(codes.InvalidArgument, "Set has no operations")
	}
	return sw, ops, results, nil
}

// prepareOne decodes and checks a Set here, not on the simulation's
// goroutine, one Set at a time (so Sets take at most one core from it).
func (v *service) prepareOne(ctx context.Context, sw int, ops []gnmipath.SetOp) (prepared, error) {
	select {
	case v.s.preparing <- struct{}{}:
	case <-ctx.Done():
		return prepared{}, status.FromContextError(ctx.Err()).Err()
	}
	p, err := v.s.r.prepareSet(sw, ops)
	<-v.s.preparing
	return p, err
}

// prepared is a Set applied to a copy of a switch's configuration and
// checked whole (the costly part), for commitSet: the configuration after
// it and the changes it makes to the simulation's queues.
type prepared struct {
	ver     uint64        // version of the configuration it was applied to
	tree    gnmipath.Tree // the configuration after the Set
	changes []change
}

// change is what a Set changes of one lossless queue.
type change struct {
	ref      simenv.QueueRef
	ecn      simenv.ECN
	old      simenv.ECN
	hdrm     int64
	oldHdrm  int64
	alpha    float64 // the PG's dynamic-threshold factor (sonic dynamic_th)
	oldAlpha float64
	setECN   bool
	setHdrm  bool
	setAlpha bool
	describe string
}

// prepareSet applies ops to a copy of switch sw's current configuration,
// checks the bounds of the result and every lossless queue's resulting
// setting, and works out what changes; any goroutine may call it. A
// refusal holds as of that configuration (a refused Set changes nothing,
// so it needs no later check).
func (r *runner) prepareSet(sw int, ops []gnmipath.SetOp) (prepared, error) {
	r.mu.Lock()
	old, ver := r.pub[sw].tree, r.pub[sw].ver
	r.mu.Unlock()
	t := old.Clone()
	name := r.infos[sw].Name
	if err := r.checkDeviceWrite(ops); err != nil {
		return prepared{}, status.Errorf(status.Code(err), "Set rejected on %s: %s; nothing changed", name, status.Convert(err).Message())
	}
	if err := gnmipath.ApplySet(r.d, t, ops); err != nil {
		var se *gnmipath.SetError
		code := codes.InvalidArgument
		if errors.As(err, &se) && se.Unknown {
			code = codes.NotFound
		}
		return prepared{}, status.Errorf(code, "Set rejected on %s: %v; nothing changed", name, err)
	}
	return r.prepareTree(sw, old, ver, t)
}

// prepareTree checks configuration t, which is to replace old (version
// ver) on switch sw, and works out what it changes of the simulation.
func (r *runner) prepareTree(sw int, old gnmipath.Tree, ver uint64, t gnmipath.Tree) (prepared, error) {
	name := r.infos[sw].Name
	if err := r.checkBounds(sw, t); err != nil {
		return prepared{}, err
	}
	if err := checkSchema(r.dev, t); err != nil {
		return prepared{}, status.Errorf(codes.InvalidArgument, "Set rejected on %s: %v; nothing changed", name, err)
	}
	info := r.infos[sw]
	var changes []change
	for pi, p := range info.Ports {
		for _, q := range r.lossless {
			where := fmt.Sprintf("%s %s queue %d", name, p.Name, q)
			s, missing := gnmipath.Resolve(r.d, t, p.Name, q)
			if len(missing) > 0 {
				return prepared{}, status.Errorf(codes.InvalidArgument, "Set rejected: %s would lack %s; nothing changed", where, strings.Join(missing, ", "))
			}
			if !gnmipath.ECNEnabled(r.d, t, p.Name, q) {
				return prepared{}, status.Errorf(codes.InvalidArgument, "Set rejected: %s is lossless and must keep ECN marking enabled; nothing changed", where)
			}
			e := simenv.ECN{KminBytes: s.KminBytes, KmaxBytes: s.KmaxBytes, Pmax: s.Pmax}
			if err := e.Validate(); err != nil {
				return prepared{}, status.Errorf(codes.InvalidArgument, "Set rejected: %s: %v; nothing changed", where, err)
			}
			if info.BufferBytes > 0 && s.KmaxBytes > info.BufferBytes {
				return prepared{}, status.Errorf(codes.InvalidArgument, "Set rejected: %s: kmax %d B exceeds the switch buffer %d B; nothing changed", where, s.KmaxBytes, info.BufferBytes)
			}
			if s.HeadroomBytes < 0 || s.HeadroomBytes > math.MaxInt64/2 {
				return prepared{}, status.Errorf(codes.InvalidArgument, "Set rejected: %s: headroom %d B is out of range; nothing changed", where, s.HeadroomBytes)
			}
			prev, _ := gnmipath.Resolve(r.d, old, p.Name, q)
			c := change{ref: simenv.QueueRef{Switch: sw, Port: pi, Queue: q}, ecn: e,
				old:  simenv.ECN{KminBytes: prev.KminBytes, KmaxBytes: prev.KmaxBytes, Pmax: prev.Pmax},
				hdrm: s.HeadroomBytes, oldHdrm: prev.HeadroomBytes, describe: where}
			c.setECN = prev.KminBytes != s.KminBytes || prev.KmaxBytes != s.KmaxBytes || prev.Pmax != s.Pmax
			c.setHdrm = prev.HeadroomBytes != s.HeadroomBytes
			// alpha: SONiC's dynamic_th of the PG's buffer profile; a
			// profile without one (0) leaves the simulation's alpha alone
			c.alpha, c.oldAlpha = s.Alpha, prev.Alpha
			c.setAlpha = s.Alpha > 0 && prev.Alpha != s.Alpha
			if c.setECN || c.setHdrm || c.setAlpha {
				changes = append(changes, c)
			}
		}
	}
	return prepared{ver: ver, tree: t, changes: changes}, nil
}

// applySet is prepareSet and commitSet (runner goroutine).
func (r *runner) applySet(sw int, ops []gnmipath.SetOp) error {
	p, err := r.prepareSet(sw, ops)
	if err != nil {
		return err
	}
	return r.commitSet(sw, p, ops)
}

// commitSet runs on the runner goroutine: push a prepared Set's changes
// into the simulation and publish its configuration (preparing it again
// first if another Set committed since). Any failure leaves both
// configuration and simulation as they were.
func (r *runner) commitSet(sw int, p prepared, ops []gnmipath.SetOp) error {
	r.mu.Lock()
	ver := r.pub[sw].ver
	r.mu.Unlock()
	if ver != p.ver {
		var err error
		if p, err = r.prepareSet(sw, ops); err != nil {
			return err
		}
	}
	changes := p.changes
	// Apply; on the first failure undo what was applied.
	undo := func(u change, hdrm, alpha, ecn bool) {
		pg := simenv.PGRef{Switch: sw, Port: u.ref.Port, PG: u.ref.Queue}
		if ecn && u.setECN {
			_ = r.eng.SetECN(u.ref, u.old)
		}
		if hdrm && u.setHdrm {
			_ = r.eng.SetHeadroom(pg, u.oldHdrm)
		}
		if alpha && u.setAlpha && u.oldAlpha > 0 {
			_ = r.eng.SetAlpha(pg, u.oldAlpha)
		}
	}
	for i, c := range changes {
		pg := simenv.PGRef{Switch: sw, Port: c.ref.Port, PG: c.ref.Queue}
		var err error
		if c.setHdrm {
			err = r.eng.SetHeadroom(pg, c.hdrm)
		}
		if err == nil && c.setAlpha {
			if err = r.eng.SetAlpha(pg, c.alpha); err != nil {
				undo(c, true, false, false)
			}
		}
		if err == nil && c.setECN {
			if err = r.eng.SetECN(c.ref, c.ecn); err != nil {
				undo(c, true, true, false)
			}
		}
		if err != nil {
			// Undo in reverse, through states that held before: a
			// headroom lowered to make room for another's rise fits
			// again only once that rise is undone.
			for j := i - 1; j >= 0; j-- {
				undo(changes[j], true, true, true)
			}
			return status.Errorf(codes.InvalidArgument, "Set rejected: %s: %v; nothing changed", c.describe, err)
		}
	}
	r.commitTree(sw, p.tree)
	r.applied = changes
	r.logChanges(sw, changes)
	if len(changes) > 0 {
		// make the new settings visible in telemetry at once
		r.publishStep(-1)
	}
	return nil
}
