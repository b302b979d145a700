package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/models"
)

// ParseSpec reads the whole grammar once: kinds, arguments, entries,
// parts, rules in the order they wrap, and the models a spec needs.
func TestParseSpec(t *testing.T) {
	sp, err := ParseSpec("schedule:hpcc,3ms=387KB/774KB/0.3%,6ms=model:tuned:prefer=0.5+alpha=1/8+headroom=model:hdrm")
	if err != nil {
		t.Fatal(err)
	}
	if sp.Kind != KindSchedule || sp.Base != "schedule:hpcc,3ms=387KB/774KB/0.3%,6ms=model:tuned:prefer=0.5" || len(sp.Entries) != 3 {
		t.Fatalf("%+v", sp)
	}
	e := sp.Entries
	if e[0].Spec.Kind != KindStatic || e[0].Spec.Preset != "hpcc" || e[1].Spec.Kind != KindFixed || e[1].Spec.Setting.KmaxBytes != 774_000 ||
		e[2].Spec.Kind != KindModel || e[2].Spec.Model != "tuned" || !e[2].Spec.Prefer || e[2].Spec.Preference != 0.5 || e[2].At != "6ms" {
		t.Fatalf("entries %+v", e)
	}
	if len(sp.Rules) != 2 || sp.Rules[0].Name != AlphaRule || sp.Rules[0].Alpha != 0.125 || sp.Rules[1].Model != "hdrm" ||
		sp.Rules[1].Text != sp.Text || !strings.HasSuffix(sp.Rules[0].Text, "+alpha=1/8") {
		t.Fatalf("rules %+v", sp.Rules)
	}
	if got := sp.Models(); !slices.Equal(got, []string{"tuned", "hdrm"}) {
		t.Fatalf("models %q", got)
	}

	ro, err := ParseSpec("roles:host=builtin:prefer=-1;other=fixed:400B/1600KB/1%;fabric=static:hpcc+headroom=floor*2")
	if err != nil {
		t.Fatal(err)
	}
	if len(ro.Parts) != 3 || ro.Parts[0].Label != "host" || ro.Parts[1].Label != "fabric" || ro.Parts[2].Label != "other" ||
		ro.Parts[0].Spec.Preference != -1 || ro.Parts[1].Spec.Rules[0].Factor != 2 || len(ro.Models()) != 0 {
		t.Fatalf("roles %+v", ro)
	}
	if w := ro.Warnings(); len(w) != 1 || !strings.HasPrefix(w[0], "other: kmin 400B is below one MTU") {
		t.Fatalf("warnings %q", w)
	}
	d, err := ParseSpec("daily:tz=Europe/Berlin,08:00=builtin,20:00=adaptive")
	if err != nil || d.Kind != KindDaily || d.Zone.String() != "Europe/Berlin" || d.Entries[1].Spec.Kind != KindAdaptive {
		t.Fatalf("daily %+v %v", d, err)
	}
	// Lookup is ParseSpec, then Resolve
	p, err := Resolver{}.Resolve(d)
	if err != nil || p.Name() != "daily:tz=Europe/Berlin,08:00=builtin,20:00=adaptive" {
		t.Fatalf("resolved %v %v", p, err)
	}
	if _, err := (Resolver{}).Resolve(Spec{Text: "x"}); err == nil {
		t.Error("a zero Spec resolved")
	}
}

// CheckSpec words its errors as the agent's load-time check always has,
// and leaves model references alone.
func TestCheckSpec(t *testing.T) {
	for _, ok := range []string{"model:absent", "schedule:hpcc,1h=model:x+headroom=model:y", "roles:host=builtin;fabric=model:z+alpha=2"} {
		if err := CheckSpec(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for spec, want := range map[string]string{
		"schedule:hpcc,1h=builtin:prefer=2": `policy "schedule:hpcc,1h=builtin:prefer=2": entry 2 (at 1h): policy "builtin:prefer=2": preference 2`,
		"schedule:hpcc,1h=model:":           `entry 2 (at 1h): "model:" is not allowed`,
		"model:tuned,prefer=fast":           "prefer=fast: not a number",
		"model:,prefer=0.5":                 `"model:,prefer=0.5" names no model`,
		"builtin+headroom=model:":           "headroom=model:NAME names no model",
		" builtin":                          `" builtin" is not allowed`,
		"adaptive:x":                        `"adaptive:x" is not allowed`,
		// a rule twice or inside a schedule is said so, as the CLI does, not
		// blamed on its value ("headroom=floor+headroom=floor: want floor, ...")
		"builtin+headroom=floor+headroom=floor":             "+headroom twice: give each rule once",
		"schedule:builtin+headroom=floor,1ms=builtin":       "+headroom inside a schedule: give it after the last entry",
		"schedule:builtin+alpha=2,1ms=builtin":              "+alpha inside a schedule: give it after the last entry",
		"roles:host=builtin+alpha=2+alpha=2;fabric=builtin": "+alpha twice",
	} {
		if err := CheckSpec(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to say %q", spec, err, want)
		}
	}
}

// A Resolver's Kinds add spec forms: matched first, on the spec as
// given, at the top only; their parts parse with the built-in kinds.
func TestResolverKinds(t *testing.T) {
	pair := &Kind{Name: "pair", Prefix: "pair:",
		Parse: func(p *Parser, sp *Spec, arg string) error {
			a, b, ok := strings.Cut(arg, "|")
			if !ok {
				return errors.New("want pair:A|B")
			}
			for _, s := range []string{a, b} {
				ps, err := p.Parse(s)
				if err != nil {
					return err
				}
				sp.Parts = append(sp.Parts, Part{Label: "side", Spec: ps})
			}
			return nil
		},
		Resolve: func(r Resolver, sp Spec) (Policy, error) { return r.Resolve(sp.Parts[1].Spec) },
	}
	best := &Kind{Name: "static:best", Alone: "static:best"}
	r := Resolver{Kinds: []*Kind{pair, best}, Models: func(string) (models.Model, error) { return models.Model{}, models.ErrNotFound }}
	if r.KindOf("pair:a|b") != pair || r.KindOf("static:best") != best || r.KindOf(" static:best") != KindStatic ||
		r.KindOf("static:hpcc+alpha=2") != KindStatic || r.KindOf("roles:host=a") != KindRoles || r.KindOf("magic") != nil {
		t.Fatal("KindOf")
	}
	p, err := r.Lookup("pair:static:hpcc|fixed:100B/400KB/1%")
	if err != nil || p.Name() != "fixed:100B/400KB/1%" {
		t.Fatalf("pair: %v %v", p, err)
	}
	if w := r.SpecWarnings("pair:static:hpcc|fixed:100B/400KB/1%"); len(w) != 1 || !strings.HasPrefix(w[0], "side: kmin 100B") {
		t.Fatalf("warnings %q", w)
	}
	for spec, want := range map[string]string{
		"pair:static:hpcc":            "want pair:A|B",
		"pair:pair:a|b|static:hpcc":   `unknown policy "pair:a"`, // nested: built-in kinds only
		"static:best":                 "names no policy of its own",
		"static:best+alpha=2":         `unknown preset "best"`, // a rule's base: built-in kinds only
		"pair:static:hpcc|model:gone": models.ErrNotFound.Error(),
		"schedule:hpcc,1ms=pair:a|b":  `unknown policy "pair:a|b"`,
	} {
		if _, err := r.Lookup(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
	if _, err := Lookup("pair:static:hpcc|static:hpcc"); err == nil {
		t.Error("the zero Resolver took a kind it was not given")
	}
}

// A misspelt policy gets a suggestion before the grammar: a kind's name,
// with its argument, or a preset's name as static:NAME.
func TestSpecDidYouMean(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"buitin", `unknown policy "buitin": did you mean builtin?`},
		{"adaptiv", "did you mean adaptive?"},
		{"modle:mine:prefer=1", "did you mean model:mine:prefer=1?"},
		{"statc:hpcc", "did you mean static:hpcc?"},
		{"hpcc", "did you mean static:hpcc?"},
	} {
		_, err := ParseSpec(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.spec, err, c.want)
		}
		if err := CheckSpec(c.spec); err == nil || !strings.Contains(err.Error(), c.want[strings.Index(c.want, "did you"):]) {
			t.Errorf("agent's check of %q: %v, want %q", c.spec, err, c.want)
		}
	}
	if _, err := ParseSpec("zzzzzzzz"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("nothing near: %v", err)
	}
}
