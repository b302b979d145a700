package main

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
)

func newModelsShowCmd(f *modelsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show REF",
		Short: "Print a model version's metadata as JSON and check its weights",
		Args:  oneArg("model REF", "to show (NAME, NAME@N or NAME@promoted; models list shows them)"),
		RunE: func(c *cobra.Command, args []string) error {
			return f.with(true, true, false, func(r *models.Registry) error {
				m, err := r.Info(args[0])
				if err != nil {
					return err
				}
				b, err := json.MarshalIndent(m, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "%s\n", b)
				if line := twinLine(m); line != "" {
					fmt.Fprintln(c.ErrOrStderr(), line)
				}
				if err := policy.CheckModelSpec(m); err != nil {
					fmt.Fprintf(c.ErrOrStderr(), "note: %v\n", err)
				}
				// The metadata is shown even when the weights are damaged;
				// the exit status then says so.
				_, err = r.Resolve(strconv.FormatUint(m.ID, 10))
				return err
			})
		},
	}
}
