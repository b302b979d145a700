package train

import (
	"errors"
	"fmt"
	"math"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/gym"
	"github.com/ecntune/ecntune/train/rl"
)

// validateSwitch checks a switch-level headroom run (Config.ECN set).
func (c Config) validateSwitch() error {
	cat := env.DefaultCatalogue()
	switch {
	case c.Algo != AlgoPPO:
		return fmt.Errorf("train: a switch-level headroom model is trained with ppo, not %s", c.Algo)
	case c.PreferenceScale > 0:
		return errors.New("train: a switch-level headroom model takes no preference scale")
	case c.Spec != "" && c.Spec != env.SwitchSpecVersion+"/"+env.HeadroomActionSpec && c.Spec != env.SwitchSpecVersion+"/"+env.HeadroomAlphaActionSpec:
		return fmt.Errorf("train: spec %q: a switch-level headroom model speaks %s/%s (headroom) or %s/%s (headroom and alpha)", c.Spec,
			env.SwitchSpecVersion, env.HeadroomActionSpec, env.SwitchSpecVersion, env.HeadroomAlphaActionSpec)
	case !readable(c.ECN.InDim()):
		return fmt.Errorf("train: ECN policy %s reads %d inputs: want the features of one of %v (a preference-conditioned model cannot be the ECN policy here)",
			c.ECNName, c.ECN.InDim(), env.ReadableObsSpecs)
	case c.ECN.OutDim() != cat.ECNLen() && c.ECN.OutDim() != cat.Outputs():
		return fmt.Errorf("train: ECN policy %s has %d outputs: want %d (act-v2) or %d (%s)", c.ECNName, c.ECN.OutDim(), cat.ECNLen(), cat.Outputs(), env.ActionSpecVersion)
	case c.ECN.Kind != rl.OutputLogits && c.ECN.Kind != rl.OutputQ:
		return fmt.Errorf("train: ECN policy %s outputs %s, want logits or q-values", c.ECNName, c.ECN.Kind)
	}
	return nil
}

func readable(in int) bool {
	for _, s := range env.ReadableObsSpecs {
		if env.ObsSpecFeatures(s) == in {
			return true
		}
	}
	return false
}

// ecnHeads are the heads of the frozen ECN network: the ECN head alone
// (act-v2) or the ECN and PFC heads (act-v3, whose PFC choice is ignored:
// the headroom is the switch's decision, the alpha stays).
func ecnHeads(n *rl.Net, cat env.Catalogue) []int {
	if n.OutDim() == cat.ECNLen() {
		return []int{cat.ECNLen()}
	}
	return []int{cat.ECNLen(), cat.PFCLen()}
}

// ecnActions is the frozen ECN network's best ECN action per queue (hold
// where the interval was not measured); heads are ecnHeads(c.ECN, cat).
func ecnActions(c Config, cat env.Catalogue, heads []int, obs []env.Observation) ([]int, error) {
	acts, err := c.ECN.GreedyJoint(featuresOf(obs, c.ECN.InDim(), false, 0), heads)
	if err != nil {
		return nil, fmt.Errorf("ECN policy %s: %w", c.ECNName, err)
	}
	for i := range acts {
		acts[i], _ = cat.Split(acts[i])
		if !obs[i].Valid {
			acts[i] = env.ActionHold
		}
	}
	return acts, nil
}

// playSwitchEpisode is playEpisode for a switch-level headroom model: the
// agents are the switches (env.SwitchGroups at reset), actor a picks one
// hdrm-v1 action per switch, the frozen ECN network every queue's ECN
// action, and a switch's reward is the mean reward of its members.
func playSwitchEpisode(c Config, cfg simenv.Config, seed uint64, a actor, record, hidePeer bool, missing env.Telemetry) (episodeOut, error) {
	var out episodeOut
	e, err := gym.New(cfg, gym.Options{Interval: c.Interval, Reward: c.Reward, HidePeer: hidePeer, Missing: missing, PmaxStep: c.PmaxStep})
	if err != nil {
		return out, err
	}
	obs, err := e.Reset(seed)
	if err != nil {
		return out, err
	}
	groups := env.SwitchGroups(obs)
	if len(groups) == 0 {
		// No queue shows its headroom and floor (the episode's switches
		// lack that telemetry, Randomisation.DropTelemetry): nothing to
		// decide or learn from.
		return out, nil
	}
	cat := env.DefaultCatalogue()
	heads := ecnHeads(c.ECN, cat)
	spec := c.ActionSpec()
	feats := env.SwitchFeatureRows(obs, groups)
	for done := false; !done; {
		acts, logp, vals, err := a.act(nil, feats)
		if err != nil {
			return out, err
		}
		joint, err := ecnActions(c, cat, heads, obs)
		if err != nil {
			return out, err
		}
		next, rewards, d, _, err := e.StepSettings(switchSettings(spec, cat, obs, groups, joint, acts))
		if err != nil {
			return out, err
		}
		done = d
		rw := make([]float32, len(groups))
		for g, grp := range groups {
			var sum float64
			n := 0
			for _, i := range grp.Members {
				if next[i].Valid {
					sum += rewards[i]
					n++
				}
			}
			if n > 0 {
				rw[g] = float32(sum / float64(n))
				out.rewardSum += sum / float64(n)
				out.rewardN++
			}
		}
		nextF := env.SwitchFeatureRows(next, groups)
		if record {
			out.addStep(feats, acts, logp, vals, rw, done)
		}
		obs, feats = next, nextF
	}
	return out, out.finish(a, feats, record)
}

// switchSettings is every queue's setting under the ECN actions ecn and
// one joint switch-level action per group (acts, spec's layout): the
// switch's choice sets the headroom (a factor of each member PG's floor)
// and the alpha (where the PG's is known) of all its members at once.
func switchSettings(spec string, cat env.Catalogue, obs []env.Observation, groups []env.SwitchGroup, ecn, acts []int) []env.Setting {
	out := make([]env.Setting, len(obs))
	for i := range obs {
		out[i] = cat.SettingFor(cat.Joint(ecn[i], 0), obs[i].RateBps, obs[i].Current, obs[i].MinHeadroomBytes)
	}
	for g, grp := range groups {
		ch := env.SwitchDecision(spec, acts[g])
		for _, i := range grp.Members {
			if ch.HeadroomOK {
				out[i].HeadroomBytes = int64(math.Ceil(float64(obs[i].MinHeadroomBytes) * ch.Factor))
			}
			if ch.AlphaOK && obs[i].Current.Alpha > 0 {
				out[i].Alpha = ch.Alpha
			}
		}
	}
	return out
}
