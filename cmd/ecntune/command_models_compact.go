package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/models"
)

func newModelsCompactCmd(f *modelsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "compact",
		Short: "Give back the registry file's free space (what replaced and deleted checkpoints left)",
		Long: `The registry is a bbolt file, which never shrinks: a training run's checkpoints, replaced
every few rounds and deleted when it ends, leave their pages free inside it. compact rewrites the
file with only what it holds and puts it in place (train does so itself when free space is most of
the file). It holds the registry's lock meanwhile: a trainer's next checkpoint waits for it.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			path := modelsDBPath(f.db)
			before, after, err := models.Compact(path, models.Options{Timeout: f.timeout}, nil)
			if err != nil {
				return err
			}
			if after.File >= before.File {
				// a file with nothing free is written again as it was
				fmt.Fprintf(c.OutOrStdout(), "%s had nothing to give back (%s)\n%s\n", path, units.FormatBytes(after.File), spaceLine(path, after))
				return nil
			}
			fmt.Fprintf(c.OutOrStdout(), "compacted %s from %s to %s\n%s\n", path, units.FormatBytes(before.File),
				units.FormatBytes(after.File), spaceLine(path, after))
			return nil
		},
	}
}
