// Command ecntune tunes ECN and PFC settings of RoCEv2 fabrics with
// reinforcement learning; see README.md.
//
// One file and one constructor per subcommand (command_*.go, as bbolt's
// cmd/bbolt does), put together by newRootCmd; the shared helpers are in
// registry.go (the model registry file), flags.go and output.go.
package main

import (
	"fmt"
	"os"

	_ "go4.org/unsafe/assume-no-moving-gc"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "ecntune:", err)
		os.Exit(1)
	}
}
