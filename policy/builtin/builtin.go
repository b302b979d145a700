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
// 400 Gb/s. A fifth validation scenario was added after the model was
// chosen (val-hadoop-400g: 10-host star at 400 Gb/s, FB Hadoop 45% with
// 4-to-1 incasts of 600 KB), with static:best measured on all five
// (validation-eval.txt has every figure of this paragraph). There
// the model cuts 27% at 97.0% of the best preset's goodput (6 seeds; 20
// ms: 27% at 96.9%), 1.12 times static:best's small-flow p99 at 6 ms and
// 0.99 over 20 ms; with 12 seeds 1.05 and 1.00. Counting both halves of
// the bar (cut and goodput as above, and within 5% of static:best, below
// it on the time-varying one) over the 10 (scenario, horizon) pairs it
// meets 5 with 6 seeds and 4 with 12. Nine runs with 400 Gb/s added to
// the training rates (train --randomise
// '{"host_rates":[25e9,50e9,100e9,200e9,400e9]}', this command's other
// flags; 5-7 minutes each) did not close the gap without giving up
// goodput elsewhere (pairs met of 10, 6 seeds): seeds 11 and 12 reach
// 0.99 and 0.94 of static:best's p99 at 400 Gb/s (6 ms) but keep only
// 91-94% of the goodput on the time-varying star and the leaf-spine (4
// and 1 pairs); seeds 13 and 15 behave as this model (1.10-1.11 at 400
// Gb/s; 5 and 3 pairs); seed 16 meets the bar on the 25G incast at 6 ms
// (40% cut, 0.93 of static:best) but loses goodput over 20 ms (4 pairs);
// delay 0.10 with seeds 11-13, 2, 4 and 0. Seed 14 meets 6 pairs with 6
// seeds and 6 with 12 (this model 5 and 4), but by keeping a little more
// goodput at a smaller cut (mean over the 12-seed pairs 35.7% at 97.2%
// against 39.4% at 97.4%) and with a wider 400 Gb/s gap at 6 ms (1.14
// against 1.05 with 12 seeds): a move along the same trade rather than
// past it, so it was not taken in place of a model whose held-out and
// long-run evidence is measured.
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
// and no PFC pauses anywhere. A sixth held-out scenario, added after
// the model was chosen, a 128-host leaf-spine at 25 Gb/s (8 leaves x 4
// spines, Hadoop and incasts), is larger than anything in training: 40%
// at 93.1% (0.60 of static:best, which is sonic-default there), and over
// 20 ms 82% at 84.5%: the same lean to latency.
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
// How the model shipped before obs-v2 was made and chosen, and what was
// tried on it, is told in policy/builtin/obs-v1/README.md beside its
// evaluation files.
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
