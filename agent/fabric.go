package agent

// The fabric record of each target (env.FabricRecord): its ports, speeds,
// peers and LLDP neighbours, buffer and PFC state, written to the agent db
// from the first snapshot after the switch (re)connects or its peers were
// learnt, and whenever its ports change. ecntune twin builds a model of
// the fabric from it.

import (
	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// staleFabric marks target's fabric record for rewriting with its next
// snapshot (it (re)connected, or its neighbours were read).
func (a *Agent) staleFabric(target string) {
	a.peerMu.Lock()
	a.fabricStale[target] = true
	a.peerMu.Unlock()
}

// setNeighbors keeps what LLDP says is at the far end of each port of
// target (nil: nothing known).
func (a *Agent) setNeighbors(target string, n map[string][]gnmipath.LLDPNeighbor) {
	out := map[string]env.Neighbor{}
	for port, nbs := range n {
		for _, nb := range nbs {
			if nb.SystemName != "" || nb.PortID != "" {
				out[port] = env.Neighbor{System: nb.SystemName, Port: nb.PortID}
				break
			}
		}
	}
	a.peerMu.Lock()
	a.neighbors[target] = out
	a.fabricStale[target] = true
	a.peerMu.Unlock()
}

// noteFabric writes t's fabric record from s (the queues under control,
// their peers set) when none was written in this run, when it is stale,
// or when its ports changed. A failed write is tried again with the next
// snapshot, and logged when it starts failing and when it works again.
func (a *Agent) noteFabric(t config.Target, s env.Snapshot) {
	if len(s.Queues) == 0 {
		return
	}
	a.peerMu.Lock()
	stale, neigh := a.fabricStale[t.Name], a.neighbors[t.Name]
	last, written := a.fabric[t.Name]
	a.peerMu.Unlock()
	if written && !stale && last.Unchanged(s, neigh) {
		return // every snapshot asks; building a record costs a quarter of observing one
	}
	r := env.NewFabricRecord(s, neigh, t.CableMeters, t.FrameBytes)
	if err := a.o.Journal.PutFabric(r); err != nil {
		if a.fabricFailing(t.Name, true) {
			a.log.Warn("fabric record not written; tried again with every snapshot, said again once written", "target", t.Name, "err", err)
		}
		return
	}
	a.peerMu.Lock()
	a.fabric[t.Name] = r
	delete(a.fabricStale, t.Name)
	a.peerMu.Unlock()
	if a.fabricFailing(t.Name, false) {
		a.log.Info("fabric record written again", "target", t.Name)
	}
}

// fabricFailing records whether target's fabric record fails to be
// written and says whether that changed: a db that cannot be written is
// logged once per change of state, not with every snapshot.
func (a *Agent) fabricFailing(target string, failing bool) bool {
	a.peerMu.Lock()
	defer a.peerMu.Unlock()
	if a.fabricFail[target] == failing {
		return false
	}
	if failing {
		a.fabricFail[target] = true
	} else {
		delete(a.fabricFail, target)
	}
	return true
}
