// Package nn is the inference side of ecntune's learned policies: the MLP
// (Net: plain float32 slices, batched forward passes in plain Go), its
// architecture and activations, what its outputs mean (OutputKind), the
// confidence of a decision from them, and its versioned binary form with a
// checksum (MarshalBinary, UnmarshalNet; Enc and Dec, the sealed-blob codec
// that train/rl's checkpoints use too).
//
// It imports no training library: the agent and the inference policies link
// nn alone, and train/rl binds a Net's weights into gorgonia graphs to train
// them (internal/layout's TestRuntimeLinksNoTrainingLibrary keeps it so).
package nn
