package simswitch

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
)

// Config configures a simulated-switch server.
type Config struct {
	// Engine is a built simulation (tests may pass a fake). When nil, Sim
	// is built with simenv.New. Sim.PFC.XonOffsetBytes fills SONiC's xon
	// either way.
	Engine Engine
	Sim    simenv.Config

	Dialect gnmipath.Dialect // default openconfig (or Device's)
	// Device is the kind of switch imitated: which leaves exist, at which
	// paths and origins, what a Set may write (gnmipath.Devices). Empty:
	// the dialect's default (the idealised ecntune switch for openconfig).
	Device string
	Listen string // host:port; default 127.0.0.1:57400 (tests: 127.0.0.1:0)
	// PerSwitch gives each switch its own listener: the first on Listen,
	// the next ones on following ports (or port 0 each when Listen's port is 0).
	PerSwitch bool

	Timescale float64       // wall seconds per simulated second; default 1000
	Step      time.Duration // wall time between simulation steps; default 5ms
	// Lockstep: simulated time advances only when the caller says
	// (Server.Advance), not with the wall clock, and SAMPLE subscriptions
	// sample on simulated time, so that a client that answers before the
	// next Advance sees every interval exactly once, whatever the
	// machine's load (eval's deployed-loop runs, tests). Not with device
	// sonic (its imitation samples on the wall clock).
	Lockstep bool

	// MinSampleInterval is the shortest SAMPLE interval honoured (shorter
	// ones are raised to it); default 1ms. Interval 0 means DefaultSample.
	MinSampleInterval time.Duration
	DefaultSample     time.Duration // default 1s

	// Bounds on what one request may ask of the server (see doc.go,
	// Limits); 0 means the default.
	MaxMsgBytes int // largest request accepted and response sent; default DefaultMaxMsgBytes
	MaxPaths    int // paths per Get, subscriptions per SubscriptionList; default DefaultMaxPaths
	MaxSetOps   int // deletes + replaces + updates per Set; default DefaultMaxSetOps

	TLSCert, TLSKey    string // PEM files; both or neither
	Username, Password string // when set, required as gRPC metadata "username"/"password"

	Logf func(format string, args ...any)
	// Warnf receives warnings (a Set with a stale fencing token); default
	// Logf.
	Warnf func(format string, args ...any)

	// SonicNativeWrite lets device sonic take Sets (sonic-gnmi refuses
	// writes unless built and started with native write).
	SonicNativeWrite bool
	// SonicBufferModel is device sonic's buffer model: "static" (default;
	// lossless PG profiles in CONFIG_DB) or "dynamic" (BUFFER_PG binds
	// "NULL": buffermgrd's profiles, not in CONFIG_DB, not writable).
	SonicBufferModel string
	// SonicNoCableLength leaves CABLE_LENGTH out of device sonic's
	// CONFIG_DB, as on an image whose minigraph gave none, and refuses a
	// read of an absent table NotFound, as older sonic-gnmi does (a current
	// one answers an empty object).
	SonicNoCableLength bool
	// SonicQueues is how many queues each port of device sonic has in
	// COUNTERS_DB: 0..7 unicast (the simulator's) and the rest multicast
	// (idle: the simulator has no multicast), as many SONiC platforms have
	// 10 (0-7 unicast, 8-9 multicast). Default DefaultSonicQueues; 8 to
	// MaxSonicQueues.
	SonicQueues int
	// SonicStreamMultiplexing serves many Subscribe RPCs per connection
	// on device sonic, as sonic-gnmi does only with
	// --enable_stream_multiplexing; by default, as sonic-gnmi, a second
	// Subscribe on a connection closes the first ("queue: disposed").
	SonicStreamMultiplexing bool

	// SetLog, when set, receives a JSON line (SetLogEntry) for every
	// lossless queue's setting at start and for every change a Set makes.
	SetLog io.Writer
	// Fence refuses, with FailedPrecondition, a Set whose fencing token
	// (gnmipath.FenceMetadata) is lower than one the switch has seen
	// before: a device-side guard against a deposed writer. Without it
	// such Sets are taken, counted (Server.FenceStats) and warned about.
	Fence bool
}

// Default request bounds (Config.MaxMsgBytes, MaxPaths, MaxSetOps).
const (
	// DefaultMaxMsgBytes is gRPC's own default receive limit, so that a
	// client with default settings can take every response.
	DefaultMaxMsgBytes = 4 << 20
	// DefaultMaxPaths fits a Get of the binding and headroom of every
	// queue of a 64-port switch (64 x 8 x 2).
	DefaultMaxPaths = 1024
	// DefaultMaxSetOps fits a Set of every queue of a 64-port switch
	// (64 x 8 queues, up to 7 leaves each in openconfig; sonic writes
	// fewer, one update per table entry).
	DefaultMaxSetOps = 4096
)

// Faults are failures a test can switch on to exercise a client.
type Faults struct {
	RejectSets    bool // every Set is refused with FailedPrecondition, changing nothing
	MuteTelemetry bool // STREAM subscriptions stay open but send nothing
	// Malformed makes every telemetry notification carry one malformed
	// value: the tx-bytes counter of the first lossless queue of the first
	// port of each switch becomes the string "garbage".
	Malformed bool
	// NoLLDP makes the switches answer as if they had no openconfig-lldp
	// model: Get and Subscribe of the LLDP paths fail with NotFound.
	NoLLDP bool
	// DuplicateSync makes every STREAM subscription send its
	// sync_response twice; SlowOnChange holds the initial dump of those
	// with an ON_CHANGE subscription that long (a slow configuration
	// database), so that the other subscriptions sync first.
	DuplicateSync bool
	SlowOnChange  time.Duration
	// ClockShift moves the timestamp of every notification (a switch's
	// clock stepped); ShiftOnce moves that of one notification of the
	// next sample, once (one stamped wrong).
	ClockShift, ShiftOnce time.Duration
}

// Server is a running set of simulated switches.
type Server struct {
	cfg    Config
	d      gnmipath.Dialect
	dev    *gnmipath.Device
	r      *runner
	cancel context.CancelFunc
	byName map[string]int

	mu        sync.Mutex
	listeners []*listener
	prev      []listener // addresses of the listeners StopGRPC closed
	streams   map[int64]context.CancelCauseFunc
	nextID    int64
	// sonicPeers is device sonic's one Subscribe per peer address: the
	// stream id registered for each (see Config.SonicStreamMultiplexing).
	sonicPeers map[string]int64
	faults     atomic.Pointer[Faults]
	preparing  chan struct{} // held while a Set is decoded and checked
	creds      credentials.TransportCredentials
}

type listener struct {
	addr string
	only int // switch index, or -1 for all
	gs   *grpc.Server
}

var errDropped = errors.New("stream dropped by fault injection")

// errDisposed ends a device sonic Subscribe that a newer one from the same
// peer address replaced, as sonic-gnmi's client queue is disposed then.
var errDisposed = errors.New("queue: disposed")

// Sonic queue counts (Config.SonicQueues).
const (
	DefaultSonicQueues = 10
	MaxSonicQueues     = 64
)

// claimSonicPeer registers stream id as peer's one Subscribe, ending the
// one it replaces (sonic-gnmi's "Delete duplicate client").
func (s *Server) claimSonicPeer(peer string, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sonicPeers == nil {
		s.sonicPeers = map[string]int64{}
	}
	if old, ok := s.sonicPeers[peer]; ok {
		if c := s.streams[old]; c != nil {
			c(errDisposed)
		}
	}
	s.sonicPeers[peer] = id
}

// releaseSonicPeer forgets peer's Subscribe if it is still id.
func (s *Server) releaseSonicPeer(peer string, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sonicPeers[peer] == id {
		delete(s.sonicPeers, peer)
	}
}

// Start builds the simulation (unless cfg.Engine is given), starts pacing
// it, and serves gNMI. It returns the server and the address of its (first)
// listener.
func Start(ctx context.Context, cfg Config) (*Server, string, error) {
	dev, err := resolveDevice(&cfg)
	if err != nil {
		return nil, "", err
	}
	if cfg.Lockstep && dev.Dialect == gnmipath.Sonic {
		return nil, "", errors.New("simswitch: lockstep is not for the sonic dialect (its imitation samples on the wall clock)")
	}
	if dev.MinSample > cfg.MinSampleInterval {
		cfg.MinSampleInterval = dev.MinSample
	}
	if err := cfg.fillDefaults(); err != nil {
		return nil, "", err
	}
	s := &Server{cfg: cfg, d: cfg.Dialect, dev: dev, streams: map[int64]context.CancelCauseFunc{}, byName: map[string]int{},
		preparing: make(chan struct{}, 1)}
	s.faults.Store(&Faults{})
	if cfg.TLSCert != "" {
		c, err := credentials.NewServerTLSFromFile(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, "", fmt.Errorf("tls: cert %s / key %s: %v", cfg.TLSCert, cfg.TLSKey, err)
		}
		s.creds = c
	}
	if err := s.buildRunner(); err != nil {
		return nil, "", fmt.Errorf("scenario %s: %w", cfg.Sim.Name, err)
	}
	if len(s.r.infos) == 0 {
		return nil, "", fmt.Errorf("scenario %s: the fabric has no switches to serve", cfg.Sim.Name)
	}
	for i, info := range s.r.infos {
		s.byName[info.Name] = i
	}
	if err := s.startServing(ctx); err != nil {
		return nil, "", err
	}
	return s, s.listeners[0].addr, nil
}

// resolveDevice looks up cfg's device (the dialect's default when none is
// named) and settles cfg's dialect (openconfig when neither is given).
func resolveDevice(cfg *Config) (*gnmipath.Device, error) {
	var dev *gnmipath.Device
	if cfg.Device != "" {
		var err error
		if dev, err = gnmipath.LookupDevice(cfg.Device); err != nil {
			return nil, err
		}
		if cfg.Dialect != "" && cfg.Dialect != dev.Dialect {
			return nil, fmt.Errorf("device %s speaks the %s dialect, not %s", dev.Name, dev.Dialect, cfg.Dialect)
		}
		cfg.Dialect = dev.Dialect
	}
	if cfg.Dialect == "" {
		cfg.Dialect = gnmipath.OpenConfig
	}
	if _, err := gnmipath.ParseDialect(string(cfg.Dialect)); err != nil {
		return nil, err
	}
	if dev == nil {
		dev = gnmipath.DefaultDevice(cfg.Dialect)
	}
	return dev, nil
}

// fillDefaults gives every unset field of cfg its default and refuses
// settings that cannot work together.
func (cfg *Config) fillDefaults() error {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:57400"
	}
	if cfg.Timescale == 0 {
		cfg.Timescale = 1000
	}
	if err := CheckTimescale(cfg.Timescale); err != nil {
		return fmt.Errorf("timescale %g: %v", cfg.Timescale, err)
	}
	if cfg.Step <= 0 {
		cfg.Step = 5 * time.Millisecond
	}
	if cfg.MinSampleInterval <= 0 {
		cfg.MinSampleInterval = time.Millisecond
	}
	if cfg.DefaultSample <= 0 {
		cfg.DefaultSample = time.Second
	}
	if cfg.MaxMsgBytes <= 0 {
		cfg.MaxMsgBytes = DefaultMaxMsgBytes
	}
	if cfg.MaxPaths <= 0 {
		cfg.MaxPaths = DefaultMaxPaths
	}
	if cfg.MaxSetOps <= 0 {
		cfg.MaxSetOps = DefaultMaxSetOps
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return fmt.Errorf("tls: give both a certificate and a key file (have cert %q, key %q)", cfg.TLSCert, cfg.TLSKey)
	}
	if cfg.Password != "" && cfg.Username == "" {
		return fmt.Errorf("password given without a username")
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Warnf == nil {
		cfg.Warnf = cfg.Logf
	}
	return nil
}

// buildRunner builds the simulation (unless s.cfg.Engine is given) and its
// runner: device sonic's CONFIG_DBs, the scenario's end and the Set log.
func (s *Server) buildRunner() error {
	cfg := s.cfg
	eng := cfg.Engine
	if eng == nil {
		sim, err := simenv.New(cfg.Sim)
		if err != nil {
			return fmt.Errorf("simulation: %w", err)
		}
		eng = sim
	}
	s.r = newRunner(eng, s.dev, cfg.Timescale, cfg.Step, cfg.Sim.PFC.XonOffsetBytes)
	s.r.lockstep = cfg.Lockstep
	if s.dev.RealSonic {
		if err := s.buildSonic(); err != nil {
			return err
		}
	}
	if cfg.Engine == nil && !cfg.Sim.Loop {
		s.r.end = cfg.Sim.Duration
		name := cfg.Sim.Name
		s.r.onEnd = func(at simenv.Time) {
			cfg.Logf("simswitch: scenario %s ended at simulated %v (its duration): no new traffic from now on, the switches keep serving an idle fabric (loop the workload for traffic that keeps going)", name, at)
		}
	}
	if cfg.SetLog != nil {
		s.r.setLog = &setLog{w: cfg.SetLog}
		s.r.logStart()
	}
	return nil
}

// buildSonic checks device sonic's settings and lays every switch's
// configuration out as its CONFIG_DB, which the published tree is then
// read from.
func (s *Server) buildSonic() error {
	if s.cfg.SonicQueues == 0 {
		s.cfg.SonicQueues = DefaultSonicQueues
	}
	cfg := s.cfg
	if cfg.SonicQueues < simenv.NumQueues || cfg.SonicQueues > MaxSonicQueues {
		return fmt.Errorf("sonic queues %d: want %d to %d per port", cfg.SonicQueues, simenv.NumQueues, MaxSonicQueues)
	}
	switch cfg.SonicBufferModel {
	case "", "static", "dynamic":
	default:
		return fmt.Errorf("sonic buffer model %q: want static or dynamic", cfg.SonicBufferModel)
	}
	for i, info := range s.r.infos {
		db := newSonicDB(info, s.r.pub[i].tree, cfg.SonicBufferModel == "dynamic", cfg.SonicQueues)
		if cfg.SonicNoCableLength {
			delete(db, "CABLE_LENGTH")
		}
		t, err := db.tree()
		if err != nil {
			return fmt.Errorf("sonic config of %s: %v", info.Name, err)
		}
		s.r.sonic = append(s.r.sonic, db)
		s.r.pub[i].tree, s.r.pub[i].items = t, gnmipath.ConfigItemsFor(s.dev, t)
	}
	return nil
}

// startServing starts the simulation and the listeners, and closes the
// server when ctx ends; if a listener fails it stops the simulation again.
func (s *Server) startServing(ctx context.Context) error {
	rctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.r.run(rctx)
	if err := s.listen(); err != nil {
		cancel()
		<-s.r.done
		return err
	}
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.r.done:
		}
	}()
	return nil
}

func (s *Server) listen() error {
	var ws []listener
	if !s.cfg.PerSwitch {
		ws = append(ws, listener{addr: s.cfg.Listen, only: -1})
	} else {
		host, port, err := net.SplitHostPort(s.cfg.Listen)
		if err != nil {
			return fmt.Errorf("listen address %q: %v", s.cfg.Listen, err)
		}
		var base int
		fmt.Sscan(port, &base)
		for i := range s.r.infos {
			p := 0
			if base != 0 {
				p = base + i
			}
			ws = append(ws, listener{addr: net.JoinHostPort(host, fmt.Sprint(p)), only: i})
		}
	}
	return s.serveAll(ws)
}

// serveAll starts a gRPC server on every wanted address, or none of them.
func (s *Server) serveAll(want []listener) error {
	var ls []*listener
	for _, w := range want {
		l, err := s.serve(w.addr, w.only)
		if err != nil {
			for _, o := range ls {
				o.gs.Stop()
			}
			return err
		}
		ls = append(ls, l)
	}
	s.mu.Lock()
	s.listeners = ls
	s.mu.Unlock()
	return nil
}

func (s *Server) serve(addr string, only int) (*listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %v", addr, err)
	}
	// Responses are kept under MaxMsgBytes by the handlers (Get refuses,
	// Subscribe splits); the send limit is only a backstop.
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(s.unaryAuth), grpc.StreamInterceptor(s.streamAuth),
		grpc.MaxRecvMsgSize(s.cfg.MaxMsgBytes), grpc.MaxSendMsgSize(s.cfg.MaxMsgBytes)}
	if s.creds != nil {
		opts = append(opts, grpc.Creds(s.creds))
	}
	gs := grpc.NewServer(opts...)
	gnmi.RegisterGNMIServer(gs, &service{s: s, only: only})
	go gs.Serve(lis)
	l := &listener{addr: lis.Addr().String(), only: only, gs: gs}
	name := "all switches"
	if only >= 0 {
		name = s.r.infos[only].Name
	}
	s.cfg.Logf("simswitch: gNMI (%s) for %s on %s", s.d, name, l.addr)
	return l, nil
}

// Addrs returns the listener addresses by switch name ("" for a listener
// serving every switch).
func (s *Server) Addrs() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for _, l := range s.listeners {
		if l.only < 0 {
			out[""] = l.addr
		} else {
			out[s.r.infos[l.only].Name] = l.addr
		}
	}
	return out
}

// StopGRPC closes every listener and connection; the simulation keeps
// running.
func (s *Server) StopGRPC() {
	s.mu.Lock()
	ls := s.listeners
	s.listeners = nil
	if ls != nil {
		s.prev = nil
		for _, l := range ls {
			s.prev = append(s.prev, listener{addr: l.addr, only: l.only})
		}
	}
	s.mu.Unlock()
	for _, l := range ls {
		l.gs.Stop()
	}
}

// RestartGRPC serves again on the addresses used before (after StopGRPC).
func (s *Server) RestartGRPC() error {
	s.mu.Lock()
	old := s.listeners
	s.mu.Unlock()
	if old != nil {
		return fmt.Errorf("gRPC is already serving")
	}
	return s.restart()
}

func (s *Server) restart() error {
	s.mu.Lock()
	prev := s.prev
	s.mu.Unlock()
	return s.serveAll(prev)
}

// Close stops gRPC and the simulation.
func (s *Server) Close() {
	s.StopGRPC()
	s.cancel()
	<-s.r.done
}

// SetFaults switches injected failures on or off.
func (s *Server) SetFaults(f Faults) { s.faults.Store(&f) }

func (s *Server) getFaults() Faults { return *s.faults.Load() }

// takeShiftOnce returns Faults.ShiftOnce and clears it (0: none).
func (s *Server) takeShiftOnce() time.Duration {
	for {
		f := s.faults.Load()
		if f.ShiftOnce == 0 {
			return 0
		}
		g := *f
		g.ShiftOnce = 0
		if s.faults.CompareAndSwap(f, &g) {
			return f.ShiftOnce
		}
	}
}

// DropStreams ends every open Subscribe stream with codes.Unavailable.
func (s *Server) DropStreams() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.streams {
		c(errDropped)
	}
}

func (s *Server) addStream(c context.CancelCauseFunc) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	s.streams[s.nextID] = c
	return s.nextID
}

func (s *Server) removeStream(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.streams, id)
}

// Status reports the simulated time and how far the simulation is behind
// its wall-clock pace.
func (s *Server) Status() (now, lag simenv.Time) { return s.r.status() }

// ErrNotLockstep is Advance's error on a server that runs with the wall
// clock.
var ErrNotLockstep = errors.New("simswitch: Advance needs Config.Lockstep (this server runs with the wall clock)")

// Advance runs the simulation d further (Config.Lockstep) and returns
// once every step of it is published: SAMPLE subscriptions due in it send
// their updates right after. It returns the simulated time reached.
func (s *Server) Advance(ctx context.Context, d simenv.Time) (simenv.Time, error) {
	if !s.cfg.Lockstep {
		return 0, ErrNotLockstep
	}
	var now simenv.Time
	err := s.r.do(ctx, func() {
		s.r.advance(s.r.eng.Now() + d)
		now = s.r.eng.Now()
	})
	return now, err
}

// Idle says whether the fabric is idle: no flow active and no workload
// left to start one (the engine's Idle; false for an engine that does not
// say). A lockstep run stops there, as eval's bare runs do (simenv/gym).
func (s *Server) Idle(ctx context.Context) (bool, error) {
	e, ok := s.r.eng.(interface{ Idle() bool })
	if !ok {
		return false, nil
	}
	var idle bool
	err := s.r.do(ctx, func() { idle = e.Idle() })
	return idle, err
}

// clock is the time subscriptions sample by: the wall clock, or in
// lockstep simulated time (from the Unix epoch).
func (s *Server) clock() time.Time {
	if s.cfg.Lockstep {
		now, _ := s.r.status()
		return time.Unix(0, 0).Add(now.Duration())
	}
	return time.Now()
}

// Ended says whether the scenario's traffic has ended: simulated time
// passed the scenario's Duration and its workloads do not loop
// (simenv.Config.Loop). The switches go on serving an idle fabric; Config.Logf
// says so once when it happens. Always false for a Config.Engine given by
// the caller, whose end is not known.
func (s *Server) Ended() bool { return s.r.ended.Load() }

// End is the simulated time at which the scenario's traffic ends, 0 when it
// loops (or the Engine was given by the caller).
func (s *Server) End() simenv.Time { return s.r.end }

// Device is the kind of switch the server imitates.
func (s *Server) Device() *gnmipath.Device { return s.dev }

// Dialect is the dialect served.
func (s *Server) Dialect() gnmipath.Dialect { return s.d }

// Switches describes the simulated switches.
func (s *Server) Switches() []simenv.SwitchInfo {
	return append([]simenv.SwitchInfo(nil), s.r.infos...)
}

// FabricPorts lists the ports of sw that face another switch: what the
// agent's fabric-ports of that target would say (and what LLDP discovery
// finds).
func FabricPorts(sw simenv.SwitchInfo) []string {
	out := []string{}
	for _, p := range sw.Ports {
		if p.PeerSwitch {
			out = append(out, p.Name)
		}
	}
	return out
}

// LosslessPriorities are the queues served (the lossless ones).
func (s *Server) LosslessPriorities() []int { return append([]int(nil), s.r.lossless...) }

// Flows returns the simulation's ground truth about every flow so far.
func (s *Server) Flows(ctx context.Context) ([]simenv.FlowRecord, error) {
	var out []simenv.FlowRecord
	err := s.r.do(ctx, func() { out = s.r.eng.Flows() })
	return out, err
}

// Stats returns the simulation's run-wide totals.
func (s *Server) Stats(ctx context.Context) (simenv.Stats, error) {
	var out simenv.Stats
	err := s.r.do(ctx, func() { out = s.r.eng.Stats() })
	return out, err
}

// Telemetry returns switch name's current telemetry without resetting any
// window (ground truth for tests).
func (s *Server) Telemetry(name string) (simenv.SwitchTelemetry, error) {
	i, ok := s.byName[name]
	if !ok {
		return simenv.SwitchTelemetry{}, fmt.Errorf("switch %q does not exist (have %s)", name, s.names())
	}
	tel, _, _ := s.r.telemetry(i, false)
	return tel, nil
}

func (s *Server) names() string {
	ns := make([]string, 0, len(s.r.infos))
	for _, i := range s.r.infos {
		ns = append(ns, i.Name)
	}
	return strings.Join(ns, ", ")
}

// ---- authentication ----

func (s *Server) authorize(ctx context.Context) error {
	if s.cfg.Username == "" {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	get := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	u, p := get("username"), get("password")
	if u == "" {
		return status.Error(codes.Unauthenticated, "missing username/password metadata")
	}
	if subtle.ConstantTimeCompare([]byte(u), []byte(s.cfg.Username)) != 1 ||
		subtle.ConstantTimeCompare([]byte(p), []byte(s.cfg.Password)) != 1 {
		return status.Error(codes.Unauthenticated, "username or password is wrong")
	}
	return nil
}

func (s *Server) unaryAuth(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := s.authorize(ctx); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (s *Server) streamAuth(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := s.authorize(ss.Context()); err != nil {
		return err
	}
	return h(srv, ss)
}

// sortedNames lists switch names for messages.
func sortedNames(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
