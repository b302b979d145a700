package policy

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy/builtin"
	"github.com/ecntune/ecntune/policy/rl"
)

// DefaultQTemperature is the softmax temperature, in reward units, that
// turns the Q-value gap between a learned policy's two best actions into a
// confidence: a gap of one temperature already reads as a clear choice.
// Per-interval rewards are of order 1 (a full link scores 1), so a gap of
// 0.05 is worth one twentieth of a full link.
const DefaultQTemperature = 0.05

// Learned is a Policy over a trained network (rl.Net): one forward pass
// for the whole batch of queues, the best catalogue action per queue, its
// confidence, and a one-line reason. It is safe for concurrent use.
type Learned struct {
	name        string
	net         *rl.Net
	cat         env.Catalogue
	temperature float64
}

// NewLearned wraps net as a policy named name. The network must read
// env.NumFeatures features and give one output per action of cat (the
// zero Catalogue means env.DefaultCatalogue()), and its outputs must be
// Q-values or logits. temperature <= 0 means DefaultQTemperature.
func NewLearned(name string, net *rl.Net, cat env.Catalogue, temperature float64) (*Learned, error) {
	if net == nil {
		return nil, fmt.Errorf("learned policy %q: no network", name)
	}
	if cat.IsZero() {
		cat = env.DefaultCatalogue()
	}
	if net.InDim() != env.NumFeatures {
		return nil, fmt.Errorf("learned policy %q: network reads %d features, observation spec %s has %d",
			name, net.InDim(), env.SpecVersion, env.NumFeatures)
	}
	if net.OutDim() != cat.Len() {
		return nil, fmt.Errorf("learned policy %q: network has %d outputs, action catalogue %s has %d actions",
			name, net.OutDim(), env.ActionSpecVersion, cat.Len())
	}
	if net.Kind != rl.OutputQ && net.Kind != rl.OutputLogits {
		return nil, fmt.Errorf("learned policy %q: network outputs %s, want q-values or logits", name, net.Kind)
	}
	if !(temperature > 0) || math.IsInf(temperature, 0) {
		temperature = DefaultQTemperature
	}
	return &Learned{name: name, net: net, cat: cat, temperature: temperature}, nil
}

// LearnedFromModel builds the policy of a registry model: it checks that
// the model speaks the observation and action specs of this build and
// decodes its weights (an rl policy blob).
func LearnedFromModel(name string, m models.Model) (*Learned, error) {
	if err := models.CheckSpec(m, env.SpecVersion, env.ActionSpecVersion); err != nil {
		return nil, err
	}
	net, err := rl.UnmarshalNet(m.Weights)
	if err != nil {
		return nil, fmt.Errorf("model %s: weights: %w", m.Ref(), err)
	}
	return NewLearned(name, net, env.Catalogue{}, 0)
}

// Name is the spec the policy was resolved from ("builtin", "model:NAME").
func (l *Learned) Name() string { return l.name }

// Net is the network (shared, not a copy: do not write its weights).
func (l *Learned) Net() *rl.Net { return l.net }

// Catalogue is the action catalogue the network's outputs index.
func (l *Learned) Catalogue() env.Catalogue { return l.cat }

// usable reports whether the policy can act on o, and why not.
func usable(o *env.Observation) string {
	switch {
	case !o.Valid:
		if o.Problem != "" {
			return o.Problem
		}
		return "interval not measured"
	case !(o.RateBps > 0) || math.IsInf(o.RateBps, 0):
		return "link rate " + strconv.FormatFloat(o.RateBps, 'g', -1, 64) + " is unknown"
	case len(o.Features) != env.NumFeatures:
		return fmt.Sprintf("observation has %d features, spec %s has %d", len(o.Features), env.SpecVersion, env.NumFeatures)
	}
	return ""
}

// Decide runs the network once over every usable observation and returns,
// per queue, the setting of the best action, its confidence in [0, 1] and
// a reason such as "kmax 1.6MB→800KB: q-margin 0.31, util 0.93, queue 2.1
// BDP, mark 0.04, pause 0". A queue whose interval was not measured (or
// whose rate is unknown) holds its setting with confidence 0.
func (l *Learned) Decide(obs []env.Observation) []Decision {
	out := make([]Decision, len(obs))
	rows := make([][]float32, 0, len(obs))
	idx := make([]int, 0, len(obs))
	for i := range obs {
		o := &obs[i]
		out[i] = Decision{Key: o.Key, Setting: o.Current, Action: env.ActionHold}
		if why := usable(o); why != "" {
			out[i].Reason = "hold: " + why
			continue
		}
		rows = append(rows, o.Features)
		idx = append(idx, i)
	}
	if len(rows) == 0 {
		return out
	}
	k := l.net.OutDim()
	vals := make([]float32, len(rows)*k)
	if err := l.net.ForwardInto(vals, rows); err != nil {
		for _, i := range idx { // cannot happen: lengths were checked
			out[i].Reason = "hold: " + err.Error()
		}
		return out
	}
	for r, i := range idx {
		o := &obs[i]
		row := vals[r*k : (r+1)*k]
		a := rl.Argmax(row)
		d := &out[i]
		d.Action = a
		d.Setting = l.cat.Setting(a, o.RateBps, o.Current)
		d.Confidence = rl.Confidence(l.net.Kind, row, l.temperature)
		d.Reason = l.reason(o, d.Setting, row, a)
	}
	return out
}

func (l *Learned) reason(o *env.Observation, s env.Setting, row []float32, a int) string {
	var b strings.Builder
	change := func(name, from, to string) {
		if from == to {
			return
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(name + " " + from + "→" + to)
	}
	c := o.Current
	change("kmin", units.FormatBytes(c.KminBytes), units.FormatBytes(s.KminBytes))
	change("kmax", units.FormatBytes(c.KmaxBytes), units.FormatBytes(s.KmaxBytes))
	change("pmax", env.FormatPmax(c.Pmax), env.FormatPmax(s.Pmax))
	if b.Len() == 0 {
		b.WriteString("hold kmin " + units.FormatBytes(s.KminBytes) + " kmax " + units.FormatBytes(s.KmaxBytes) +
			" pmax " + env.FormatPmax(s.Pmax))
	}
	margin, label := qMargin(row, a), "q-margin"
	if l.net.Kind == rl.OutputLogits {
		margin, label = rl.SoftmaxMargin(row, 1), "p-margin"
	}
	m := o.Metrics
	fmt.Fprintf(&b, ": %s %.2f, util %.2f, queue %.2g BDP, mark %.2g, pause %.2g", label, margin, m.Util,
		m.AvgQueueFrac, m.MarkFrac, math.Max(m.PauseRxFrac, m.PauseTxFrac))
	if m.DropFrac > 0 {
		fmt.Fprintf(&b, ", drop %.2g", m.DropFrac)
	}
	return b.String()
}

// qMargin is the gap between the chosen Q-value and the best other one.
func qMargin(row []float32, a int) float64 {
	second := math.Inf(-1)
	for j, v := range row {
		if j != a && float64(v) > second {
			second = float64(v)
		}
	}
	if math.IsInf(second, -1) {
		return 0
	}
	return float64(row[a]) - second
}

// registryPath is where "model:NAME" looks models up.
var (
	registryMu   sync.RWMutex
	registryPath string
)

// DefaultRegistry is the registry file "model:NAME" uses when neither
// SetModelRegistry nor $ECNTUNE_DB says otherwise.
const DefaultRegistry = "ecntune.db"

// SetModelRegistry sets the registry file that "model:NAME" specs read
// (the CLI's --db flag or the agent's registry setting). "" restores the
// default: $ECNTUNE_DB, else DefaultRegistry.
func SetModelRegistry(path string) {
	registryMu.Lock()
	registryPath = path
	registryMu.Unlock()
}

// ModelRegistry is the registry file "model:NAME" reads now.
func ModelRegistry() string {
	registryMu.RLock()
	p := registryPath
	registryMu.RUnlock()
	if p != "" {
		return p
	}
	if e := os.Getenv("ECNTUNE_DB"); e != "" {
		return e
	}
	return DefaultRegistry
}

// resolveModel loads "model:REF" from the registry (read-only; REF is a
// name, name@version or id as models.Registry.Resolve takes them).
func resolveModel(ref string) (Policy, error) {
	if ref == "" {
		return nil, errors.New("want model:NAME (a model name, NAME@VERSION or an id in the registry)")
	}
	path := ModelRegistry()
	reg, err := models.Open(path, models.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", path, err)
	}
	defer reg.Close()
	m, err := reg.Resolve(ref)
	if err != nil {
		return nil, err
	}
	return LearnedFromModel("model:"+ref, m)
}

// resolveBuiltin is the pretrained model embedded in the binary.
func resolveBuiltin(arg string) (Policy, error) {
	if arg != "" {
		return nil, fmt.Errorf("builtin takes no argument, got %q", arg)
	}
	m, err := builtin.Model()
	if err != nil {
		return nil, err
	}
	return LearnedFromModel("builtin", m)
}

func init() {
	if err := Register("model", resolveModel); err != nil {
		panic(err) // two registrations in one binary: a programming error
	}
	if err := Register("builtin", resolveBuiltin); err != nil {
		panic(err)
	}
}
