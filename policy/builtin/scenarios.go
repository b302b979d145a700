package builtin

import _ "embed"

// TrainWebsearchScenario is scenarios/train-websearch.yaml, the first
// training scenario of the embedded model, so that commands can run it
// without the repository (the default scenario of "ecntune bench policy").
// Its workload reads ../../../scenarios/cdf/websearch.txt, which package
// scenarios/cdf embeds.
//
//go:embed scenarios/train-websearch.yaml
var TrainWebsearchScenario string
