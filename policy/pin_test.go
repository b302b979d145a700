package policy

import (
	"errors"
	"testing"

	"github.com/ecntune/ecntune/models"
)

// Every model a spec names is pinned to the version it names now, in
// every place a spec may name one; other specs pass as they are.
func TestPinModels(t *testing.T) {
	reg := func(ref string) (models.Model, error) {
		switch ref {
		case "mine", "mine@promoted":
			return models.Model{Name: "mine", Version: 2}, nil
		case "mine@1":
			return models.Model{Name: "mine", Version: 1}, nil
		case "hr.v2_x-y":
			return models.Model{Name: "hr.v2_x-y", Version: 7}, nil
		case "cand":
			return models.Model{Name: "cand"}, nil // not stored yet
		}
		return models.Model{}, errors.New("no model " + ref)
	}
	for spec, want := range map[string]string{
		"builtin":                           "builtin",
		"model:mine@promoted":               "model:mine@2",
		"model:mine:prefer=0.5":             "model:mine@2:prefer=0.5",
		"model:mine@1":                      "model:mine@1",
		"rate:model:mine;400G=builtin:400g": "rate:model:mine@2;400G=builtin:400g",
		"roles:host=model:mine@promoted;fabric=static:hpcc+headroom=model:hr.v2_x-y": "roles:host=model:mine@2;fabric=static:hpcc+headroom=model:hr.v2_x-y@7",
	} {
		if got, err := PinModels(spec, reg); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", spec, got, err, want)
		}
	}
	if _, err := PinModels("model:nosuch", reg); err == nil {
		t.Error("a model the registry does not have was pinned")
	}
	if got, err := PinModels("model:mine", nil); err != nil || got != "model:mine" {
		t.Errorf("without a registry: %q, %v", got, err)
	}
}
