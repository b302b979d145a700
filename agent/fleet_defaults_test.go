package agent

import (
	"testing"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/fleet"
)

// What the configuration says fleet.takeover left out is (its errors and
// warnings name it) is what the fleet takes.
func TestFleetTakeoverDefaultAgrees(t *testing.T) {
	if config.DefaultFleetTakeover != fleet.DefaultTakeover {
		t.Errorf("config.DefaultFleetTakeover %v, fleet.DefaultTakeover %v", config.DefaultFleetTakeover, fleet.DefaultTakeover)
	}
}
