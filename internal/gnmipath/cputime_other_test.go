//go:build !unix

package gnmipath

import "time"

// processCPU is not measured here; benchmarks then report no CPU metric.
func processCPU() time.Duration { return 0 }
