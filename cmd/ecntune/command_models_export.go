package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/models"
)

func newModelsExportCmd(f *modelsFlags) *cobra.Command {
	var out string
	var force bool
	cmd := &cobra.Command{
		Use:   "export REF",
		Short: "Write a model version (metadata, weights, sha256) to --out FILE or stdout",
		Args:  oneArg("model REF", "to export (NAME, NAME@N or NAME@promoted; models list shows them)"),
		RunE: func(c *cobra.Command, args []string) error {
			return f.with(true, true, false, func(r *models.Registry) error {
				if out != "" && out != "-" {
					if err := checkExportOut(out, r.Path(), force); err != nil {
						return err
					}
					m, err := r.ExportFile(args[0], out)
					if err != nil {
						return err
					}
					fmt.Fprintf(c.ErrOrStderr(), "exported %s (%d bytes of weights, sha256 %s) to %s\n", m.Ref(), m.WeightsSize, m.WeightsSHA256, out)
					return nil
				}
				w := c.OutOrStdout()
				if isTerminal(w) {
					return fmt.Errorf("export %s: refusing to write a binary export to a terminal: pass --out FILE or redirect stdout", args[0])
				}
				_, err := r.Export(args[0], w)
				return err
			})
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "export file (default stdout); written atomically")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing --out file (never the registry itself)")
	return cmd
}

// checkExportOut refuses an export file that is the registry (it was
// replaced by the export: every model, checkpoint and history gone) and,
// without force, any existing file.
func checkExportOut(out, registry string, force bool) error {
	st, err := os.Stat(out)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	if rst, rerr := os.Stat(registry); rerr == nil && os.SameFile(st, rst) {
		return fmt.Errorf("--out %s is the registry itself (--db): the export would replace every model in it; give another file", out)
	}
	if !force {
		return fmt.Errorf("--out %s exists: give another file, or --force to replace it", out)
	}
	return nil
}
