package simswitch

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/ecntune/ecntune/gnmipath"
)

// SetLogEntry is one line of the set log (Config.SetLog): a lossless
// queue's setting as the switch runs it, at start ("start") or after a Set
// changed it ("set"), or after the switch undid an unconfirmed commit
// ("rollback": its timer; "cancel": the client's cancel). It is evidence from the switch's side, for tests
// that audit a client (the kill -9 soak): what each queue really ran, and
// when.
type SetLogEntry struct {
	TimeNs   int64   `json:"time_ns"` // wall clock
	Why      string  `json:"why"`     // start, set, or refused (a stale fencing token, Config.Fence)
	Switch   string  `json:"switch"`
	Port     string  `json:"port"`
	Queue    int     `json:"queue"`
	Kmin     int64   `json:"kmin_bytes"`
	Kmax     int64   `json:"kmax_bytes"`
	Pmax     float64 `json:"pmax"`
	Headroom int64   `json:"headroom_bytes"`
	// Alpha is the PG's dynamic-threshold factor as configured (sonic
	// dynamic_th; 0: none).
	Alpha float64 `json:"alpha,omitempty"`
	// Floor is the PG's computed lossless headroom minimum (0: unknown).
	Floor int64 `json:"floor_bytes,omitempty"`
	// Writer and Token are the fence the Set carried
	// (gnmipath.FenceMetadata): the fleet member that wrote and its
	// fencing token for the switch (empty: a Set without one).
	Writer string `json:"writer,omitempty"`
	Token  int64  `json:"token,omitempty"`
}

// setLog writes SetLogEntry lines to w, one JSON object per line.
type setLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *setLog) write(es []SetLogEntry) {
	if l == nil || l.w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range es {
		b, _ := json.Marshal(e)
		l.w.Write(append(b, '\n'))
	}
}

// logStart records every lossless queue's setting as the server starts.
func (r *runner) logStart() {
	if r.setLog == nil {
		return
	}
	now := time.Now().UnixNano()
	var es []SetLogEntry
	for sw, info := range r.infos {
		r.mu.Lock()
		t, tel := r.pub[sw].tree, r.pub[sw].tel
		r.mu.Unlock()
		for pi, p := range info.Ports {
			for _, q := range r.lossless {
				s, _ := gnmipath.Resolve(r.d, t, p.Name, q)
				e := SetLogEntry{TimeNs: now, Why: "start", Switch: info.Name, Port: p.Name, Queue: q,
					Kmin: s.KminBytes, Kmax: s.KmaxBytes, Pmax: s.Pmax, Headroom: s.HeadroomBytes, Alpha: s.Alpha}
				if pi < len(tel.Ports) {
					e.Floor = tel.Ports[pi].PG[q].MinHeadroomBytes
				}
				es = append(es, e)
			}
		}
	}
	r.setLog.write(es)
}

// logChanges records what a committed Set changed.
func (r *runner) logChanges(sw int, changes []change) { r.logChangesWhy(sw, changes, "set") }

// logChangesWhy records changes with why (set, or a commit's rollback or
// cancel).
func (r *runner) logChangesWhy(sw int, changes []change, why string) {
	if r.setLog == nil || len(changes) == 0 {
		return
	}
	now := time.Now().UnixNano()
	info := r.infos[sw]
	es := make([]SetLogEntry, 0, len(changes))
	for _, c := range changes {
		es = append(es, SetLogEntry{TimeNs: now, Why: why, Switch: info.Name, Port: info.Ports[c.ref.Port].Name,
			Queue: c.ref.Queue, Kmin: c.ecn.KminBytes, Kmax: c.ecn.KmaxBytes, Pmax: c.ecn.Pmax, Headroom: c.hdrm, Alpha: c.alpha,
			Writer: r.writing.Writer, Token: r.writing.Token})
	}
	r.setLog.write(es)
}
