package env

import "math"

// SwitchSpecVersion names the layout of SwitchFeatures: what a switch-level
// headroom model reads. HeadroomActionSpec names its actions.
//
// # Observation spec sw-v1
//
// A switch's lossless priority groups share one buffer: headroom that one
// PG gives back delays XOFF for every PG of the switch, so the headroom is
// decided once per switch, for all of its PGs at once, from what its
// queues show together. The members of a switch are its queues whose PG
// headroom and lossless floor are both known (SwitchGroups). Over the
// members whose interval was measured (Valid), from their obs-v4 features:
//
//	idx  name              value                                          range
//	0    valid             fraction of the members measured               [0, 1]
//	1    pause_tx_mean     mean pause_tx of the last interval             [0, 1]
//	2    pause_tx_max      max pause_tx of the last interval              [0, 1]
//	3    pause_rx_mean     mean pause_rx of the last interval             [0, 1]
//	4    pause_rx_max      max pause_rx of the last interval              [0, 1]
//	5    pause_tx_hist     mean pause_tx over the HistoryLen intervals    [0, 1]
//	6    pause_rx_hist     mean pause_rx over the HistoryLen intervals    [0, 1]
//	7    util_mean         mean util of the last interval                 [0, 1]
//	8    max_queue_max     max of max_queue                               [0, 1]
//	9    avg_queue_mean    mean of avg_queue                              [0, 1]
//	10   drop_max          max drop score                                 [0, 1]
//	11   incast_max        max incast estimate                            [0, 1]
//	12   headroom_mean     mean headroom feature (log2(headroom/floor)/2) [0, 1]
//	13   headroom_min      min headroom feature                           [0, 1]
//	14   alpha_mean        mean alpha feature (alpha_known members)       [0, 1]
//	15   pfc_known         fraction of members that export PFC frames     [0, 1]
//	16   paused_known      fraction that export paused time               [0, 1]
//	17   fabric            fraction of members facing another switch      [0, 1]
//	18   members           log2(members) / 8                              [0, 1]
//
// With no member measured every figure but members is 0.
//
// # Action spec hdrm-v1
//
// One action per switch: 0 keeps every member PG's headroom as it is;
// 1 + h sets every member PG's headroom to HeadroomFactors[h] times its
// own lossless floor (never below it: the rest of the PG's headroom
// returns to the shared pool, which delays XOFF).
//
// # Action spec hdrm-v2
//
// Two choices per switch (two heads): hdrm-v1's headroom choice, and the
// dynamic-threshold alpha of every member PG whose alpha is known: 0
// keeps it, 1 + a sets SwitchAlphas[a] (how much of the free shared
// buffer a PG may hold before XOFF). The joint action is
// headroom + len(hdrm-v1) × alpha.
const (
	SwitchSpecVersion       = "sw-v1"
	HeadroomActionSpec      = "hdrm-v1"
	HeadroomAlphaActionSpec = "hdrm-v2"
	NumSwitchFeatures       = 19
)

// SwitchActionSpecs are the switch-level action specs this build runs.
var SwitchActionSpecs = []string{HeadroomActionSpec, HeadroomAlphaActionSpec}

// SwitchAlphas are hdrm-v2's alpha levels (after keep).
var SwitchAlphas = []float64{1.0 / 4, 1.0 / 2, 1, 2, 4}

// SwitchActions is the number of hdrm-v1 actions: keep, then one per
// HeadroomFactors entry (the headroom head of hdrm-v2 too).
func SwitchActions() int { return 1 + len(HeadroomFactors) }

// SwitchHeads are the heads of a switch-level action spec (nil for a spec
// this build does not know).
func SwitchHeads(spec string) []int {
	switch spec {
	case HeadroomActionSpec:
		return []int{SwitchActions()}
	case HeadroomAlphaActionSpec:
		return []int{SwitchActions(), 1 + len(SwitchAlphas)}
	}
	return nil
}

// SwitchChoice is what one joint switch-level action sets: the headroom
// factor (HeadroomOK false: keep) and the alpha (AlphaOK false: keep).
type SwitchChoice struct {
	Factor, Alpha       float64
	HeadroomOK, AlphaOK bool
}

// SwitchDecision splits joint action a of spec (SwitchHeads' layout).
func SwitchDecision(spec string, a int) SwitchChoice {
	var c SwitchChoice
	h := a
	if spec == HeadroomAlphaActionSpec {
		h = a % SwitchActions()
		if k := a/SwitchActions() - 1; k >= 0 && k < len(SwitchAlphas) {
			c.Alpha, c.AlphaOK = SwitchAlphas[k], true
		}
	}
	c.Factor, c.HeadroomOK = SwitchHeadroomFactor(h)
	return c
}

// SwitchHeadroomFactor is the headroom factor of hdrm-v1 action a (ok
// false for keep or an action outside the spec).
func SwitchHeadroomFactor(a int) (factor float64, ok bool) {
	if a < 1 || a > len(HeadroomFactors) {
		return 0, false
	}
	return HeadroomFactors[a-1], true
}

// SwitchGroup is one switch's members: indices into the observations of
// its queues whose headroom and lossless floor are known.
type SwitchGroup struct {
	Target  string
	Members []int
}

// SwitchGroups groups obs by switch (QueueKey.Target), in the order the
// switches first appear; a queue whose headroom or floor is unknown is in
// no group, and a switch with no such queue has no group.
func SwitchGroups(obs []Observation) []SwitchGroup {
	var out []SwitchGroup
	at := map[string]int{}
	for i := range obs {
		o := &obs[i]
		if o.MinHeadroomBytes <= 0 || o.Current.HeadroomBytes <= 0 {
			continue
		}
		g, ok := at[o.Key.Target]
		if !ok {
			g = len(out)
			at[o.Key.Target] = g
			out = append(out, SwitchGroup{Target: o.Key.Target})
		}
		out[g].Members = append(out[g].Members, i)
	}
	return out
}

// SwitchFeatures writes the sw-v1 features of the switch whose members
// are members into dst (grown to NumSwitchFeatures) and returns it.
func SwitchFeatures(obs []Observation, members []int, dst []float32) []float32 {
	if cap(dst) < NumSwitchFeatures {
		dst = make([]float32, NumSwitchFeatures)
	}
	f := dst[:NumSwitchFeatures]
	clear(f)
	if len(members) == 0 {
		return f
	}
	f[18] = float32(math.Min(1, math.Log2(float64(len(members)))/8))
	var valid, alphaN int
	var hdrmMin float32 = 1
	for _, i := range members {
		x := obs[i].Features
		if !obs[i].Valid || len(x) < NumFeatures {
			continue
		}
		valid++
		f[1] += x[FeatPauseTx]
		f[2] = max(f[2], x[FeatPauseTx])
		f[3] += x[FeatPauseRx]
		f[4] = max(f[4], x[FeatPauseRx])
		for b := 0; b < HistoryLen; b++ {
			f[5] += x[b*IntervalFeatures+FeatPauseTx]
			f[6] += x[b*IntervalFeatures+FeatPauseRx]
		}
		f[7] += x[FeatUtil]
		f[8] = max(f[8], x[FeatMaxQueue])
		f[9] += x[FeatAvgQueue]
		f[10] = max(f[10], x[FeatDrop])
		f[11] = max(f[11], x[FeatIncast])
		f[12] += x[FeatHeadroom]
		hdrmMin = min(hdrmMin, x[FeatHeadroom])
		if x[FeatAlphaKnown] > 0 {
			f[14] += x[FeatAlpha]
			alphaN++
		}
		f[15] += x[FeatPFCKnown]
		f[16] += x[FeatPausedKnown]
		f[17] += x[FeatFabric]
	}
	if valid == 0 {
		return f
	}
	n := float32(valid)
	f[0] = n / float32(len(members))
	for _, k := range []int{1, 3, 7, 9, 12, 15, 16, 17} {
		f[k] /= n
	}
	f[5] /= n * HistoryLen
	f[6] /= n * HistoryLen
	f[13] = hdrmMin
	if alphaN > 0 {
		f[14] /= float32(alphaN)
	}
	return f
}

// SwitchFeatureRows is SwitchFeatures of every group, one row per group
// in one allocation.
func SwitchFeatureRows(obs []Observation, groups []SwitchGroup) [][]float32 {
	flat := make([]float32, len(groups)*NumSwitchFeatures)
	rows := make([][]float32, len(groups))
	for g, grp := range groups {
		rows[g] = SwitchFeatures(obs, grp.Members, flat[g*NumSwitchFeatures:(g+1)*NumSwitchFeatures:(g+1)*NumSwitchFeatures])
	}
	return rows
}

// KmaxXoffShare is the highest share of a lossless PG's XOFF that a Kmax
// is set to: ECN must mark before PFC pauses, and XOFF (the dynamic
// threshold, alpha times the free buffer) moves with buffer use, so a Kmax
// just under it is above it once the buffer fills. The agent's guard plans
// no Kmax above it, puts a repaired Kmax there, and the adaptive policy
// does not probe past it.
const KmaxXoffShare = 0.9

// LosslessFloor is the IEEE 802.1Qbb worst-case headroom of one lossless
// (port, priority group) at rateBps with cableMeters of cable and frames of
// up to frameBytes on the wire: the PAUSE frame waits behind one frame on
// our egress, the peer finishes the frame it is sending, everything on the
// wire in both directions lands (5 ns per metre), and the peer takes its
// response time to stop (394 pause quanta of 512 bit times at 100 Gb/s and
// below, 905 above; IEEE 802.3 Annex 31B). Bytes, rounded up; 0 when an
// input is not usable. Real switches export their headroom but not this
// floor; the agent computes it from the cable length and MTU an operator
// states per target, so that the guard's floor and the headroom decisions
// hold on them too.
func LosslessFloor(rateBps, cableMeters float64, frameBytes int) int64 {
	if !(rateBps > 0) || math.IsInf(rateBps, 0) || !(cableMeters >= 0) || math.IsInf(cableMeters, 0) || frameBytes <= 0 {
		return 0
	}
	quanta := 394.0
	if rateBps > 100e9 {
		quanta = 905
	}
	const pauseFrame = 64
	wire := 2 * cableMeters * 5e-9 * rateBps / 8
	return int64(math.Ceil(2*float64(frameBytes) + pauseFrame + wire + quanta*512/8))
}
