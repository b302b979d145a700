package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// newBenchCmd groups the speed and memory measurements (package
// cmd/ecntune/internal/bench).
func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure speed and memory (simulator, decisions, training, agent)",
		Args:  cobra.NoArgs, // an unknown subcommand is an error, not the help and exit 0
		RunE:  groupHelp,
	}
	cmd.AddCommand(newBenchSimCmd(), newBenchPolicyCmd(), newBenchAgentCmd())
	return cmd
}

// startCPUProfile starts a pprof CPU profile into path ("" does nothing) and
// returns the function that stops it, closes the file and says on log
// where it wrote.
func startCPUProfile(path string, log io.Writer) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(log, "--cpuprofile:", err)
			return
		}
		fmt.Fprintln(log, "wrote", path)
	}, nil
}
