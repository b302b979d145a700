// Package builtin holds ecntune's pretrained default policy, embedded in the binary.
// Use policy.Lookup("builtin") for the policy, or Model for the model export itself.
//
// It needs no model registry. Model decodes and verifies the export
// embedded from builtin.ecnmodel (see models.ReadExport) once, and returns
// the weights with their full provenance; every call returns its own copy
// of the weights. The policy package checks the model's observation and
// action spec versions against those of the build.
//
// TrainCommand is the exact command line that produced the model. Run from
// the repository root and followed by
//
//	ecntune models export builtin --db builtin-train.db -o policy/builtin/builtin.ecnmodel
//
// it reproduces the file: training is deterministic for a given --seed and
// --workers on a given build, but the simulator is part of what is learned,
// so a change to simenv changes the weights. TestTrainCommandMatchesProvenance
// checks the embedded provenance against TrainCommand and the sha256 of the
// scenario files.
//
// PreferenceModel is a second embedded model, trained across operator
// preferences with the preference as an input (PreferenceTrainCommand,
// exported from the run named builtin-preference): the policy
// builtin:prefer=P runs it for P != 0, and builtin the base model.
//
// The training scenarios live in policy/builtin/scenarios/ and the
// validation scenarios used for model selection in policy/builtin/validation/;
// the held-out scenarios (scenarios/heldout/) were never used for training
// or selection. policy/builtin/MODEL.md is the model's card (what it is,
// its inputs and outputs, where it may be used, its held-out results and
// limits); how it was made and chosen, and every measured figure about it,
// are in docs/model/LAB-NOTES.md beside the evaluation files it quotes; the
// previous (obs-v1) model's are in docs/model/obs-v1/README.md.
package builtin
