package env

import (
	"slices"
	"testing"
)

func TestNaturalOrder(t *testing.T) {
	ports := []string{"Ethernet10", "Ethernet2", "Ethernet1/10", "Ethernet1/2", "Eth1", "leaf10", "leaf2", "Ethernet"}
	slices.SortFunc(ports, NaturalCompare)
	want := []string{"Eth1", "Ethernet", "Ethernet1/2", "Ethernet1/10", "Ethernet2", "Ethernet10", "leaf2", "leaf10"}
	if !slices.Equal(ports, want) {
		t.Fatalf("order %v, want %v", ports, want)
	}
	keys := []QueueKey{{"sw10", "Ethernet0", 3}, {"sw2", "Ethernet10", 3}, {"sw2", "Ethernet2", 4}, {"sw2", "Ethernet2", 3}}
	slices.SortFunc(keys, CompareQueueKeys)
	if keys[0] != (QueueKey{"sw2", "Ethernet2", 3}) || keys[1].Queue != 4 || keys[2].Port != "Ethernet10" || keys[3].Target != "sw10" {
		t.Fatalf("keys %v", keys)
	}
}
