// Package builtin holds ecntune's pretrained default policy, embedded in
// the binary so that "builtin" works without a model registry.
//
// The model file builtin.ecnmodel is a model export (see models.WriteExport)
// carrying the weights and their full provenance. It is reproduced by the
// command in TrainCommand, run from the repository root, followed by
//
//	ecntune models export builtin --db builtin-train.db -o policy/builtin/builtin.ecnmodel
//
// Training is deterministic for a given --seed and --workers on a given
// build: the same command gives the same weights. The simulator is part of
// what is learned, so a change to simenv changes the result; the model's
// provenance records the build revision when the binary carries one (go
// build -buildvcs=true). TestTrainCommandMatchesProvenance checks the
// embedded provenance against this command and the scenario files' sha256.
//
// The model is PPO (actor 40→64→64→83 logits over the act-v2 catalogue,
// tanh), 1200 domain-randomised episodes of 5-6 ms on 8-host stars at
// 25-200 Gb/s and on two oversubscribed leaf-spines (3 leaves of 4 hosts
// and 4 leaves of 3 hosts under one spine), 3.3 minutes on 2 cores. Its
// reward charges queueing delay more than env.DefaultRewardWeights (delay
// 0.12, tail delay 0.02 per reference RTT) and pays throughput at host
// ports only (fabric_throughput 0): every byte delivered leaves exactly
// one host port but crosses zero to several fabric queues, so a transit
// queue is rewarded for being short, not for being full. It reads which
// ports face another switch (obs-v2; from the agent's fabric-ports, or
// unknown) and treats them apart. On the validation leaf-spine (8 seeds)
// its greedy choices are Kmax 1 MB on 93% of the host-port decisions,
// 464 KB (52%) or 129 KB (20%) on the leaves' uplinks and 129 KB (68%) on
// the spine's ports, at 100 Gb/s and scaled to the port rate.
//
// Why the peer. On an oversubscribed leaf-spine the congested queues are
// the leaves' uplinks, and a fixed setting per port role does far better
// than one setting everywhere (scratch tool, val-leafspine-ws-50, 4:1 at
// the leaves, 8 seeds, against sonic-default's p99 43.0 at 42.4 Gb/s):
// Kmax 150 KB on the uplinks with 1.29 MB on the host ports cut the
// small-flow p99 by 61% at 103% of the goodput, where one setting on
// every port gives 17% at 99% (1.29 MB) or 55% at 94.8% (774 KB), and the
// previous (obs-v1) model 43% at 98.3%: tightening the uplinks costs
// nothing there, the host ports carry the trade-off. (The spines' ports
// never queue in it; on the shipped leaf-spines, 1:1 with 400 Gb/s
// uplinks, the roles make no difference.) The counters of a transit and a
// last-hop queue look alike under load, so the policy is told which is
// which; with throughput paid on every port the reward hardly separates
// uplink thresholds, with it paid at host ports only it falls steadily as
// they rise (-0.15 at 150 KB, -0.33 at 774 KB, -0.60 at 1.29 MB per
// queue-interval on train-leafspine).
//
// Model selection, on the validation scenarios only (4 scenarios, 6 and
// 20 ms, 6 seeds: 8 pairs; the bar is "≥ 30% small-flow p99 cut against
// the best preset at ≥ 95% of its large-flow goodput"): with one
// leaf-spine training scenario, or with throughput paid on every port,
// the uplinks stayed at 599 KB-1 MB and runs met the bar on 1 to 3 pairs;
// with this command's flags seeds 7-13 met it on 3, 4, 3, 2, 5, 3 and 4
// (delay 0.11, seed 7: 1). Seed 11, kept, meets it on 5, as the previous
// model did, with a higher mean cut (38% against 36%) and mean goodput
// (97.6% against 97.1%) over the 8 pairs: 38%, 43%, 21%, 35% at 100.0%,
// 95.4%, 102.3%, 98.6% at 6-10 ms (leaf-spine, time-varying star, 25G
// incast, 12-host star), 52%, 40%, 33%, 44% at 101.0%, 93.5%, 95.8%,
// 94.4% over 20 ms. On the leaf-spine alone: 38% at 100.0% and 52% at
// 101.0%, where the previous model had 35% at 98.3% and 43% at 97.4%.
// Without fabric-ports (eval --hide-peer; 20% of training episodes hide
// the peer) it meets the bar on 3 pairs: 28%, 40%, 26%, 37% at 99.2%,
// 93.8%, 102.6%, 98.0%, and over 20 ms 47%, 41%, 41%, 43% at 98.7%,
// 93.5%, 95.5%, 93.6%. Give the agent its fabric-ports.
//
// On the held-out scenarios (scenarios/heldout, 20 seeds, heldout-eval.txt;
// never used for training or selection) it cuts the p99 FCT slowdown of
// flows under 100 KB against the best vendor preset (sonic-default on all
// five) by 56% at 96.2% of its large-flow goodput on the 2x2 leaf-spine
// with web search and incast (the previous model: 42% at 98.4%), 48% at
// 101.8% on the time-varying leaf-spine (36% at 100.2%), 44% at 96.2% on
// the Hadoop star (46% at 96.4%), 35% at 97.1% on the 400 Gb/s star (37%
// at 97.0%), and only 16% at 94.4% on the 25G 14-to-1 incast (17% at
// 94.8%; no fixed setting cuts more than 21% there). Against static:best
// its small-flow p99 is 0.58, 0.78 and 0.82 on the leaf-spine, Hadoop and
// 25G ones, 1.10 on the 400 Gb/s one (per seed 1.09, 95% CI 1.03-1.16:
// 10% behind), and 0.98 on the time-varying one (per seed 0.99, CI
// 0.83-1.18: level, where the previous model was 1.22, CI 1.05-1.41)
// while keeping more goodput than any fixed setting does there. No drops
// and no PFC pauses anywhere.
//
// Over 20 ms, where more long flows finish (6 seeds, same file), it cuts
// 80%, 49%, 47%, 30% and 40% (Hadoop star, 25G incast, leaf-spine, 400
// Gb/s, time-varying) at 88.4%, 87.2%, 93.6%, 96.8% and 92.5% of the best
// preset's large-flow goodput (the previous model: 82%, 47%, 40%, 36%, 33%
// at 86.1%, 88.4%, 96.6%, 95.9%, 95.5%), 0.46-0.80 of static:best's p99:
// like the previous model it sits at the latency end of the trade, and on
// the leaf-spines it now trades a little more goodput for a larger cut.
// On the shipped 32-host scenarios over 20 ms (long-run-eval.txt, 4 seeds)
// it cuts 44-82% at 79-94% of the large-flow goodput (ai-allreduce 79%,
// fbhadoop-50 87%, websearch-50 88%, websearch-30 90%, daynight 94%,
// websearch-70 94%), as the previous model did (46-82% at 79-94%).
//
// # The previous model (obs-v1)
//
// What follows tells how the model shipped before obs-v2 was made and
// chosen and what was tried on it; its evaluation files are in
// policy/builtin/obs-v1/. Its weights (sha256 377eff7c…) are in the git
// history of builtin.ecnmodel; they no longer load.
//
// It was PPO (actor 38→64→64→83 logits over the act-v2 catalogue,
// tanh), 800 domain-randomised episodes of 5-6 ms on 8-host stars at
// 25-200 Gb/s (about 2 minutes on 2 cores), with a reward that charges
// queueing delay more than env.DefaultRewardWeights (delay 0.12, tail delay
// 0.02 per reference RTT), so that it favours short queues. It does not
// hold one setting: on the validation scenarios its greedy choices are
// Kmin 387 KB / Kmax 774 KB / Pmax 0.3% (about half the decisions),
// 646 KB / 1.29 MB / 0.3% (a third) and 646 KB / 1.29 MB / 1% (the rest),
// at 100 Gb/s and scaled to the port rate.
//
// Model selection, on the validation scenarios (policy/builtin/validation,
// 6 seeds, never trained on) and never on the held-out ones: five reward
// weightings and two seeds were trained with this command's other flags;
// the kept model is the one that met "≥ 30% small-flow p99 cut against
// sonic-default at ≥ 95% of its large-flow goodput" on the most validation
// scenarios with the widest goodput margin: 35%, 45%, 15%, 39% cut at
// 98.3%, 96.7%, 98.4%, 98.3% goodput (leaf-spine, time-varying, 25G incast,
// 12-host star). The same weights with --seed 8 learned a fixed Kmax 1 MB
// (31%, 47%, 29%, 37% at 95.7-98.4%, less margin); delay 0.10 a fixed
// 1.29 MB (11-24% cut); delay 0.14 a 1.29 MB / near-step 774 KB mix
// (12-32%); five runs (delay 0.05-0.12) over a 387-action draft of act-v2
// with Kmin 2-90% and Pmax 1-30% settled on early or steep ramps, four of
// them keeping only 89-92% of the goodput on some validation scenario (see
// env.ActionSpecVersion); 1600 episodes, a 774 KB / 1.29 MB mix
// (17-39%); seeds 9 and 10, a fixed 1 MB; a fourth training scenario (a
// 2x2 leaf-spine with incast), a 1.29 MB mix (9-17%) with seed 7 and a
// fixed 1 MB with seed 8. Fourteen more runs did not do better (cut and
// goodput ranges over the four validation scenarios): over_mark 3, a fixed
// 1.29 MB / 1% (11-24%); tail_delay 0.06, a fixed near-step 774 KB
// (36-46%, but 91.9% goodput on the time-varying one); tail_delay 0.04, a
// fixed near-step 1 MB (25-30%); delay 0.10 with tail_delay 0.04, a fixed
// 1.29 MB (11-24%); delay 0.16 with over_mark 3, a 1.29 MB mix (9-24%);
// over_mark 0, a 774 KB / near-step 1 MB mix (26-48% at 93.1-97.8%);
// over_mark 0.4, a mix (16-39%); --gamma 0.8, a 1 MB / 1.67 MB mix (4-26%);
// DDQN, scattered choices up to 10 MB (worse than sonic-default); and, in a
// scratch build, the PPO entropy coefficient at 0.03 (11-58% at 93.2-97.6%)
// and 0.003 (a fixed near-step 774 KB, 34-48% at 92.0-96.4%); seeds 11-13
// with the kept flags, a fixed Kmax 1 MB (24-47%) as seeds 8-10. Why runs
// land on different settings: the counter reward is nearly flat across
// Kmax 774 KB-1 MB (mean reward per queue-interval, measured with a scratch
// tool on two validation scenarios: 0.395 vs 0.398 at 25G, 0.511 vs 0.503
// at 100G), so the seed and small weight changes decide among them, while
// small-flow p99 and goodput differ by tens of percent between them.
//
// The choice was rechecked over 20 ms, where long flows finish (the
// validation scenarios run with eval --duration 20ms, 4 seeds, against the
// best preset by static:best's rule: sonic-mellanox on the 25G incast,
// sonic-default on the others). The kept model meets the bar on one of four
// (leaf-spine, 41% cut at 97.8% goodput); on the time-varying, 25G incast
// and star ones it cuts 37-51% but keeps 94.3%, 91.8% and 94.9%. Of the
// other act-v2 runs listed above none meets it on more than two: seeds 8,
// 9 and 12 (all three hold Kmin 500 KB / Kmax 1 MB / 1% everywhere, a
// fixed setting static:best's grid holds too), seeds 10, 11 and 13, delay
// 0.14, over_mark 0.4 and tail_delay 0.04; none on the 25G incast (at most
// 94.5% of the goodput there). None does better on both horizons (at 6 ms
// those runs meet it on none to three of four, the kept model on three),
// so the model stays.
//
// Against fixed settings at the same goodput (obs-v1/validation-frontier.txt, 8
// seeds): fixed settings trade small-flow p99 for large-flow goodput along
// a steep line set by Kmax; the model lies above that line on three
// validation scenarios (e.g. 44% cut at 96.8% goodput on the time-varying
// one, where the line gives about 28%) and on it on the 25G incast one.
// Timed plans that know the time-varying scenario's phase boundaries do no
// better than the line.
//
// On the held-out scenarios (scenarios/heldout, 20 seeds, obs-v1/heldout-eval.txt)
// it cuts the p99 FCT slowdown of flows under 100 KB against the best vendor
// preset (sonic-default on all four) by 46% at 96.4% of its large-flow
// goodput (Hadoop star), 42% at 98.4% (leaf-spine web search) and 36% at
// 100.2% (time-varying); by only 17% at 94.8% on the 25G 14-to-1 incast.
// Its small-flow p99 is 0.74-0.81 of static:best's on the three stationary
// scenarios; on the time-varying one it is 1.22 times static:best's (Kmin
// 387 KB / Kmax 774 KB / 1%, which keeps 3% less goodput; seed by seed
// 1.22, 95% CI 1.05-1.41, so the gap is real) and 0.97 of the
// best fixed setting that keeps the model's goodput. No drops and no PFC
// pauses anywhere. A fifth held-out scenario, added later, runs at 400
// Gb/s, above any rate in training (8-host star, web search 50% with
// 6-to-1 incasts of 400 KB): 37% cut at 97.0% (20 seeds; 1.06 times
// static:best's p99, 95% CI 1.03-1.10, just outside 5%), and over 20 ms
// 36% at 95.9% (6 seeds, 0.73 of static:best's): the rate-scaled
// observations and actions carry over.
//
// Over longer runs it keeps less large-flow goodput (obs-v1/long-run-eval.txt):
// large-flow goodput counts finished flows, and the 6-10 ms of the
// held-out scenarios let mostly the fast ones finish. Over 20 ms, on the
// shipped 32-host leaf-spines with 400G uplinks (4 seeds) it still cuts
// small-flow p99 by 46-82% against the best preset and is 0.33-0.65 of
// static:best's, but keeps only 79-94% of the best preset's large-flow
// goodput (ai-allreduce 79%, fbhadoop-50 86%, websearch-50 88%,
// websearch-30 91%, daynight 92%, websearch-70 94%; star-incast, with no
// small flows, 76%); the held-out Hadoop star and 25G incast run for 20 ms
// keep 86% and 88% (the leaf-spine one 96.6%, cut 40%). Among fixed
// settings that keep the model's goodput it is still ahead (0.53-0.97 of
// the best one's p99): it sits at the latency end of the trade, not below
// the line. The reward cannot see this cost: it is a shift of bandwidth
// from large flows to small ones at nearly the same link utilisation, and
// per-flow rates are not switch counters. Measured with a scratch tool
// (mean reward per queue-interval, the kept reward weights, 2 seeds): on
// websearch-50 fixed Kmax 774 KB / 1.29 MB / 2.15 MB score 0.444 / 0.433 /
// 0.391 while their large-flow goodput is 34.2 / 36.2 / 38.4 Gb/s; on
// ai-allreduce utilisation even falls as the thresholds loosen (0.471 at
// 774 KB, 0.444 at Kmax 10 MB) while large-flow goodput rises (38.2 to 48.4
// Gb/s). Where long flows' throughput matters more than short flows'
// latency (AI training, storage replication), use a looser fixed setting
// (static:best picks Kmin 1.08 MB / Kmax 2.15 MB / 1% on four of the six
// shipped scenarios with small flows) or train with a smaller delay weight.
//
// The model decides every 200 µs in training; production telemetry comes
// every second or so. Run with slower decisions on the validation
// scenarios over 20 ms (eval --duration 20ms --interval D --seeds 6, against
// sonic-default, the best preset there), it keeps its trade: at D = 400 µs
// it cuts 32-53% at 93.4-98.5% of the large-flow goodput, at 1 ms 28-51%
// at 94.0-98.0%, at 2 ms 25-47% at 95.2-99.8% (ten decisions per run, the
// first 2 ms on the scenario's own setting). Intervals of seconds need
// runs of minutes, beyond what these checks simulate.
//
// An operator can lean the model either way without retraining:
// builtin:prefer=P (P in [-1, 1]; policy.Learned.WithPreference) takes,
// among the settings the network scores within |P|·3 nats of its best, the
// latest-marking one for P < 0 and the earliest for P > 0. Because the
// reward is nearly flat across neighbouring thresholds, the network often
// has such near-ties (obs-v1/preference-eval.txt, every vendor preset alongside):
//
//   - held-out, 6-10 ms, 20 seeds: prefer=-0.25 cuts 45%, 16%, 42%, 45% at
//     96.9%, 95.4%, 99.1%, 101.4% (Hadoop star, 25G incast, leaf-spine,
//     time-varying), prefer=-0.5 35%, 16%, 28%, 32% at 96.8-102.2%,
//     prefer=0.5 51%, 17%, 51%, 38% at 93.8-98.1%;
//   - the same over 20 ms, 6 seeds: the default 82%, 47%, 40%, 33% at
//     86.1%, 88.4%, 96.6%, 95.5%; prefer=-0.5 79%, 46%, 31%, 28% at 87.8%,
//     89.4%, 97.3%, 97.4%: the Hadoop star and the 25G incast, where the
//     best preset over 20 ms is sonic-mellanox (Kmax 10 MB), stay far below
//     95%;
//   - the shipped scenarios over 20 ms, 4 seeds: on the six with small
//     flows prefer=-0.5 keeps 80-96% of the large-flow goodput where the
//     default keeps 79-94%, at 38-78% cut instead of 46-82%, and meets the
//     bar on daynight and websearch-70 (38% at 95.2%, 43% at 96.1%); on
//     star-incast (incast only) it keeps less, 73.0% against 75.3%.
//
// The default stays at 0: on the validation scenarios (6 seeds) the
// default meets the bar on three of four at 6-10 ms and two of four over
// 20 ms, prefer=-0.25 on two and three, so they tie, and the held-out
// scenarios are not used to choose. Nor does another run do better with
// a lean: nine of the act-v2 runs listed above (this one, seeds 8, 10, 11
// and 13, delay 0.10, delay 0.14, over_mark 0.4, tail_delay 0.04), each at
// prefer 0 and -0.25, meet the bar on at most five of the eight
// (validation scenario, horizon) pairs, as this model does. A model
// trained with the preference as an input (delay weights scaled by 2^P, P
// drawn per episode) chose the same settings at P = -1 and P = +1, which is
// why the preference is a tie-break over the network's scores and not a
// reward weight.
//
// Three more levers were tried and not kept (same checks, 8 pairs). A fourth
// training scenario with phases on a 2x2 leaf-spine of 8 hosts (web search
// 30%, then 70% with 6-to-1 incasts of 150 KB, then 40%; 1000 episodes,
// 2.2 minutes) met the bar on 2, 0, 2 and 4 pairs with seeds 7-10: the
// seed moved the model along the same line (seed 8: 9-30% cut at
// 94.9-103%; seed 9: 33-56% at 91.7-100.4%, unmoved by any preference). A
// reward term charging every mark (weight·MarkFrac, scratch build; 0.3,
// 0.5, 1, 3) met it on 1, 0, 0 and 0: it trades cut for goodput along the
// same line (weight 1 over 20 ms: 18-28% cut at 96.2-100.3%), and at 3 it
// marks later than sonic-default. Training at a slower decision interval
// (scratch build; 300 µs seed 7, 400 µs seeds 7-9, closer to eval's
// default of min(500 µs, duration/25)) met it on 5, 4, 0 and 0: no run
// above the kept one. A finer preference scan of this model
// (prefer -0.2, -0.15, -0.1, +0.1) met it on 4, 3, 4 and 5 pairs, the
// default on 5.
//
// The training scenarios live in policy/builtin/scenarios/; the held-out
// scenarios used to judge the model (scenarios/heldout/) were never seen in
// training.
package builtin

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/ecntune/ecntune/models"
)

// TrainCommand is the exact command line that produced the embedded model.
const TrainCommand = "ecntune train --scenario policy/builtin/scenarios/train-websearch.yaml " +
	"--scenario policy/builtin/scenarios/train-incast.yaml --scenario policy/builtin/scenarios/train-mixed.yaml " +
	"--scenario policy/builtin/scenarios/train-leafspine.yaml --scenario policy/builtin/scenarios/train-leafspine4.yaml " +
	"--algo ppo --episodes 1200 --workers 2 --seed 11 --name builtin --db builtin-train.db " +
	`--reward '{"delay":0.12,"tail_delay":0.02,"fabric_throughput":0}' --gamma 0.5`

//go:embed builtin.ecnmodel
var file []byte

var (
	once  sync.Once
	model models.Model
	err   error
)

// Model decodes and verifies the embedded model export (once).
func Model() (models.Model, error) {
	once.Do(func() {
		model, err = models.ReadExport(bytes.NewReader(file))
		if err != nil {
			err = fmt.Errorf("builtin model: %w", err)
		}
	})
	if err != nil {
		return models.Model{}, err
	}
	m := model
	m.Weights = bytes.Clone(model.Weights)
	return m, nil
}
