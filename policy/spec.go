package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
)

// The words of the spec grammar: each kind's prefix (its name and the
// separator its argument follows), the specs that are a kind's name alone,
// the rules a spec may end with, and a learned policy's option.
const (
	StaticPrefix   = "static:"    // static:NAME, a vendor preset
	FixedPrefix    = "fixed:"     // fixed:KMIN/KMAX/PMAX at 100 Gb/s
	SchedulePrefix = "schedule:"  // schedule:WHAT,OFFSET=WHAT,...
	DailyPrefix    = "daily:"     // daily:[tz=ZONE,]HH:MM=WHAT,...
	AdaptiveSpec   = "adaptive"   // the step search
	BuiltinSpec    = "builtin"    // the embedded model
	BuiltinPrefix  = "builtin:"   // builtin:prefer=P
	ModelPrefix    = "model:"     // model:NAME[:prefer=P], a registry model
	RolesPrefix    = "roles:"     // roles:host=SPEC;fabric=SPEC[;other=SPEC]
	RatePrefix     = "rate:"      // rate:SPEC;RATE=SPEC[;RATE=SPEC...]
	HeadroomRule   = "+headroom=" // SPEC+headroom=floor[*F]|default|model:NAME
	AlphaRule      = "+alpha="    // SPEC+alpha=A
	PreferOption   = "prefer="    // builtin: and model:'s preference
	HighRateOption = "400g"       // builtin:400g, the model for ports of 400 Gb/s and faster
)

// HighRateSpec is the spec of the embedded model for ports of 400 Gb/s
// and faster.
const HighRateSpec = BuiltinPrefix + HighRateOption

// DefaultSpec is the agent's policy when its configuration names none
// (and the demo's): the built-in model on ports below 400 Gb/s, the one
// for 400 Gb/s and faster ports from there (builtin.HighRateFrom).
const DefaultSpec = RatePrefix + BuiltinSpec + ";400G=" + HighRateSpec

// Kind is one form of policy spec: what its specs start with, how its
// argument parses and how a parsed spec resolves. The built-in kinds are
// KindStatic to KindRoles; a Resolver's Kinds add more (eval's
// static:best, schedule:best@ and truth:).
type Kind struct {
	Name   string // "static", "truth"
	Prefix string // what its specs start with: "static:", "schedule:best@" ("": none)
	Alone  string // the spec that is the kind without an argument: "builtin", "static:best" ("": none)
	// Parse reads arg (what follows Prefix; "" for Alone) into sp, whose
	// Text, Base, Kind and Arg are set; p parses the specs nested in it.
	// Its error is returned as it is: it names the spec. nil: the kind
	// takes any argument and keeps nothing of it.
	Parse func(p *Parser, sp *Spec, arg string) error
	// Resolve builds the policy of sp (without its Rules, which the
	// Resolver applies); r resolves the specs nested in it. nil: the kind
	// names no policy (an evaluation's yardstick), which Resolve refuses.
	Resolve func(r Resolver, sp Spec) (Policy, error)
}

// The built-in kinds. Their Parse and Resolve are set by init: a
// schedule's and roles' parse and resolve the specs they hold.
var (
	KindStatic   = &Kind{Name: "static", Prefix: StaticPrefix}
	KindFixed    = &Kind{Name: "fixed", Prefix: FixedPrefix}
	KindSchedule = &Kind{Name: "schedule", Prefix: SchedulePrefix}
	KindDaily    = &Kind{Name: "daily", Prefix: DailyPrefix}
	KindAdaptive = &Kind{Name: AdaptiveSpec, Prefix: AdaptiveSpec + ":", Alone: AdaptiveSpec}
	KindBuiltin  = &Kind{Name: BuiltinSpec, Prefix: BuiltinPrefix, Alone: BuiltinSpec}
	KindModel    = &Kind{Name: "model", Prefix: ModelPrefix}
	KindRoles    = &Kind{Name: "roles", Prefix: RolesPrefix}
	KindRate     = &Kind{Name: "rate", Prefix: RatePrefix}
)

// builtinKinds is the table of built-in kinds, in the order Specs lists them.
var builtinKinds []*Kind

func init() {
	KindStatic.Parse, KindStatic.Resolve = parseStatic, resolveStatic
	KindFixed.Parse, KindFixed.Resolve = parseFixedKind, resolveFixedKind
	KindSchedule.Parse, KindSchedule.Resolve = parseSchedule, resolveTimed
	KindDaily.Parse, KindDaily.Resolve = parseDaily, resolveTimed
	KindAdaptive.Parse, KindAdaptive.Resolve = parseAdaptive, resolveAdaptive
	KindBuiltin.Parse, KindBuiltin.Resolve = parseBuiltin, resolveBuiltin
	KindModel.Parse, KindModel.Resolve = parseModel, resolveModel
	KindRoles.Parse, KindRoles.Resolve = parseRoles, resolveRoles
	KindRate.Parse, KindRate.Resolve = parseRate, resolveRate
	builtinKinds = []*Kind{KindStatic, KindFixed, KindSchedule, KindDaily, KindAdaptive, KindBuiltin, KindModel, KindRoles, KindRate}
}

// match reports whether spec is of kind k, and its argument.
func (k *Kind) match(spec string) (string, bool) {
	if k.Alone != "" && spec == k.Alone {
		return "", true
	}
	if k.Prefix == "" {
		return "", false
	}
	return strings.CutPrefix(spec, k.Prefix)
}

// Spec is a policy spec parsed: its kind and what it holds, read once by
// ParseSpec; Resolver.Resolve builds its policy. Fields that do not
// belong to its kind are zero.
type Spec struct {
	Text string // the spec as given
	Base string // the spec without its Rules, which names its policy (Text when it has none)
	Kind *Kind
	Arg  string // what follows the kind's prefix, as written
	// Preset is a static: spec's preset name, Setting a fixed: spec's
	// setting at 100 Gb/s.
	Preset  string
	Setting env.Setting
	// Preference is a builtin: or model: spec's prefer=P, when Prefer.
	Preference float64
	Prefer     bool
	// HighRate is builtin:400g: the embedded model for ports of 400 Gb/s
	// and faster instead of the base one.
	HighRate bool
	Model    string         // a model: spec's reference
	Zone     *time.Location // a daily: spec's zone
	Entries  []Entry        // a schedule: or daily: spec's entries
	// Parts are the specs a roles: spec holds (host, fabric, other: those
	// given), a rate: spec's (the part below the lowest rate first, then by
	// rate), or a registered kind's (truth: small, else).
	Parts []Part
	Rules []Rule // +headroom= and +alpha=, innermost first
}

// Entry is one entry of a schedule: or daily: spec: when it starts, What
// as written, and What parsed: a policy spec, or for a setting or a
// preset name a spec of kind fixed or static whose Text is What.
type Entry struct {
	ScheduleEntry
	Spec Spec
}

// Part is a spec nested in another under a label: a roles: spec's host,
// fabric and other, a rate: spec's ("below 400G", "400G"), or a
// registered kind's.
type Part struct {
	Label string
	Spec  Spec
	// FromBps is, for a rate: spec's part, the rate from which its ports
	// get it (0: the part below the lowest rate).
	FromBps float64
}

// Rule is a +headroom= or +alpha= rule: it sets the headroom or alpha of
// every decision of the spec before it.
type Rule struct {
	Text   string  // the spec up to the rule's end, which names the policy it makes
	Name   string  // HeadroomRule or AlphaRule
	Arg    string  // the value as written: "floor*1.5", "model:hdrm", "1/8"
	Factor float64 // +headroom=floor*F: F (1 for floor; 0 for default, which leaves the headroom)
	Model  string  // +headroom=model:REF: REF
	Alpha  float64 // +alpha=A: A
}

// String is the spec as given.
func (sp Spec) String() string { return sp.Text }

// ParseSpec parses spec with the zero Resolver: every built-in kind.
func ParseSpec(spec string) (Spec, error) { return Resolver{}.ParseSpec(spec) }

// ParseSpec parses spec: r's Kinds first (matched on spec as given), then
// the built-in kinds. It loads no model: a model: reference is looked up
// by Resolve.
func (r Resolver) ParseSpec(spec string) (Spec, error) {
	return (&Parser{kinds: r.Kinds}).parse(spec)
}

// CheckSpec checks spec as far as it can without a model registry, as the
// agent does when it loads its configuration: it parses spec and loads
// the embedded model wherever builtin names it; a model: reference is left
// for the start. Its errors word a few things as the agent always has
// ("entry 2 (at 1h): ..." for a schedule's entry, `"model:" names no
// model`, `"magic" is not allowed`).
func CheckSpec(spec string) error {
	_, err := (&Parser{agent: true}).parse(spec)
	return err
}

// Parser parses specs and, for a registered kind, the specs nested in
// it (Parse).
type Parser struct {
	kinds []*Kind // registered kinds, tried before the built-in ones at the top
	agent bool    // CheckSpec's matching, wording and checks
}

// Parse parses a spec nested in the one being parsed, with the built-in
// kinds only, as the spec around it is parsed.
func (p *Parser) Parse(spec string) (Spec, error) {
	return (&Parser{agent: p.agent}).builtin(spec)
}

// parse parses a spec at the top: a registered kind, or a built-in one.
func (p *Parser) parse(spec string) (Spec, error) {
	for _, k := range p.kinds {
		if arg, ok := k.match(spec); ok {
			return parseKind(p, k, spec, arg)
		}
	}
	return p.builtin(spec)
}

// builtin parses a spec of the built-in kinds: roles: or rate: (whose
// parts carry their own rules), or a spec with its +alpha= and
// +headroom= rules (in either order).
func (p *Parser) builtin(spec string) (Spec, error) {
	s := strings.TrimSpace(spec)
	if p.agent {
		s = spec // the agent's check never trimmed: " builtin" is not allowed there
	}
	if arg, ok := strings.CutPrefix(s, RolesPrefix); ok {
		return parseKind(p, KindRoles, spec, arg)
	}
	if arg, ok := strings.CutPrefix(s, RatePrefix); ok {
		return parseKind(p, KindRate, spec, arg)
	}
	if err := checkRules(spec, s); err != nil {
		return Spec{}, err
	}
	if base, arg, ok := SplitAlpha(s); ok {
		return p.withRule(spec, base, AlphaRule, arg)
	}
	if base, arg, ok := strings.Cut(s, HeadroomRule); ok {
		return p.withRule(spec, base, HeadroomRule, arg)
	}
	k, arg := p.kindOf(s)
	if k == nil {
		if p.agent {
			return Spec{}, fmt.Errorf("%q is not allowed%s (want builtin[:prefer=P|:400g], adaptive, static:NAME, fixed:KMIN/KMAX/PMAX, schedule:WHAT,OFFSET=WHAT,... or daily:[tz=ZONE,]HH:MM=WHAT,... (WHAT a setting or one of these policies) or model:NAME[:prefer=P], any of them with +headroom=floor[*F] or +headroom=model:NAME and +alpha=A, or roles:host=SPEC;fabric=SPEC[;other=SPEC] or rate:SPEC;RATE=SPEC[;...] of them)", s, p.didYouMean(s))
		}
		return Spec{}, fmt.Errorf("unknown policy %q%s (want one of: %s)", spec, p.didYouMean(s), strings.Join(Specs(), "; "))
	}
	return parseKind(p, k, spec, arg)
}

// didYouMean is ": did you mean X?" for the spec a misspelt s most likely
// means (a kind's name a few letters off, its argument kept, or a preset's
// name as static:NAME), or "" when none is near.
func (p *Parser) didYouMean(s string) string {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	var names []string
	for _, k := range append(builtinKinds[:len(builtinKinds):len(builtinKinds)], p.kinds...) {
		if k.Alone != "" && !hasArg {
			names = append(names, k.Alone)
		}
		if k.Prefix != "" {
			names = append(names, strings.TrimSuffix(k.Prefix, ":"))
		}
	}
	best := closestName(name, names)
	if best != "" && hasArg {
		best += ":" + arg
	}
	if best == "" && !hasArg {
		if pr := closestName(name, PresetNames()); pr != "" {
			best = StaticPrefix + pr
		}
	}
	if best == "" || best == s {
		return ""
	}
	return ": did you mean " + best + "?"
}

// closestName is the name within a few edits of s (about a third of its
// letters, at least two), the nearest first; "" when none is.
func closestName(s string, names []string) string {
	best, bestD := "", max(2, len(s)/3)+1
	for _, n := range names {
		if d := units.EditDistance(strings.ToLower(s), n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// parseKind parses spec, of kind k with argument arg.
func parseKind(p *Parser, k *Kind, spec, arg string) (Spec, error) {
	sp := Spec{Text: spec, Base: spec, Kind: k, Arg: arg}
	if k.Parse != nil {
		if err := k.Parse(p, &sp, arg); err != nil {
			return Spec{}, err
		}
	}
	return sp, nil
}

// kindOf is the built-in kind (not roles) that s, without rules, names,
// and its argument: by the name before the first colon, or as the agent's
// check always matched, by a prefix with its colon, or builtin or
// adaptive alone (model: with a name after it).
func (p *Parser) kindOf(s string) (*Kind, string) {
	if !p.agent {
		name, arg, _ := strings.Cut(s, ":")
		for _, k := range builtinKinds {
			if k.Name == name && k != KindRoles && k != KindRate {
				return k, arg
			}
		}
		return nil, ""
	}
	for _, k := range builtinKinds {
		if k.Alone != "" && s == k.Alone {
			return k, ""
		}
		arg, ok := strings.CutPrefix(s, k.Prefix)
		if ok && k != KindRoles && k != KindRate && k != KindAdaptive && (k != KindModel || arg != "") {
			return k, strings.TrimRightFunc(arg, unicode.IsSpace)
		}
	}
	return nil, ""
}

// checkRules refuses a rule given twice, and one inside a schedule (not
// after its last entry).
func checkRules(spec, s string) error {
	for _, rule := range []string{AlphaRule, HeadroomRule} {
		name := strings.TrimSuffix(rule, "=")
		if strings.Count(s, rule) > 1 {
			return fmt.Errorf("policy %q: %s twice: give each rule once", spec, name)
		}
		// in a schedule a rule applies to every entry: it goes after the last
		if _, after, ok := strings.Cut(s, rule); ok && strings.Contains(after, ",") &&
			(strings.HasPrefix(s, SchedulePrefix) || strings.HasPrefix(s, DailyPrefix)) {
			return fmt.Errorf("policy %q: %s inside a schedule: give it after the last entry, where it applies to every entry", spec, name)
		}
	}
	return nil
}

// withRule parses spec, base followed by rule (AlphaRule or HeadroomRule)
// with value arg.
func (p *Parser) withRule(spec, base, rule, arg string) (Spec, error) {
	sp, err := p.builtin(base)
	if err != nil {
		return Spec{}, err
	}
	r := Rule{Text: spec, Name: rule, Arg: arg}
	switch ref, isModel := strings.CutPrefix(arg, ModelPrefix); {
	case rule == AlphaRule:
		r.Alpha, err = ParseAlpha(arg)
	case isModel && ref == "" && p.agent:
		err = errors.New("headroom=model:NAME names no model")
	case isModel && ref == "":
		err = errors.New("headroom=model:NAME: no model name")
	case isModel:
		r.Model = ref
	default:
		r.Factor, err = parseHeadroom(arg)
	}
	if err != nil {
		return Spec{}, fmt.Errorf("policy %q: %w", spec, err)
	}
	sp.Text, sp.Rules = spec, append(sp.Rules, r)
	return sp, nil
}

// specErr frames err (nil: nil) with the spec it is about.
func specErr(sp *Spec, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("policy %q: %w", sp.Base, err)
}

// Warnings lists what looks wrong in the spec without being invalid: a
// fixed: setting, or a schedule: or daily: entry's, with Kmin or Kmax
// below one MTU (env.Setting.Warnings; usually a size in KB written in
// bytes), in the spec's parts too, each led by the part's label.
func (sp Spec) Warnings() []string {
	var out []string
	if sp.Kind == KindFixed {
		out = append(out, sp.Setting.Warnings()...)
	}
	for i, e := range sp.Entries {
		for _, w := range e.Spec.Warnings() {
			out = append(out, fmt.Sprintf("entry %d (at %s): %s", i+1, e.At, w))
		}
	}
	for _, pt := range sp.Parts {
		for _, w := range pt.Spec.Warnings() {
			out = append(out, pt.Label+": "+w)
		}
	}
	return out
}

// Models lists the registry models the spec names (model:REF and
// +headroom=model:REF, in its entries and parts too), each once, in the
// order they are written.
func (sp Spec) Models() []string {
	var out []string
	add := func(ref string) {
		if ref != "" && !slices.Contains(out, ref) {
			out = append(out, ref)
		}
	}
	var walk func(n Spec)
	walk = func(n Spec) {
		add(n.Model)
		for _, e := range n.Entries {
			walk(e.Spec)
		}
		for _, pt := range n.Parts {
			walk(pt.Spec)
		}
		for _, r := range n.Rules {
			add(r.Model)
		}
	}
	walk(sp)
	return out
}

// KindOf is the kind spec is of: one of r's Kinds (matched on spec as
// given), else the built-in kind it names (roles:, or before its rules);
// nil when none. It does not parse the spec.
func (r Resolver) KindOf(spec string) *Kind {
	for _, k := range r.Kinds {
		if _, ok := k.match(spec); ok {
			return k
		}
	}
	s := strings.TrimSpace(spec)
	if strings.HasPrefix(s, RolesPrefix) {
		return KindRoles
	}
	if strings.HasPrefix(s, RatePrefix) {
		return KindRate
	}
	for _, rule := range []string{AlphaRule, HeadroomRule} {
		s, _, _ = strings.Cut(s, rule)
	}
	k, _ := (&Parser{}).kindOf(s)
	return k
}
