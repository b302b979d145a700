package agent

// fleetViewer is a Gate that knows its fleet's members and whether it
// leads it (agent/fleet.Node).
type fleetViewer interface {
	Members() int
	Leader() bool
}

// noteFleet sets ecntune_agent_fleet_members and ecntune_agent_fleet_leader
// (a fleet only).
func (a *Agent) noteFleet() {
	fv, ok := a.o.Gate.(fleetViewer)
	if !ok {
		return
	}
	leader := 0.0
	if fv.Leader() {
		leader = 1
	}
	a.o.Instruments.FleetMembers.WithLabelValues().Set(float64(fv.Members()))
	a.o.Instruments.FleetLeader.WithLabelValues().Set(leader)
}
