package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/models"
)

func newModelsExportCmd(f *modelsFlags) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "export REF",
		Short: "Write a model version (metadata, weights, sha256) to --out FILE or stdout",
		Args:  oneArg("model REF", "to export (NAME or NAME:vN; models list shows them)"),
		RunE: func(c *cobra.Command, args []string) error {
			return f.with(true, true, false, func(r *models.Registry) error {
				if out != "" && out != "-" {
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
	return cmd
}
