package policy

import (
	"regexp"
	"strings"
)

// modelRefRE finds the registry models a spec names: model:NAME and
// model:NAME@VERSION (NAME a letter, then letters, digits, '.', '_', '-').
var modelRefRE = regexp.MustCompile(`model:([A-Za-z][A-Za-z0-9._-]*(?:@[A-Za-z0-9]+)?)`)

// PinModels replaces every model:REF of spec with the version REF names
// now, model:NAME@V, read through models (nil: spec as it is). A spec of
// the promoted version (model:NAME@promoted, or model:NAME) then names
// what runs wherever the policy's name is recorded (the audit log, the
// recommendations, the start log), and a later promotion is not taken
// unseen by an agent running (it is at its next start). A model without a
// version (not stored: a candidate train --twin judges) is left as named.
func PinModels(spec string, models ModelSource) (string, error) {
	if models == nil {
		return spec, nil
	}
	var err error
	out := modelRefRE.ReplaceAllStringFunc(spec, func(s string) string {
		if err != nil {
			return s
		}
		ref := s[len(ModelPrefix):]
		name, _, _ := strings.Cut(ref, "@")
		m, e := models(ref)
		switch {
		case e != nil:
			err = e
			return s
		case m.Version <= 0 || m.Name != name:
			// not stored (a candidate being judged), or a source that
			// answers for the name with another model: nothing to pin
			return s
		}
		return ModelPrefix + m.Ref()
	})
	return out, err
}
