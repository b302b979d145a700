package nn

import (
	"fmt"
	"math"
)

// SoftmaxMargin is a decision confidence in [0, 1]: the probability of
// the best entry minus that of the runner-up under softmax(v /
// temperature). Two equal best entries give 0, a clear winner tends to 1.
// A single entry gives 1; an empty or all-NaN slice gives 0. NaN entries
// are ignored; a temperature <= 0 (or NaN) means 1.
func SoftmaxMargin(v []float32, temperature float64) float64 {
	if !(temperature > 0) || math.IsInf(temperature, 0) {
		temperature = 1
	}
	best, second := math.Inf(-1), math.Inf(-1)
	n := 0
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) {
			continue
		}
		n++
		if f > best {
			best, second = f, best
		} else if f > second {
			second = f
		}
	}
	switch {
	case n == 0:
		return 0
	case n == 1:
		return 1
	case math.IsInf(best, 1):
		if math.IsInf(second, 1) {
			return 0
		}
		return 1
	}
	// p_i = exp((v_i - best)/T) / Z; margin = (1 - exp((second-best)/T)) / Z.
	var z float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) {
			continue
		}
		z += math.Exp((f - best) / temperature)
	}
	m := (1 - math.Exp((second-best)/temperature)) / z
	return math.Min(1, math.Max(0, m))
}

// Confidence gives a decision confidence in [0, 1] from a network's
// output row according to its kind: for Q-values, the softmax margin at
// the given temperature (in reward units: a Q gap of one temperature
// between the two best actions already gives a clear margin); for logits,
// the margin between the two most probable actions (temperature ignored);
// otherwise 0.
func Confidence(kind OutputKind, out []float32, temperature float64) float64 {
	switch kind {
	case OutputQ:
		return SoftmaxMargin(out, temperature)
	case OutputLogits:
		return SoftmaxMargin(out, 1)
	}
	return 0
}

// Decide is batched greedy inference for deployment: the best action per
// observation and its Confidence. It returns an error for observations of
// the wrong length.
func (n *Net) Decide(obs [][]float32, temperature float64) (actions []int, conf []float64, err error) {
	k := n.arch.Out
	out := make([]float32, len(obs)*k)
	if err := n.ForwardInto(out, obs); err != nil {
		return nil, nil, err
	}
	actions = make([]int, len(obs))
	conf = make([]float64, len(obs))
	for i := range obs {
		row := out[i*k : (i+1)*k]
		actions[i] = Argmax(row)
		conf[i] = Confidence(n.Kind, row, temperature)
	}
	return actions, conf, nil
}

// GreedyJoint returns, per observation, the joint action of a factorised
// network (see PPOConfig.Heads): the best output of each head, as
// Σ choice_h · Π_{g<h} heads[g]. nil heads means one head over every
// output.
func (n *Net) GreedyJoint(obs [][]float32, heads []int) ([]int, error) {
	k := n.arch.Out
	if len(heads) == 0 {
		heads = []int{k}
	}
	sum := 0
	for _, h := range heads {
		if h < 1 {
			return nil, fmt.Errorf("nn: head size %d: must be >= 1", h)
		}
		sum += h
	}
	if sum != k {
		return nil, fmt.Errorf("nn: heads %v sum to %d, the network has %d outputs", heads, sum, k)
	}
	out := make([]float32, len(obs)*k)
	if err := n.ForwardInto(out, obs); err != nil {
		return nil, err
	}
	acts := make([]int, len(obs))
	for i := range obs {
		joint, stride, off := 0, 1, 0
		for _, h := range heads {
			joint += Argmax(out[i*k+off:i*k+off+h]) * stride
			stride *= h
			off += h
		}
		acts[i] = joint
	}
	return acts, nil
}

// Argmax returns the index of the largest value (the first on ties); -1
// for an empty slice. NaN never wins.
func Argmax(v []float32) int {
	best := -1
	for i, x := range v {
		if x != x {
			continue
		}
		if best < 0 || x > v[best] {
			best = i
		}
	}
	if best < 0 && len(v) > 0 {
		return 0
	}
	return best
}

// finite32 reports whether v is neither NaN nor infinite.
func finite32(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
