package rl

import "github.com/ecntune/ecntune/policy/nn"

// The network the learners train is policy/nn's inference MLP: the runtime
// (policy, the agent) decides with nn alone, free of gorgonia, and the
// learners here bind its weights into their training graphs. These names
// keep rl's callers (train, tests) reading as before.
type (
	Net        = nn.Net
	Arch       = nn.Arch
	Layer      = nn.Layer
	Activation = nn.Activation
	OutputKind = nn.OutputKind
)

// Activations, output kinds and limits: see policy/nn.
const (
	ReLU              = nn.ReLU
	Tanh              = nn.Tanh
	OutputUnspecified = nn.OutputUnspecified
	OutputQ           = nn.OutputQ
	OutputLogits      = nn.OutputLogits
	OutputValue       = nn.OutputValue
	MaxLayerWidth     = nn.MaxLayerWidth
	MaxLayers         = nn.MaxLayers
)

// Constructors, codecs and helpers: see policy/nn.
var (
	NewNet          = nn.NewNet
	InitNet         = nn.InitNet
	UnmarshalNet    = nn.UnmarshalNet
	ParseActivation = nn.ParseActivation
	Argmax          = nn.Argmax
	Confidence      = nn.Confidence
	SoftmaxMargin   = nn.SoftmaxMargin
	ErrCorrupt      = nn.ErrCorrupt
)
