package rl

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestReplayRingAndSampling(t *testing.T) {
	r, err := NewReplay(3, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		v := float32(i)
		if err := r.Add(Transition{Obs: []float32{v, v}, Next: []float32{v + 1, v + 1}, Action: i, Reward: v * 10, Done: i == 4}); err != nil {
			t.Fatal(err)
		}
	}
	if r.Len() != 3 || r.Added() != 5 {
		t.Fatalf("len %d added %d, want 3 and 5", r.Len(), r.Added())
	}
	for i, want := range []int{2, 3, 4} {
		tr, err := r.At(i)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Action != want || tr.Reward != float32(want*10) || tr.Obs[1] != float32(want) || tr.Next[0] != float32(want+1) || tr.Done != (want == 4) {
			t.Fatalf("At(%d) = %+v, want transition %d", i, tr, want)
		}
	}
	if _, err := r.At(3); err == nil {
		t.Fatal("At(3) on 3 entries: no error")
	}
	var b Batch
	counts := map[int]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1000; i++ {
		if err := r.Sample(30, rng, &b); err != nil {
			t.Fatal(err)
		}
		for j, a := range b.Action {
			if b.Obs[j*2] != float32(a) || b.Reward[j] != float32(a*10) {
				t.Fatalf("sampled row %d mixes transitions: action %d obs %v reward %v", j, a, b.Obs[j*2], b.Reward[j])
			}
			counts[a]++
		}
	}
	for a := 2; a <= 4; a++ {
		if f := float64(counts[a]) / 30000; math.Abs(f-1.0/3) > 0.015 {
			t.Fatalf("action %d sampled with frequency %.4f, want 1/3 ± 0.015", a, f)
		}
	}
	if len(counts) != 3 {
		t.Fatalf("sampled overwritten transitions: %v", counts)
	}
	bad := []Transition{
		{Obs: []float32{1}, Next: []float32{1, 1}},
		{Obs: []float32{1, 1}, Next: []float32{1, 1}, Action: -1},
		{Obs: []float32{1, 1}, Next: []float32{1, float32(math.NaN())}},
		{Obs: []float32{1, 1}, Next: []float32{1, 1}, Reward: float32(math.Inf(1))},
	}
	for i, tr := range bad {
		if err := r.Add(tr); err == nil {
			t.Fatalf("bad transition %d accepted", i)
		}
	}
	empty, _ := NewReplay(4, 2)
	if err := empty.Sample(1, rng, &b); err == nil {
		t.Fatal("sampling an empty buffer: no error")
	}
	if _, err := NewReplay(0, 2); err == nil {
		t.Fatal("capacity 0 accepted")
	}
}

func TestRolloutGAE(t *testing.T) {
	r, err := NewRollout(2, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	o := [][]float32{{0}, {0}}
	steps := []struct {
		rew, val []float32
		done     []bool
	}{
		{[]float32{1, 0}, []float32{0.5, 0}, []bool{false, false}},
		{[]float32{0, 0}, []float32{0.4, 0}, []bool{true, false}},
		{[]float32{2, 0}, []float32{0.3, 0}, []bool{false, false}},
	}
	for _, s := range steps {
		if err := r.Add(o, []int{0, 1}, []float32{-0.1, -0.2}, s.val, s.rew, s.done); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Add(o, []int{0, 1}, []float32{-0.1, -0.2}, []float32{0, 0}, []float32{0, 0}, []bool{false, false}); err == nil {
		t.Fatal("adding to a full rollout: no error")
	}
	if err := r.Finish([]float32{0.6, 1}, 0.9, 0.8); err != nil {
		t.Fatal(err)
	}
	// Agent 0 by hand: t2 δ = 2 + 0.9·0.6 − 0.3 = 2.24; t1 ends the
	// episode: δ = −0.4; t0 δ = 1 + 0.9·0.4 − 0.5 = 0.86, A = 0.86 +
	// 0.72·(−0.4) = 0.572. Agent 1: rewards 0, values 0, last value 1:
	// A2 = 0.9, A1 = 0.72·0.9 = 0.648, A0 = 0.72·0.648 = 0.46656.
	wantAdv := []float32{0.572, 0.46656, -0.4, 0.648, 2.24, 0.9}
	wantRet := []float32{1.072, 0.46656, 0, 0.648, 2.54, 0.9}
	for i := range wantAdv {
		if math.Abs(float64(r.Advantages()[i]-wantAdv[i])) > 1e-6 || math.Abs(float64(r.Returns()[i]-wantRet[i])) > 1e-6 {
			t.Fatalf("row %d: advantage %v return %v, want %v and %v", i, r.Advantages()[i], r.Returns()[i], wantAdv[i], wantRet[i])
		}
	}
	if err := r.Add(o[:1], []int{0}, []float32{0}, []float32{0}, []float32{0}, []bool{false}); err == nil {
		t.Fatal("one agent's step in a two-agent rollout: no error")
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	arch := Arch{In: 4, Hidden: []int{8}, Out: 3, Act: ReLU}
	ddqn := []struct {
		mod   func(*DDQNConfig)
		field string
	}{
		{func(c *DDQNConfig) { c.Gamma = 1 }, "gamma"},
		{func(c *DDQNConfig) { c.LearningRate = -1 }, "learning_rate"},
		{func(c *DDQNConfig) { c.BatchSize = -5 }, "batch_size"},
		{func(c *DDQNConfig) { c.ReplayCapacity = 10; c.BatchSize = 64 }, "replay_capacity"},
		{func(c *DDQNConfig) { c.Tau = 2 }, "tau"},
		{func(c *DDQNConfig) { c.Arch.Hidden = []int{0} }, "arch.hidden[0]"},
		{func(c *DDQNConfig) { c.Arch.Act = 9 }, "arch.act"},
		{func(c *DDQNConfig) { c.EpsStart = 1.5 }, "eps_start"},
	}
	for _, c := range ddqn {
		cfg := DDQNConfig{Arch: arch, Gamma: 0.9}
		cfg.Arch.Hidden = []int{8}
		c.mod(&cfg)
		if _, err := NewDDQN(cfg); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Fatalf("DDQN with bad %s: err = %v", c.field, err)
		}
	}
	ppo := []struct {
		mod   func(*PPOConfig)
		field string
	}{
		{func(c *PPOConfig) { c.ClipRange = 1.5 }, "clip_range"},
		{func(c *PPOConfig) { c.Lambda = -0.1 }, "lambda"},
		{func(c *PPOConfig) { c.Arch.Out = 1 }, "arch.out"},
		{func(c *PPOConfig) { c.CriticHidden = []int{-1} }, "critic"},
		{func(c *PPOConfig) { c.Epochs = -1 }, "epochs"},
	}
	for _, c := range ppo {
		cfg := PPOConfig{Arch: arch}
		cfg.Arch.Hidden = []int{8}
		c.mod(&cfg)
		if _, err := NewPPO(cfg); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Fatalf("PPO with bad %s: err = %v", c.field, err)
		}
	}
	// Update refuses an unfinished or too small rollout.
	p, err := NewPPO(PPOConfig{Arch: arch, MinibatchSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := p.NewRollout(2, 2)
	o := [][]float32{{1, 2, 3, 4}, {1, 2, 3, 4}}
	r.Add(o, []int{0, 1}, []float32{-1, -1}, []float32{0, 0}, []float32{1, 1}, []bool{false, false})
	if _, err := p.Update(r); err == nil || !strings.Contains(err.Error(), "Finish") {
		t.Fatalf("unfinished rollout: err = %v", err)
	}
	r.Finish([]float32{0, 0}, 0.9, 0.9)
	if _, err := p.Update(r); err == nil || !strings.Contains(err.Error(), "minibatch_size") {
		t.Fatalf("2-row rollout with minibatch 8: err = %v", err)
	}
	if _, err := ParseActivation("gelu"); err == nil {
		t.Fatal("gelu accepted")
	}
}

func TestBadObservationsGiveErrors(t *testing.T) {
	d, err := NewDDQN(DDQNConfig{Arch: Arch{In: 4, Hidden: []int{8}, Out: 3, Act: ReLU}, Gamma: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPPO(PPOConfig{Arch: Arch{In: 4, Hidden: []int{8}, Out: 3, Act: ReLU}})
	if err != nil {
		t.Fatal(err)
	}
	bad := [][]float32{{1, 2, 3, 4}, {1, 2, 3}}
	rng := rand.New(rand.NewPCG(1, 1))
	if _, err := d.Act(bad, 0.5, rng); err == nil || !strings.Contains(err.Error(), "observation 1 has 3 features") {
		t.Fatalf("DDQN.Act: err = %v", err)
	}
	if _, err := d.QValues(bad); err == nil {
		t.Fatal("DDQN.QValues accepted a short observation")
	}
	if _, _, _, err := p.Act(bad, rng); err == nil {
		t.Fatal("PPO.Act accepted a short observation")
	}
	if _, err := p.Greedy(bad); err == nil {
		t.Fatal("PPO.Greedy accepted a short observation")
	}
	if _, err := p.Values(bad); err == nil {
		t.Fatal("PPO.Values accepted a short observation")
	}
	if _, err := p.Probs(bad); err == nil {
		t.Fatal("PPO.Probs accepted a short observation")
	}
	if err := d.Store(Transition{Obs: []float32{1, 2, 3, 4}, Next: []float32{1, 2, 3, 4}, Action: 3}); err == nil {
		t.Fatal("DDQN.Store accepted action 3 of 3")
	}
	if _, err := d.Train(); err == nil {
		t.Fatal("DDQN.Train on an empty replay: no error")
	}
	var zero Net
	if _, err := zero.Forward([][]float32{{1}}); err == nil {
		t.Fatal("zero Net: no error")
	}
	// Probabilities of a valid batch sum to one.
	probs, err := p.Probs([][]float32{{1, 2, 3, 4}, {0, 0, 0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range probs {
		var s float64
		for _, v := range row {
			s += float64(v)
		}
		if math.Abs(s-1) > 1e-6 {
			t.Fatalf("row %d: probabilities sum to %v", i, s)
		}
	}
}

func TestDDQNTargetUpdatesAndEpsilon(t *testing.T) {
	arch := Arch{In: 3, Hidden: []int{6}, Out: 2, Act: ReLU}
	fill := func(d *DDQN) {
		rng := rand.New(rand.NewPCG(1, 1))
		for i := 0; i < 64; i++ {
			o := []float32{float32(rng.Float64()), float32(rng.Float64()), 1}
			if err := d.Store(Transition{Obs: o, Next: o, Action: i % 2, Reward: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	hard, err := NewDDQN(DDQNConfig{Arch: arch, Gamma: 0.9, BatchSize: 16, TargetSync: 3, LearningRate: 0.01,
		EpsStart: 1, EpsEnd: 0.1, EpsDecaySteps: 128})
	if err != nil {
		t.Fatal(err)
	}
	fill(hard)
	if e := hard.Epsilon(); math.Abs(e-0.55) > 1e-12 {
		t.Fatalf("epsilon after 64 of 128 decay steps = %v, want 0.55", e)
	}
	fill(hard)
	fill(hard)
	if e := hard.Epsilon(); e != 0.1 {
		t.Fatalf("epsilon after the decay = %v, want 0.1", e)
	}
	start := hard.Target().Clone()
	for i := 1; i <= 3; i++ {
		if _, err := hard.Train(); err != nil {
			t.Fatal(err)
		}
		synced := hard.Target().Equal(hard.Policy())
		if i < 3 && (!hard.Target().Equal(start) || synced) {
			t.Fatalf("after %d of 3 steps the target moved or already equals the online net", i)
		}
		if i == 3 && !synced {
			t.Fatal("after 3 steps the target was not synced")
		}
	}

	const tau = 0.25
	soft, err := NewDDQN(DDQNConfig{Arch: arch, Gamma: 0.9, BatchSize: 16, Tau: tau, LearningRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	fill(soft)
	before := soft.Target().Clone()
	if _, err := soft.Train(); err != nil {
		t.Fatal(err)
	}
	for l := range before.Layers {
		for i, w := range before.Layers[l].W {
			want := w + tau*(soft.Policy().Layers[l].W[i]-w)
			if math.Abs(float64(soft.Target().Layers[l].W[i]-want)) > 1e-7 {
				t.Fatalf("Polyak target weight %d/%d = %v, want %v", l, i, soft.Target().Layers[l].W[i], want)
			}
		}
	}
	if soft.Target().Equal(before) || soft.Target().Equal(soft.Policy()) {
		t.Fatal("Polyak update left the target unchanged or copied the online net")
	}
}

func TestPPOTargetKLStopsEarly(t *testing.T) {
	p, err := NewPPO(PPOConfig{Arch: Arch{In: 3, Hidden: []int{8}, Out: 3, Act: ReLU}, LearningRate: 0.05,
		Epochs: 5, MinibatchSize: 8, TargetKL: 1e-9, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	buf, _ := p.NewRollout(4, 6)
	rng := rand.New(rand.NewPCG(3, 3))
	for s := 0; s < 6; s++ {
		obs := randObs(rng, 4, 3)
		acts, logp, vals, err := p.Act(obs, rng)
		if err != nil {
			t.Fatal(err)
		}
		if err := buf.Add(obs, acts, logp, vals, []float32{1, -1, 0.5, 2}, []bool{false, false, true, false}); err != nil {
			t.Fatal(err)
		}
	}
	if err := buf.Finish([]float32{0, 0, 0, 0}, 0.9, 0.9); err != nil {
		t.Fatal(err)
	}
	st, err := p.Update(buf)
	if err != nil {
		t.Fatal(err)
	}
	if !st.StoppedEarly || st.Epochs != 1 || st.Steps != 3 || !(st.ApproxKL > 0) {
		t.Fatalf("stats %+v: want a stop after epoch 1 of 3 minibatches with positive KL", st)
	}
}

func TestConfigFromYAMLAndJSON(t *testing.T) {
	src := "arch: {in: 4, hidden: [16, 8], out: 3, act: tanh}\ngamma: 0.95\nlearning_rate: 0.0005\nbatch_size: 32\ntarget_sync: 200\nseed: 9\n"
	var c DDQNConfig
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		t.Fatal(err)
	}
	if c.Arch.Act != Tanh || c.Arch.In != 4 || len(c.Arch.Hidden) != 2 || c.Gamma != 0.95 || c.LearningRate != 0.0005 || c.BatchSize != 32 || c.TargetSync != 200 || c.Seed != 9 {
		t.Fatalf("parsed %+v", c)
	}
	d, err := NewDDQN(c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d.Config())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"act":"tanh"`) || !strings.Contains(string(b), `"replay_capacity":100000`) {
		t.Fatalf("config JSON %s", b)
	}
	if err := yaml.Unmarshal([]byte("arch: {in: 4, out: 3, act: gelu}\n"), &c); err == nil || !strings.Contains(err.Error(), "gelu") {
		t.Fatalf("unknown activation: err = %v", err)
	}
}
