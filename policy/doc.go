// Package policy decides each queue's ECN setting: vendor presets, adaptive search, learned models.
// Resolve a spec with Lookup (or a Resolver that loads models) and call Decide every interval.
//
// Specs (Specs lists them for help texts): "static:NAME" (a vendor preset,
// PresetNames), "fixed:KMIN/KMAX/PMAX" (an explicit setting at 100 Gb/s),
// "schedule:WHAT,OFFSET=WHAT,..." (settings or policies by time),
// "daily:[tz=ZONE,]HH:MM=WHAT,..." (by the time of day), "adaptive" (a
// step search on the reward), "builtin[:prefer=P]" (the model embedded in
// package builtin), "model:NAME[:prefer=P]" (a registry model, through
// Resolver.Models; this package never opens a file),
// "roles:host=SPEC;fabric=SPEC[;other=SPEC]" (one of those for the queues
// of host-facing ports, another for fabric ports) and
// "rate:SPEC;RATE=SPEC[;...]" (by port speed; "builtin:400g" is the
// embedded model for ports of 400 Gb/s and faster). Each Lookup returns a
// fresh policy.
//
// The grammar is read in one place: ParseSpec parses a spec once into a
// Spec (its Kind, argument, preference, schedule entries, role parts,
// +headroom= and +alpha= rules, the models it names, its Warnings), and
// Resolver.Resolve builds the policy from that value; Lookup is the two,
// and CheckSpec the checks that need no model registry. The prefixes are
// the constants StaticPrefix to HighRateOption, the kinds KindStatic to
// KindRate; a Resolver's Kinds add forms of a caller's own (eval's
// static:best, schedule:best@ and truth:).
//
// Contracts of every Policy:
//   - Decide returns one Decision per observation, in the same order and
//     with the same Key. It does no I/O, reads no clock and is
//     deterministic: time is the observations' TimeNs.
//   - Settings are stated for the queue's own link rate: presets and
//     catalogue settings are given at 100 Gb/s (units.RefRateBps) and
//     scaled linearly to the port's rate. A decision never changes the
//     queue's headroom.
//   - A queue whose link rate is unknown holds its current setting; the
//     adaptive and learned policies also hold one whose interval was not
//     measured (Observation.Valid false), while static ones ask for their
//     setting whatever the counters say.
//   - Decision.Confidence is in [0, 1]; Decision.Action is the
//     env.DefaultCatalogue index the setting came from, or -1; Reason is one
//     line for an engineer reading shadow-mode output.
//
// Learned policies check the observation and action spec versions a model
// was trained with against env.SpecVersion and env.ActionSpecVersion, and
// refuse a mismatch. Stateful policies (Adaptive, Schedule) are not safe
// for concurrent use; Static and Learned are.
package policy
