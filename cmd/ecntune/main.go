package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	_ "go4.org/unsafe/assume-no-moving-gc"
)

var rootCmd = &cobra.Command{
	Use:           "ecntune",
	Short:         "Tune ECN (Kmin/Kmax/Pmax) and PFC headroom of RoCEv2 fabrics with a learned policy",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// Subcommands add themselves to rootCmd in init functions, one file each.

func main() {
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "ecntune:", err)
		os.Exit(1)
	}
}
